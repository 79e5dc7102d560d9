"""Training loops of three Python frameworks, for timing them natively and under gpumem check.

    python3 train_loops.py jax|torch|cupy [STEPS]

Each builds a small MLP on random data on the GPU, runs two warm-up steps (compilation,
handles, the allocators' first growth), then STEPS steps (default 200) with a fresh host batch
copied in each step, and prints `RESULT <framework>_train <seconds>` for those steps, with the
device synchronized before the clock is read, and `MEDIAN <framework>_train <seconds>`: the
median of the host's time between consecutive steps, times STEPS, which a pause of the
interpreter or the machine (a garbage collection, another process) moves far less than the
total. The steps are queued without a synchronization between them, so a step's host time is
what the framework and the CUDA calls under it cost on the host, the device being faster than
these small steps. The loss is printed too, so a run that computes something else is seen.
"""
import sys
import time


def jax_loop(steps):
    import jax
    import jax.numpy as jnp
    import numpy as np

    key = jax.random.PRNGKey(0)
    k1, k2 = jax.random.split(key)
    params = {"w1": jax.random.normal(k1, (256, 512)) * 0.05, "b1": jnp.zeros(512),
              "w2": jax.random.normal(k2, (512, 10)) * 0.05, "b2": jnp.zeros(10)}

    def loss_fn(p, x, y):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"] + p["b2"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - 0.01 * b, p, g), loss

    rng = np.random.default_rng(0)

    def batch():
        return (jnp.asarray(rng.standard_normal((128, 256), dtype=np.float32)),
                jnp.asarray(rng.integers(0, 10, 128)))

    for _ in range(2):
        params, loss = step(params, *batch())
    loss.block_until_ready()
    marks = [time.perf_counter()]
    for _ in range(steps):
        params, loss = step(params, *batch())
        marks.append(time.perf_counter())
    loss.block_until_ready()
    return time.perf_counter() - marks[0], marks, float(loss)


def torch_loop(steps):
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    def one():
        x = torch.randn(128, 256).pin_memory().to(dev, non_blocking=True)
        y = torch.randint(0, 10, (128,)).to(dev)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(2):
        one()
    torch.cuda.synchronize()
    marks = [time.perf_counter()]
    for _ in range(steps):
        loss = one()
        marks.append(time.perf_counter())
    torch.cuda.synchronize()
    return time.perf_counter() - marks[0], marks, loss.item()


def cupy_loop(steps):
    import cupy as cp
    import numpy as np

    rng = np.random.default_rng(0)
    w1 = cp.asarray(rng.standard_normal((256, 512), dtype=np.float32) * 0.05)
    w2 = cp.asarray(rng.standard_normal((512, 10), dtype=np.float32) * 0.05)

    def one():
        x = cp.asarray(rng.standard_normal((128, 256), dtype=np.float32))
        y = cp.asarray(rng.integers(0, 10, 128))
        h = cp.maximum(x @ w1, 0)
        logits = h @ w2
        logits -= logits.max(axis=1, keepdims=True)
        p = cp.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        loss = -cp.log(p[cp.arange(128), y]).mean()
        p[cp.arange(128), y] -= 1
        g2 = h.T @ (p / 128)
        gh = (p / 128) @ w2.T
        gh[h <= 0] = 0
        w2[...] -= 0.01 * g2
        w1[...] -= 0.01 * (x.T @ gh)
        return loss

    for _ in range(2):
        one()
    cp.cuda.Device().synchronize()
    marks = [time.perf_counter()]
    for _ in range(steps):
        loss = one()
        marks.append(time.perf_counter())
    cp.cuda.Device().synchronize()
    return time.perf_counter() - marks[0], marks, float(loss)


def main():
    loops = {"jax": jax_loop, "torch": torch_loop, "cupy": cupy_loop}
    if len(sys.argv) < 2 or sys.argv[1] not in loops:
        sys.exit("usage: train_loops.py jax|torch|cupy [STEPS]")
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    seconds, marks, loss = loops[sys.argv[1]](steps)
    step_times = sorted(b - a for a, b in zip(marks, marks[1:]))
    median = step_times[len(step_times) // 2]
    print(f"loss {loss:.4f}")
    print(f"RESULT {sys.argv[1]}_train {seconds:.4f}")
    print(f"MEDIAN {sys.argv[1]}_train {median * steps:.4f}")


if __name__ == "__main__":
    main()

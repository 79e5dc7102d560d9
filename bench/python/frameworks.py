"""The frameworks' own allocators against gpumem's pools, on a GPU.

    python3 bench/python/frameworks.py OUT.md            (bench/python/run.sh runs it)
    python3 bench/python/frameworks.py --one CONFIG      one configuration, in its own process

Configurations: PyTorch's caching allocator against gpumem.torch.use(), and CuPy's MemoryPool
against gpumem.cupy.use(). Each runs in a process of its own (an allocator is chosen once per
process), with 10 repetitions after a warm-up; the table gives min / median / max.

- alloc: one step of a training loop's allocations, replayed: STEP_SIZES (weights' gradients,
  activations, small bias and norm buffers, a large workspace) allocated in order, then
  released in reverse while the next step's first half is allocated, as a forward and
  backward pass do. 200 steps a repetition; the figure is microseconds per allocation and
  release pair (each through the framework: torch.empty / cupy.empty and del).
- train (PyTorch only): a 4-layer MLP (batch 2048, width 4096), SGD with momentum, 30 steps
  a repetition: steps per second, and the peak of reserved memory.
"""
import json
import os
import statistics
import subprocess
import sys
import time

REPS = 10
KIB, MIB = 1 << 10, 1 << 20
# One step's requests, in bytes: a mix of what a mid-sized model's step makes.
STEP_SIZES = ([4 * KIB, 16 * KIB, 2 * MIB, 8 * MIB, 512, 64 * KIB, 32 * MIB, 1 * KIB] * 6 +
              [128 * MIB, 3 * MIB + 4 * KIB, 257 * KIB, 12 * MIB])
STEPS = 200
CONFIGS = ["torch-native", "torch-gpumem", "cupy-native", "cupy-gpumem"]


def framework_of(config):
    return config.split("-")[0]


def setup(config):
    fw, mode = config.split("-")
    if fw == "torch":
        import torch
        if mode == "gpumem":
            import gpumem
            gpumem.torch.use()
        torch.zeros(1, device="cuda")
        def empty(n):
            return torch.empty(n, dtype=torch.uint8, device="cuda")
        return torch, empty, torch.cuda.synchronize
    import cupy
    if mode == "gpumem":
        import gpumem
        gpumem.cupy.use()
    def empty(n):
        return cupy.empty(n, dtype=cupy.uint8)
    return cupy, empty, cupy.cuda.Device().synchronize


def alloc_rep(empty, sync):
    half = len(STEP_SIZES) // 2
    live = []
    pairs = 0
    t = time.perf_counter()
    for _ in range(STEPS):
        for n in STEP_SIZES:
            live.append(empty(n))
        # backward: release in reverse, while the next step's first half arrives
        for i, n in enumerate(STEP_SIZES):
            live.pop()
            if i < half:
                live.insert(0, empty(n))
        pairs += len(STEP_SIZES) + half
        live.clear()
    sync()
    return (time.perf_counter() - t) / pairs * 1e6


def peak_reserved(config, fw):
    if config == "torch-native":
        return fw.cuda.max_memory_reserved()
    if config == "cupy-native":
        return fw.get_default_memory_pool().total_bytes()   # CuPy keeps no peak: now
    import gpumem
    return gpumem.pool_stats(0)["peak_reserved"]


def train_rep(torch, model, opt, x, y, steps=30):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    return steps / (time.perf_counter() - t)


def run_one(config):
    fw, empty, sync = setup(config)
    alloc_rep(empty, sync)   # warm-up: caches filled, code paths loaded
    out = {"alloc_us": [alloc_rep(empty, sync) for _ in range(REPS)],
           "alloc_peak_reserved": peak_reserved(config, fw)}
    if framework_of(config) == "torch":
        torch = fw
        torch.manual_seed(0)
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers).cuda()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        x = torch.randn(2048, 4096, device="cuda")
        y = torch.randn(2048, 4096, device="cuda")
        train_rep(torch, model, opt, x, y, steps=5)
        out["train_steps_s"] = [train_rep(torch, model, opt, x, y) for _ in range(REPS)]
        out["train_peak_reserved"] = peak_reserved(config, fw)
    print(json.dumps(out))


def spread(values, fmt):
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))


def machine():
    lines = []
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
        lines.append(f"GPU: {gpu}")
    except (OSError, subprocess.SubprocessError):
        pass
    for name in ("torch", "cupy"):
        r = subprocess.run([sys.executable, "-c", f"import {name}; print({name}.__version__)"],
                           capture_output=True, text=True)
        lines.append(f"{name}: {r.stdout.strip() or 'not installed'}")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    lines.append(f"gpumem commit: {commit.stdout.strip() or 'unknown'}")
    lines.append(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    return lines


def main():
    if sys.argv[1] == "--one":
        run_one(sys.argv[2])
        return 0
    out_path = sys.argv[1]
    results, notes = {}, []
    for config in CONFIGS:
        t = time.perf_counter()
        # 55 s at most each, so that the four stay under 4 minutes whatever happens.
        try:
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", config],
                               capture_output=True, text=True, timeout=55)
        except subprocess.TimeoutExpired:
            notes.append(f"- {config}: did not finish in 55 s")
            continue
        took = time.perf_counter() - t
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["no output"])[-1]
            notes.append(f"- {config}: did not run ({last})")
            print(f"{config}: failed in {took:.0f} s: {last}", file=sys.stderr)
            continue
        results[config] = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"{config}: {took:.0f} s", file=sys.stderr)
    rows = [("alloc: us per allocation and release pair", "alloc_us", "{:.2f}"),
            ("alloc: peak reserved, MiB", "alloc_peak_reserved", None),
            ("train: steps per second", "train_steps_s", "{:.1f}"),
            ("train: peak reserved, MiB", "train_peak_reserved", None)]
    table = ["| | " + " | ".join(CONFIGS) + " |", "| --- |" + " ---: |" * len(CONFIGS)]
    for label, key, fmt in rows:
        cells = []
        for config in CONFIGS:
            v = results.get(config, {}).get(key)
            if v is None:
                cells.append("-")
            elif fmt:
                cells.append(spread(v, fmt))
            else:
                cells.append(f"{v / MIB:.0f}")
        table.append(f"| {label} | " + " | ".join(cells) + " |")
    text = ["# PyTorch and CuPy: their allocators against gpumem's pools", ""] + \
        [f"- {line}" for line in machine()] + \
        ["", f"{REPS} repetitions each, min / median / max; each configuration in its own process.",
         f"alloc: {STEPS} steps of {len(STEP_SIZES)} requests ({sum(STEP_SIZES) / MIB:.0f} MiB a step) "
         "and the next step's first half during the release; train: 4-layer MLP, batch 2048, "
         "width 4096, 30 steps. CuPy's peak reserved is what its pool holds at the end (it "
         "keeps no peak).", ""] + table + ([""] + notes if notes else []) + [""]
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("\n".join(text))
    print("\n".join(table))
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())

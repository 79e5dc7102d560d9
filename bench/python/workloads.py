"""Workloads whose allocations the pools are judged by, one per process, on a GPU.

    python3 bench/python/workloads.py WORKLOAD ALLOCATOR

WORKLOAD:
  varlen   a transformer encoder layer (d_model 512, 8 heads) trained with Adam on batches of 8
           sequences of 16 to 1024 tokens (random, seed 1), 300 steps: NLP training's shape
  fixed    the same with every batch 512 tokens long
  serve    an inference server's loop: a 2-layer encoder in eval mode answering 400 requests
           of 1 to 16 sequences of 16 to 2048 tokens, with a cache of past results that grows
           and is pruned at random (long-lived tensors among short-lived ones)
  cupy     a CuPy program: FFTs, matrix products and reductions over arrays of random sizes
ALLOCATOR:
  torch-default, torch-expandable, torch-async      PyTorch's caching allocator, with
                                                    expandable_segments:True, or
                                                    backend:cudaMallocAsync (set before CUDA)
  torch-floor                                       PyTorch's pluggable-allocator interface
                                                    around the least an allocator can do
                                                    (floor_alloc.c, built here with cc and
                                                    CUDA): the fastest any allocator plugged
                                                    in as gpumem's is can be; memory not counted
  torch-history                                     the default one recording every
                                                    allocation's Python stack
                                                    (torch.cuda.memory._record_memory_history,
                                                    stacks="python"): what that costs
  gpumem-vmm, gpumem-segments, gpumem-classes       gpumem.torch.use() (gpumem.cupy.use())
                                                    with GPUMEM_POOL_DESIGN set so
  cupy-default                                      CuPy's MemoryPool

Prints one JSON line: steps a second (after 10 warm-up steps), peak reserved and peak
allocated bytes as the allocator counts them. GPUMEM_TRACE=FILE records a gpumem run's
allocations for `gpumem bench --replay`."""
import json
import os
import random
import sys
import time

WARMUP = 10


def torch_setup(allocator):
    if allocator == "torch-expandable":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    elif allocator == "torch-async":
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    elif allocator.startswith("gpumem-"):
        os.environ["GPUMEM_POOL_DESIGN"] = allocator.split("-", 1)[1]
    import torch
    if allocator == "torch-floor":
        torch.cuda.memory.change_current_allocator(torch.cuda.memory.CUDAPluggableAllocator(
            build_floor(), "floor_malloc", "floor_free"))
    if allocator.startswith("gpumem-"):
        import gpumem
        gpumem.torch.use()
    if allocator == "torch-history":
        torch.cuda.memory._record_memory_history(enabled="all", stacks="python",
                                                 max_entries=100000)
    return torch


def build_floor():
    import subprocess
    import tempfile
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    out = os.path.join(tempfile.mkdtemp(), "floor_alloc.so")
    subprocess.run(["cc", "-std=c11", "-O2", "-shared", "-fPIC", "-I" + cuda + "/include",
                    os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_alloc.c"),
                    "-o", out, "-L" + cuda + "/lib64", "-lcudart"], check=True)
    return out


def torch_memory(torch, allocator):
    if allocator == "torch-floor":
        return None, None
    if allocator.startswith("gpumem-"):
        import gpumem
        s = gpumem.torch.memory_stats()
        return s["reserved_bytes.all.peak"], s["allocated_bytes.all.peak"]
    return torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()


def train(torch, steps, lengths):
    layer = torch.nn.TransformerEncoderLayer(512, 8, batch_first=True).cuda()
    opt = torch.optim.Adam(layer.parameters(), lr=1e-4)
    start = None
    for step in range(steps):
        if step == WARMUP:
            torch.cuda.synchronize()
            start = time.perf_counter()
        x = torch.randn(8, lengths(step), 512, device="cuda")
        loss = layer(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
    torch.cuda.synchronize()
    return (steps - WARMUP) / (time.perf_counter() - start)


def serve(torch, requests=400):
    rng = random.Random(3)
    model = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(512, 8, batch_first=True), 2).cuda().eval()
    cache = []
    start = None
    with torch.no_grad():
        for i in range(requests):
            if i == WARMUP:
                torch.cuda.synchronize()
                start = time.perf_counter()
            x = torch.randn(rng.randint(1, 16), rng.randint(16, 2048), 512, device="cuda")
            y = model(x)
            cache.append(y[:, :1].clone())  # a summary kept for later requests
            if len(cache) > 64 or rng.random() < 0.2:
                del cache[rng.randrange(len(cache))]
            y.sum().item()
    torch.cuda.synchronize()
    return (requests - WARMUP) / (time.perf_counter() - start)


def run_torch(workload, allocator):
    torch = torch_setup(allocator)
    torch.manual_seed(1)
    rng = random.Random(1)
    if workload == "varlen":
        rate = train(torch, 300, lambda step: rng.randint(16, 1024))
    elif workload == "fixed":
        rate = train(torch, 300, lambda step: 512)
    else:
        rate = serve(torch)
    reserved, allocated = torch_memory(torch, allocator)
    return rate, reserved, allocated


def run_cupy(allocator, steps=300):
    if allocator.startswith("gpumem-"):
        os.environ["GPUMEM_POOL_DESIGN"] = allocator.split("-", 1)[1]
    import cupy
    if allocator.startswith("gpumem-"):
        import gpumem
        gpumem.cupy.use()
    rng = random.Random(2)
    start = None
    for step in range(steps):
        if step == WARMUP:
            cupy.cuda.Device().synchronize()
            start = time.perf_counter()
        n = rng.randint(256, 4096)
        a = cupy.random.random((n, 512), dtype=cupy.float32)
        f = cupy.fft.rfft(a, axis=0)
        g = (f * f.conj()).real
        m = a.T @ a
        s = float(g.sum() + m.trace())
        del a, f, g, m
        if s != s:
            raise SystemExit("NaN")
    cupy.cuda.Device().synchronize()
    rate = (steps - WARMUP) / (time.perf_counter() - start)
    if allocator.startswith("gpumem-"):
        import gpumem
        p = gpumem.pool_stats(0)
        return rate, p["peak_reserved"], p["peak_in_use"]
    pool = cupy.get_default_memory_pool()
    return rate, pool.total_bytes(), pool.used_bytes()


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    workload, allocator = sys.argv[1], sys.argv[2]
    if workload == "cupy":
        rate, reserved, allocated = run_cupy(allocator)
    else:
        rate, reserved, allocated = run_torch(workload, allocator)
    out = {"workload": workload, "allocator": allocator, "steps_per_s": round(rate, 1),
           "peak_reserved": reserved, "peak_allocated": allocated}
    if allocator.startswith("gpumem-"):
        # What the pool asked of CUDA over the whole run, warm-up included: pages moved, and
        # the time of the calls that got, mapped, unmapped and gave back its memory.
        import gpumem
        p = gpumem.pool_stats(0)
        out.update(pages_moved=p["remaps"], cuda_calls=p["cuda_calls"],
                   cuda_ms=round(p["cuda_ns"] / 1e6, 1))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

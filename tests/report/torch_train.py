#!/usr/bin/env python3
"""A small PyTorch training loop, and memory PyTorch's caching allocator does not see: a 64 MiB
buffer from the CUDA driver (cuMemAlloc) kept to the end and never released, a 128 MiB one
released halfway, and pinned host memory for the batches. Run it under
`gpumem check --trace=FILE` (tests/report/memviz_torch_gpu.sh, bench/views-h200.sh).

usage: torch_train.py [TORCH_SNAPSHOT]   (also writes PyTorch's own snapshot of the run there)
"""
import ctypes
import sys

import torch

RAW_KEPT = 64 << 20
RAW_STEP = 128 << 20


def main():
    own = sys.argv[1] if len(sys.argv) > 1 else None
    if own:
        torch.cuda.memory._record_memory_history(max_entries=100000)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(),
                                torch.nn.Linear(4096, 1024)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    cuda = ctypes.CDLL("libcuda.so.1")
    kept, scratch = ctypes.c_uint64(), ctypes.c_uint64()
    if cuda.cuMemAlloc_v2(ctypes.byref(kept), ctypes.c_size_t(RAW_KEPT)) != 0:
        sys.exit("torch_train: cuMemAlloc failed")
    for step in range(20):
        x = torch.randn(512, 1024).pin_memory().to(dev, non_blocking=True)
        if step == 5 and cuda.cuMemAlloc_v2(ctypes.byref(scratch), ctypes.c_size_t(RAW_STEP)) != 0:
            sys.exit("torch_train: cuMemAlloc failed")
        if step == 15:
            cuda.cuMemFree_v2(scratch)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    if own:
        torch.cuda.memory._dump_snapshot(own)
    print("torch_train: 20 steps, loss %.4f; %d MiB from cuMemAlloc kept to the end"
          % (loss.item(), RAW_KEPT >> 20))


if __name__ == "__main__":
    main()

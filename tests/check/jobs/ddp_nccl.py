# DistributedDataParallel on NCCL, one rank per GPU (torchrun --nproc_per_node=N): PyTorch's
# DDP wrapper all-reduces the gradients through NCCL, with NCCL's VMM (cuMem) buffers by
# default. With GPUMEM_TEST_LEAK_RANK=R, rank R also leaks 32 MiB: a cudaMalloc through ctypes
# whose pointer is dropped. gpumem check must report that leak in rank R's report and nothing
# else anywhere (no false error from NCCL's handles, probes or failed queries).
import ctypes
import glob
import os
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

local = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", local)
torch.manual_seed(rank)
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 10)).to(dev)
ddp = DistributedDataParallel(model, device_ids=[local])
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
for step in range(30):
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    opt.zero_grad()
    loss = loss_fn(ddp(x), y)
    loss.backward()
    opt.step()
torch.cuda.synchronize()


def cudart():
    """The CUDA runtime PyTorch itself loaded (its wheel's, or the system's)."""
    for line in open("/proc/self/maps"):
        path = line.split()[-1]
        if "libcudart.so" in os.path.basename(path):
            return ctypes.CDLL(path)
    for d in sys.path:
        for path in glob.glob(os.path.join(d, "nvidia", "**", "libcudart.so*"), recursive=True):
            return ctypes.CDLL(path)
    return ctypes.CDLL("libcudart.so")


if str(rank) == os.environ.get("GPUMEM_TEST_LEAK_RANK"):
    p = ctypes.c_void_p()
    rc = cudart().cudaMalloc(ctypes.byref(p), ctypes.c_size_t(32 << 20))
    assert rc == 0, f"cudaMalloc returned {rc}"
    p.value = None  # the only pointer to it is gone
    del p
dist.barrier()
dist.destroy_process_group()
print(f"ddp_nccl: rank {rank} of {world} done, loss {loss.item():.4f}")

# A data-parallel training job for torchrun (gloo, so two ranks can share one GPU): each rank
# trains the same small MLP on the GPU and averages its gradients with the other ranks through
# gloo (on host copies). Rank 1 also leaks 32 MiB: a cudaMalloc through ctypes whose pointer is
# dropped. gpumem check must report that leak in rank 1's report, and rank 0 must have none.
import ctypes
import glob
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
dev = torch.device("cuda", 0)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
for step in range(20):
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    for p in model.parameters():
        g = p.grad.cpu()
        dist.all_reduce(g)
        p.grad.copy_(g / world)
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


if rank == 1:
    rt = cudart()
    p = ctypes.c_void_p()
    rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(32 << 20))
    assert rc == 0, f"cudaMalloc returned {rc}"
    p.value = None  # the only pointer to it is gone
    del p
dist.barrier()
dist.destroy_process_group()
print(f"train_ddp: rank {rank} done, loss {loss.item():.4f}")

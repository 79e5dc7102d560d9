# The training loop of torch_train.py, plus a planted leak: 64 MiB from the CUDA runtime's
# cudaMalloc, called through ctypes, whose pointer is then overwritten and dropped. gpumem
# check must find that leak (the runner says with which options it was found).
import ctypes
import glob
import os
import sys

import torch

exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_train.py")).read()
     .split("torch.cuda.synchronize()")[0])
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


rt = cudart()
p = ctypes.c_void_p()
rc = rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(64 << 20))
assert rc == 0, f"cudaMalloc returned {rc}"
p.value = None  # the only pointer to it is gone
del p
print(f"{sys.argv[0].rsplit('/', 1)[-1][:-3]}: done")

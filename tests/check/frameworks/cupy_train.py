# A correct CuPy loop: least squares by gradient descent on the GPU, with pinned host memory
# from CuPy's pinned pool. gpumem check must report no error for it with no option given:
# what CuPy's memory pools hold at exit is still reachable (and suppressed by default).
import sys

import cupy as cp
import numpy as np

rng = np.random.default_rng(0)
a = cp.asarray(rng.standard_normal((4096, 64), dtype=np.float32))
truth = cp.asarray(rng.standard_normal(64, dtype=np.float32))
b = a @ truth
w = cp.zeros(64, dtype=cp.float32)
for step in range(200):
    grad = a.T @ (a @ w - b) / a.shape[0]
    w -= 0.5 * grad
host = cp.cuda.alloc_pinned_memory(w.nbytes)
out = np.frombuffer(host, dtype=np.float32, count=w.size)
w.get(out=out)
cp.cuda.Device().synchronize()
print(f"error {float(np.abs(out - cp.asnumpy(truth)).max()):.2e}")
print(f"{sys.argv[0].rsplit('/', 1)[-1][:-3]}: done")

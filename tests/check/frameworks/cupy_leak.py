# The loop of cupy_train.py, plus a planted leak: 64 MiB from cupy.cuda.runtime.malloc (the
# runtime's cudaMalloc, outside CuPy's pool) whose pointer is then dropped. gpumem check must
# find that leak (the runner says with which options it was found).
import os
import sys

import cupy as cp

exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cupy_train.py")).read()
     .split("print(")[0])
ptr = cp.cuda.runtime.malloc(64 << 20)
cp.cuda.runtime.memset(ptr, 0, 64 << 20)
ptr = 0  # the only reference is gone
print(f"{sys.argv[0].rsplit('/', 1)[-1][:-3]}: done")

"""What naming a block's Python line costs, without a GPU: CuPy-style pairs (the allocator
called with the GIL held, from a frame under site-packages, as CuPy's Cython code does) and
PyTorch-style pairs (allocated with the GIL released, released with it held) through
libgpumem_python on the simulated device, best of 5 runs of 20 000 pairs each.

    GPUMEM_BACKEND=sim python3 bench/python/site_cost.py build/python/libgpumem_python.so

Give it a second library (a build of python/hooks.c whose python_site() returns 0) to see the
cost of the pool alone beside it."""
import ctypes
import os
import sys
import tempfile
import time

PACKAGE = '''
import ctypes
lib = None
def setup(path):
    global lib
    lib = ctypes.PyDLL(path)   # holds the GIL during the call, as CuPy's call does
    lib.gpumem_cupy_malloc.restype = ctypes.c_void_p
    lib.gpumem_cupy_malloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.gpumem_cupy_free.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
def _inner(n):
    return lib.gpumem_cupy_malloc(None, n, 0)
def empty(n):
    return _inner(n)
def free(p):
    lib.gpumem_cupy_free(None, p, 0)
'''


def main(paths):
    site = os.path.join(tempfile.mkdtemp(), "site-packages")
    os.makedirs(os.path.join(site, "fakecupy"))
    with open(os.path.join(site, "fakecupy", "__init__.py"), "w") as f:
        f.write(PACKAGE)
    sys.path.insert(0, site)
    import fakecupy
    for path in paths:
        fakecupy.setup(path)

        def user(n):
            for _ in range(n):
                fakecupy.free(fakecupy.empty(4096))
        user(1000)
        best = min(timed(user) for _ in range(5))
        print(f"{path}: CuPy-style {best * 1e9:.0f} ns a pair")
        nogil, gil = ctypes.CDLL(path), ctypes.PyDLL(path)
        nogil.gpumem_torch_alloc.restype = ctypes.c_void_p
        nogil.gpumem_torch_alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        gil.gpumem_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                          ctypes.c_void_p]

        def torch_user(n):
            for _ in range(n):
                gil.gpumem_torch_free(nogil.gpumem_torch_alloc(4096, 0, None), 4096, 0, None)
        torch_user(1000)
        best = min(timed(torch_user) for _ in range(5))
        print(f"{path}: PyTorch-style {best * 1e9:.0f} ns a pair")


def timed(user, n=20000):
    t = time.perf_counter()
    user(n)
    return (time.perf_counter() - t) / n


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])

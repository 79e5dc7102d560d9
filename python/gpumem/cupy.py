"""CuPy on gpumem's device pools: gpumem.cupy.use().

cupy.cuda.set_allocator() gets a CFunctionAllocator over gpumem_cupy_malloc /
gpumem_cupy_free of libgpumem_python.so: CuPy calls them directly, with no Python in between.
"""
import ctypes

from . import _lib

_allocator = None


def allocator():
    """The cupy.cuda.memory.CFunctionAllocator over gpumem's hooks (made once)."""
    global _allocator
    if _allocator is None:
        import cupy
        lib = _lib.lib.load()._lib
        malloc = ctypes.cast(lib.gpumem_cupy_malloc, ctypes.c_void_p).value
        free = ctypes.cast(lib.gpumem_cupy_free, ctypes.c_void_p).value
        _allocator = cupy.cuda.memory.CFunctionAllocator(0, malloc, free, lib)
    return _allocator


def use():
    """Makes CuPy allocate device memory through gpumem's pools (cupy.cuda.set_allocator);
    arrays already made keep their memory. CuPy's pinned memory pool is not affected."""
    import cupy
    cupy.cuda.set_allocator(allocator().malloc)

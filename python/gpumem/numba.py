"""Numba on gpumem's device pools: an External Memory Management (EMM) plugin.

    numba.cuda.set_memory_manager(gpumem.numba.MemoryManager)
or  NUMBA_CUDA_MEMORY_MANAGER=gpumem.numba python3 app.py

Device memory comes from gpumem's pool of the context's device, recorded at the Python line
that asked for it; host (pinned, mapped) memory stays Numba's own.
"""
import contextlib
import ctypes
import sys
import weakref

from numba import cuda

from . import _lib, alloc, free


def _device_pointer(address):
    """The pointer type Numba's driver binding takes: CUdeviceptr of NVIDIA's cuda-python
    binding (numba-cuda's default), or a ctypes integer for Numba's own ctypes binding."""
    from numba.cuda.cudadrv import driver
    nvidia = getattr(driver, "USE_NV_BINDING", None)
    if nvidia is None:
        nvidia = hasattr(driver, "binding")
    if not nvidia:
        return ctypes.c_uint64(address)
    binding = getattr(driver, "binding", None)
    if binding is None or not hasattr(binding, "CUdeviceptr"):
        try:
            from cuda.bindings import driver as binding
        except ImportError:
            from cuda import cuda as binding
    return binding.CUdeviceptr(address)


def _releaser(address):
    def release():
        try:
            free(address)
        except _lib.Error as e:
            # A finalizer has no caller to raise to: the error (a double free, say) is said here.
            print(e, file=sys.stderr)
        except Exception:  # pylint: disable=broad-except
            pass  # at interpreter exit, modules may be gone
    return release


class MemoryManager(cuda.HostOnlyCUDAMemoryManager):
    """Numba's device allocations from gpumem's device pools."""

    @property
    def interface_version(self):
        return 1

    def initialize(self):
        # The device's pool is made at the first allocation; loading the library here makes
        # a missing library an error at startup, not at the first array.
        _lib.lib.load()

    def memalloc(self, size):
        device = self.context.device.id
        address = alloc(size, device) if size else 0
        finalizer = _releaser(address) if address else None
        # A proxy, as Numba's own manager passes: the pointer must not keep its context alive.
        return cuda.MemoryPointer(weakref.proxy(self.context), _device_pointer(address), size,
                                  finalizer=finalizer)

    def get_memory_info(self):
        device = self.context.device.id
        cp = _lib.lib.gpumem_checkpoint_device(device)
        if cp.device < 0:
            raise _lib.Error(f"gpumem: error: the free and total memory of device {device} "
                             "cannot be read (cudaMemGetInfo failed, or there is no such "
                             "device)", -8, "GPUMEM_ECUDA")
        return cuda.MemoryInfo(free=cp.device_free, total=cp.device_total)

    def get_ipc_handle(self, memory):
        raise _lib.Error(
            "gpumem: error: an IPC handle of gpumem pool memory is not supported: pool blocks "
            "come from a CUDA memory pool, which cudaIpcGetMemHandle does not export\n"
            "  hint: share this array through Numba's own memory manager (no EMM plugin)",
            -10, "GPUMEM_EKIND")

    def reset(self):
        # Blocks still held by arrays go back to the pool when their arrays are collected.
        super().reset()

    @contextlib.contextmanager
    def defer_cleanup(self):
        # gpumem returns device blocks to its pool at once (stream-ordered); only Numba's
        # host allocations have releases to defer.
        with super().defer_cleanup():
            yield


_numba_memory_manager = MemoryManager

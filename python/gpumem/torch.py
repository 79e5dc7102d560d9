"""PyTorch on gpumem's device pools: gpumem.torch.use() before the first CUDA tensor.

PyTorch calls gpumem_torch_alloc / gpumem_torch_free of libgpumem_python.so through its
CUDAPluggableAllocator, so every CUDA tensor's memory is a gpumem pool block.
"""
from . import _lib, pool_stats, stats

ALLOC_NAME = "gpumem_torch_alloc"
FREE_NAME = "gpumem_torch_free"
TOO_LATE = ("gpumem: error: gpumem.torch.use() comes too late: PyTorch has already set up its "
            "CUDA allocator (a CUDA tensor was made, or CUDA was initialized, before it), and "
            "the allocator cannot be changed after that\n"
            "  hint: call gpumem.torch.use() right after `import torch`, before the first CUDA "
            "tensor or torch.cuda call that initializes CUDA")

_installed = None


def use():
    """Makes PyTorch allocate CUDA memory through gpumem's device pools, for the rest of the
    process. Raises gpumem.Error when PyTorch's CUDA allocator is already set up. Calling it
    again does nothing."""
    global _installed
    if _installed is not None:
        return _installed
    import torch
    path = _lib.lib.load().path
    if torch.cuda.is_initialized():
        raise _lib.Error(TOO_LATE, -11, "GPUMEM_EBUSY")
    allocator = torch.cuda.memory.CUDAPluggableAllocator(path, ALLOC_NAME, FREE_NAME)
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:
        if "initialized" in str(e):
            raise _lib.Error(TOO_LATE, -11, "GPUMEM_EBUSY") from e
        raise
    _installed = allocator
    return allocator


def memory_stats(device=None):
    """torch.cuda.memory_stats()'s keys that have a meaning for gpumem's pool of the device
    (the pool every framework using gpumem shares on it); docs/python.md says what each
    holds. Block bytes are the pool's size classes; requested bytes are what was asked for.
    device as torch.cuda.memory_stats takes it: None or "cuda" (the current device), an int,
    "cuda:N", a torch.device."""
    device = _lib.device_arg(device)
    p = pool_stats(device)
    d = stats()["devices"].get(device, {"bytes": {"current": 0, "peak": 0, "total": 0}})
    made = p["hits"] + p["misses"]
    requested = d["bytes"]
    return {
        "allocated_bytes.all.current": p["in_use"],
        "allocated_bytes.all.peak": p["peak_in_use"],
        "active_bytes.all.current": p["in_use"],
        "active_bytes.all.peak": p["peak_in_use"],
        "requested_bytes.all.current": p["requested"],
        "requested_bytes.all.peak": requested["peak"],
        "requested_bytes.all.allocated": requested["total"],
        "requested_bytes.all.freed": requested["total"] - requested["current"],
        "reserved_bytes.all.current": p["reserved"],
        "reserved_bytes.all.peak": p["peak_reserved"],
        "inactive_split_bytes.all.current": p["cached"],
        "allocation.all.current": p["blocks_in_use"],
        "allocation.all.allocated": made,
        "allocation.all.freed": made - p["blocks_in_use"],
        "active.all.current": p["blocks_in_use"],
        "inactive_split.all.current": p["blocks_cached"],
        "num_alloc_retries": p["oom_retries"],
        "num_ooms": _lib.lib.gpumem_python_oom_count(device),
        "num_device_alloc": p["misses"],
    }

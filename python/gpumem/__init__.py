"""gpumem for Python: PyTorch, CuPy and Numba allocate from gpumem's device pools.

    import gpumem
    gpumem.torch.use()        # before the first CUDA tensor
    gpumem.cupy.use()
    numba.cuda.set_memory_manager(gpumem.numba.MemoryManager)

Every block is a gpumem allocation: gpumem.stats(), gpumem.report(), the leak report at exit
and GPUMEM_TRACE all see it. Pure Python over ctypes; it needs
libgpumem_python.so (installed beside libgpumem.so). docs/python.md.
"""
import ctypes

from . import _lib
from ._lib import Error, PoolStats, Stats, lib
from ._lib import last_error as _last_error

__all__ = ["Error", "alloc", "free", "last_error", "library_path", "pool_stats", "report",
           "stats", "version", "cupy", "numba", "torch"]

REPORT_SUMMARY, REPORT_FULL, REPORT_JSON = 0x0, 0x1, 0x2


def last_error():
    """The calling thread's last gpumem failure as an Error (not raised): after PyTorch's or
    CuPy's out-of-memory error, gpumem's own words for it. code is 0 when the last gpumem call
    on this thread succeeded."""
    return _last_error()


def library_path():
    """The path of the loaded libgpumem_python.so (what PyTorch is given)."""
    return lib.load().path


def version():
    """gpumem's version, "MAJOR.MINOR.PATCH"."""
    return lib.gpumem_version().decode()


def _counter(c):
    return {"current": c.current, "peak": c.peak, "total": c.total}


def _count(c):
    return {"current": c.current, "total": c.total}


def stats():
    """gpumem_stats() as a dict: "bytes" and "count" by kind ("all", "device", "pinned", ...;
    bytes: current, peak, total; count: current, total), and "devices" by ordinal for the
    devices used, with the same two."""
    s = Stats()
    lib.gpumem_stats(ctypes.byref(s))
    kinds = ["all"] + [lib.gpumem_kind_name(k).decode() for k in range(1, len(s.bytes))]
    out = {"bytes": {k: _counter(s.bytes[i]) for i, k in enumerate(kinds)},
           "count": {k: _count(s.count[i]) for i, k in enumerate(kinds)},
           "devices": {}}
    for d in range(len(s.device_bytes)):
        if s.device_count[d].total:
            out["devices"][d] = {"bytes": _counter(s.device_bytes[d]),
                                 "count": _count(s.device_count[d])}
    return out


def pool_stats(device=0):
    """gpumem_pool_stats() of the device's pool the frameworks share, as a dict (all zero
    before the first allocation on that device). device as PyTorch takes one: an int,
    "cuda:N", "cuda" or None (the current device), a torch.device."""
    s = PoolStats()
    lib.gpumem_python_pool_stats(_lib.device_arg(device), ctypes.byref(s))
    return {name: (list(v) if isinstance(v, ctypes.Array) else v)
            for name, v in ((name, getattr(s, name)) for name, _ in PoolStats._fields_)}


def report(full=True, json=False, file=None):
    """The report of what is live now, as at exit (gpumem_report): grouped by call site when
    full, JSON when json. Returns the text ("" when nothing is live) and writes it to file
    when one is given (e.g. sys.stderr)."""
    flags = (REPORT_FULL if full else REPORT_SUMMARY) | (REPORT_JSON if json else 0)
    raw = lib.gpumem_python_report(flags)
    if not raw:
        raise Error("gpumem: error: out of memory: no memory for the report's text",
                    -1, "GPUMEM_ENOMEM")
    try:
        text = ctypes.string_at(raw).decode("utf-8", "replace")
    finally:
        lib.gpumem_python_string_free(raw)
    if file is not None:
        file.write(text)
        file.flush()
    return text


def alloc(nbytes, device=0, stream=0):
    """A block of nbytes of device memory from the device's pool, in order on stream (a
    CUDA stream handle as an int, 0 for the legacy default stream, or a torch.cuda.Stream or
    cupy.cuda.Stream). device as PyTorch takes one (0, "cuda:1", a torch.device). Returns its
    address (an int; 0 for 0 bytes); raises Error with gpumem's message on failure, ValueError
    or TypeError for an argument out of range or of the wrong type. Recorded at the calling
    Python line. Release it with free()."""
    nbytes = _lib.size_arg("nbytes", nbytes)
    device = _lib.device_arg(device)
    stream = _lib.stream_arg(stream)
    why = _lib.Failure()
    ptr = lib.held.gpumem_python_try_alloc(nbytes, device, stream or None, ctypes.byref(why))
    if not ptr and why.code:
        raise _lib.failure_error(why)
    return ptr or 0


def free(ptr, stream=0):
    """Releases a block from alloc() (or from a framework's hook) to stream's cache; raises
    Error on a double free, a foreign or interior address; free(0) does nothing."""
    ptr = _lib.address_arg("ptr", ptr)
    stream = _lib.stream_arg(stream)
    why = _lib.Failure()
    if lib.held.gpumem_python_try_free(ptr or None, stream or None, ctypes.byref(why)) != 0:
        raise _lib.failure_error(why)


def __getattr__(name):
    """gpumem.torch, gpumem.cupy and gpumem.numba are imported when first named, so that
    `import gpumem` imports no framework."""
    if name in ("cupy", "numba", "torch"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'gpumem' has no attribute '{name}'")

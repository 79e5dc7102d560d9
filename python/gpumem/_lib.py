"""Finds and loads libgpumem_python.so, the hooks library (which loads libgpumem.so).

Where, in order: GPUMEM_LIBRARY (the path of libgpumem_python.so, or of libgpumem.so with
libgpumem_python.so beside it); where scripts/install put it relative to this package
(_location.py, written at install); the dynamic loader's search path (LD_LIBRARY_PATH,
the ld.so cache).
"""
import ctypes
import os

LIBRARY_NAME = "libgpumem_python.so"
KIND_COUNT = 12      # GPUMEM_KIND_COUNT_
STATS_DEVICES = 64   # GPUMEM_STATS_DEVICES


class Error(Exception):
    """A gpumem failure. str() is gpumem's own message ("gpumem: error: ..."); code is the
    gpumem status (negative, e.g. -1 for GPUMEM_ENOMEM) and name its name."""

    __module__ = "gpumem"

    def __init__(self, message, code=0, name=""):
        super().__init__(message)
        self.code = code
        self.name = name


class _Counter(ctypes.Structure):
    _fields_ = [("current", ctypes.c_uint64), ("peak", ctypes.c_uint64),
                ("total", ctypes.c_uint64)]


class _Count(ctypes.Structure):
    _fields_ = [("current", ctypes.c_uint64), ("total", ctypes.c_uint64)]


class Stats(ctypes.Structure):
    """gpumem_stats_t."""
    _fields_ = [("bytes", _Counter * KIND_COUNT), ("count", _Count * KIND_COUNT),
                ("device_bytes", _Counter * STATS_DEVICES),
                ("device_count", _Count * STATS_DEVICES)]


POOL_SIZE_RANGES = 5  # GPUMEM_POOL_SIZE_RANGES


class PoolStats(ctypes.Structure):
    """gpumem_pool_stats_t."""
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "reserved", "in_use", "requested", "cached", "peak_reserved", "peak_in_use",
        "blocks_in_use", "blocks_cached", "hits", "misses", "oom_retries")] + [
        ("fragmentation", ctypes.c_double), ("peak_requested", ctypes.c_uint64),
        ("largest_free", ctypes.c_uint64), ("cached_by_size", ctypes.c_uint64 * POOL_SIZE_RANGES),
        ("free_fragmentation", ctypes.c_double), ("remaps", ctypes.c_uint64)]


class Checkpoint(ctypes.Structure):
    """gpumem_checkpoint_t."""
    _fields_ = [("seq", ctypes.c_uint64), ("device_bytes", ctypes.c_uint64),
                ("device_free", ctypes.c_size_t), ("device_total", ctypes.c_size_t),
                ("device", ctypes.c_int)]


def _candidates():
    env = os.environ.get("GPUMEM_LIBRARY")
    if env:
        if not os.path.basename(env).startswith("libgpumem_python"):
            env = os.path.join(os.path.dirname(env), LIBRARY_NAME)
        return [(env, "GPUMEM_LIBRARY")]
    found = []
    try:
        from . import _location
        here = os.path.dirname(os.path.abspath(__file__))
        found.append((os.path.normpath(os.path.join(here, _location.LIBRARY_DIR, LIBRARY_NAME)),
                      "the installed location"))
    except ImportError:
        pass
    found.append((LIBRARY_NAME, "the loader's search path"))
    return found


def _loaded_path(name):
    """The file the loader chose for NAME, from the process's mappings."""
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
        for line in maps:
            path = line.split(None, 5)[-1].strip()
            if os.path.basename(path).startswith(name):
                return path
    return name


def _declare(lib):
    c = ctypes
    sig = {
        "gpumem_python_alloc": (c.c_void_p, [c.c_size_t, c.c_int, c.c_void_p]),
        "gpumem_python_free": (c.c_int, [c.c_void_p, c.c_void_p]),
        "gpumem_python_error_code": (c.c_int, []),
        "gpumem_python_error_message": (c.c_char_p, []),
        "gpumem_python_pool_stats": (c.c_int, [c.c_int, c.POINTER(PoolStats)]),
        "gpumem_python_oom_count": (c.c_ulonglong, [c.c_int]),
        "gpumem_python_report": (c.c_void_p, [c.c_uint]),
        "gpumem_python_string_free": (None, [c.c_void_p]),
        "gpumem_python_skip_dir": (None, [c.c_char_p]),
        "gpumem_stats": (c.c_int, [c.POINTER(Stats)]),
        "gpumem_checkpoint_device": (Checkpoint, [c.c_int]),
        "gpumem_kind_name": (c.c_char_p, [c.c_int]),
        "gpumem_err_name": (c.c_char_p, [c.c_int]),
        "gpumem_strerror": (c.c_char_p, [c.c_int]),
        "gpumem_version": (c.c_char_p, []),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes


class _Library:
    def __init__(self):
        self._lib = None
        self._py = None
        self.path = None

    def load(self):
        if self._lib is not None:
            return self
        tried = []
        for path, where in _candidates():
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({where}): {e}")
                continue
            self.path = _loaded_path(LIBRARY_NAME) if path == LIBRARY_NAME else os.path.abspath(path)
            # The allocation hooks run with the GIL held (ctypes.PyDLL), so that the library
            # can record the calling Python line; the rest runs as plain ctypes calls.
            self._py = ctypes.PyDLL(self.path)
            _declare(lib)
            _declare(self._py)
            self._lib = lib
            package_dir = os.path.dirname(os.path.abspath(__file__)) + os.sep
            lib.gpumem_python_skip_dir(package_dir.encode())
            return self
        raise Error("gpumem: error: cannot load " + LIBRARY_NAME + "; tried:\n    " +
                    "\n    ".join(tried) +
                    "\n  hint: set GPUMEM_LIBRARY to the path of " + LIBRARY_NAME +
                    " (installed beside libgpumem.so by scripts/install)")

    def __getattr__(self, name):
        return getattr(self.load()._lib, name)

    @property
    def held(self):
        """The library's functions called with the GIL held."""
        return self.load()._py


lib = _Library()


def last_error():
    """An Error with the calling thread's last gpumem failure."""
    code = lib.gpumem_python_error_code()
    message = lib.gpumem_python_error_message().decode("utf-8", "replace")
    return Error(message, code, lib.gpumem_err_name(code).decode())

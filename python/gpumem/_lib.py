"""Finds and loads libgpumem_python.so, the hooks library (which loads libgpumem.so).

Where, in order: GPUMEM_LIBRARY (the path of libgpumem_python.so, or of libgpumem.so with
libgpumem_python.so beside it); where scripts/install put it relative to this package
(_location.py, written at install); the dynamic loader's search path (LD_LIBRARY_PATH,
the ld.so cache).
"""
import ctypes
import operator
import os
import re
import sys

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
        ("free_fragmentation", ctypes.c_double), ("remaps", ctypes.c_uint64),
        ("cuda_calls", ctypes.c_uint64), ("cuda_ns", ctypes.c_uint64)]


class Checkpoint(ctypes.Structure):
    """gpumem_checkpoint_t."""
    _fields_ = [("seq", ctypes.c_uint64), ("device_bytes", ctypes.c_uint64),
                ("device_free", ctypes.c_size_t), ("device_total", ctypes.c_size_t),
                ("device", ctypes.c_int)]


class Failure(ctypes.Structure):
    """gpumem_python_failure: the status and message of the failing call itself."""
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 1024)]


# ---- arguments: checked here, before ctypes, which would wrap an integer that does not fit ----

SIZE_BITS = 8 * ctypes.sizeof(ctypes.c_size_t)
SIZE_MAX = (1 << SIZE_BITS) - 1
ADDRESS_MAX = (1 << (8 * ctypes.sizeof(ctypes.c_void_p))) - 1
INT_MAX = (1 << (8 * ctypes.sizeof(ctypes.c_int) - 1)) - 1
_CUDA_DEVICE = re.compile(r"cuda(?::(0|[1-9][0-9]*))?")


def _integer(name, value):
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def size_arg(name, value):
    """value as a size_t: an integer from 0 to SIZE_MAX."""
    n = _integer(name, value)
    if n < 0:
        raise ValueError(f"{name} must not be negative, not {n}")
    if n > SIZE_MAX:
        raise ValueError(f"{name} must be at most {SIZE_MAX} (2**{SIZE_BITS} - 1), not {n}")
    return n


def address_arg(name, value):
    """value as an address (None is 0): an integer from 0 to the largest address."""
    a = 0 if value is None else _integer(name, value)
    if a < 0:
        raise ValueError(f"{name} must not be negative, not {a}")
    if a > ADDRESS_MAX:
        raise ValueError(f"{name} must be an address from 0 to {ADDRESS_MAX:#x}, not {a:#x}")
    return a


def stream_arg(value):
    """A CUDA stream handle as an int: an int (0: the legacy default stream), None, or a
    stream object of PyTorch (.cuda_stream) or CuPy (.ptr)."""
    for attribute in ("cuda_stream", "ptr"):
        if not isinstance(value, int) and hasattr(value, attribute):
            value = getattr(value, attribute)
            break
    return address_arg("stream", value)


def current_device():
    """PyTorch's current device when PyTorch has set up CUDA, else 0."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def device_arg(value):
    """A CUDA device ordinal, from what PyTorch takes for one: None or "cuda" (the current
    device), an int, "cuda:N", or a torch.device of type cuda."""
    if value is None:
        return current_device()
    if isinstance(value, str):
        match = _CUDA_DEVICE.fullmatch(value)
        if not match:
            raise ValueError(f"device must be a CUDA device such as 'cuda:0' or 0, not "
                             f"{value!r}")
        value = match.group(1)
        return current_device() if value is None else device_arg(int(value))
    if hasattr(value, "type") and hasattr(value, "index") and not isinstance(value, int):
        if value.type != "cuda":
            raise ValueError(f"device must be a CUDA device, not {value!r}")
        return current_device() if value.index is None else device_arg(value.index)
    d = _integer("device", value)
    if not 0 <= d <= INT_MAX:
        raise ValueError(f"device must be a device ordinal from 0 to {INT_MAX}, not {d}")
    return d


# ---- gpumem's messages, in the words of Python's API ----

_PYTHON_WORDS = (
    ("gpumem_free_async of ", "gpumem.free() of "),
    ("gpumem_free of ", "gpumem.free() of "),
    ("gpumem_pool_create at ", "gpumem.alloc() at "),
    ("the pointer was not reset after the first release; set it to NULL there, or give the "
     "memory a single owner", "the address was kept after the first release; set what held it "
     "to None there, or give the memory a single owner"),
    ("gpumem_pool_create of a device pool", "gpumem.alloc(): making the device pool"),
    ("release only pointers gpumem_pool_alloc returned", "release only addresses gpumem.alloc() "
     "returned"),
    ("pass the pointer the allocation returned", "pass the address gpumem.alloc() returned"),
    ("release it with gpumem_free", "release it with gpumem.free()"),
    ("hint: release blocks still live, or raise the limit",
     "hint: drop tensors and arrays still referenced (gpumem.report() lists what is live by "
     "Python line), or ask for less"),
)


def python_words(message):
    """gpumem's message with the C API's names and idioms said as Python's API says them."""
    for c, python in _PYTHON_WORDS:
        message = message.replace(c, python)
    return message


def error_name(code):
    return lib.gpumem_err_name(code).decode()


def failure_error(failure):
    """The Error a failed call's own Failure describes."""
    message = failure.message.decode("utf-8", "replace")
    return Error(python_words(message), failure.code, error_name(failure.code))


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
        "gpumem_python_try_alloc": (c.c_void_p, [c.c_size_t, c.c_int, c.c_void_p,
                                                 c.POINTER(Failure)]),
        "gpumem_python_try_free": (c.c_int, [c.c_void_p, c.c_void_p, c.POINTER(Failure)]),
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
    return Error(python_words(message), code, error_name(code))

/**
 * @file gpumem_python.h
 * @brief Allocation hooks that let PyTorch, CuPy and Numba allocate from gpumem's device pools.
 *
 * The functions of libgpumem_python.so, a small library beside libgpumem.so that uses only
 * gpumem's public API. The Python package `gpumem` (python/gpumem/) hands these to each
 * framework: PyTorch's CUDAPluggableAllocator (by library path and function name), CuPy's
 * CFunctionAllocator (by address) and Numba's external memory manager (through ctypes).
 *
 * Every block comes from one gpumem device pool per device, made at the first request for
 * that device and kept until the process ends, so every block is a gpumem allocation: in
 * gpumem_stats(), the leak report at exit and the trace. A block is
 * stream-ordered memory on the stream it was requested on (docs/pools.md's rules): released
 * on a stream, it is reused at once by that stream's next request and reaches another stream
 * only through CUDA's pool, once the releasing stream's work is done.
 *
 * Call sites: when the calling thread holds Python's GIL (CuPy, Numba, direct calls from
 * Python), a block is recorded at the innermost Python frame outside installed packages and
 * outside the gpumem package; otherwise (PyTorch calls its allocator with the GIL released)
 * at the hook itself, and GPUMEM_BACKTRACE=1 gives the native stack. docs/python.md.
 *
 * Errors: a failed allocation returns NULL with the calling thread's record set as by
 * gpumem_pool_alloc(); gpumem_python_error_message() gives its words. Thread-safe.
 */
#ifndef GPUMEM_PYTHON_H
#define GPUMEM_PYTHON_H

#include <stddef.h>
#include <sys/types.h>

#include "gpumem.h"

#ifdef __cplusplus
extern "C" {
#endif

/** PyTorch (CUDAPluggableAllocator): @p size bytes on device @p device for @p stream. NULL on
 *  failure (PyTorch then raises its out-of-memory error) or for @p size 0. */
GPUMEM_API void *gpumem_torch_alloc(ssize_t size, int device, cudaStream_t stream);
/** PyTorch: releases @p ptr to @p stream's cache (the stream PyTorch allocated it on). */
GPUMEM_API void gpumem_torch_free(void *ptr, ssize_t size, int device, cudaStream_t stream);

/** CuPy (CFunctionAllocator): @p size bytes on device @p device, in order on the legacy
 *  default stream (CuPy's default stream); @p param is unused. NULL on failure. */
GPUMEM_API void *gpumem_cupy_malloc(void *param, size_t size, int device);
/** CuPy: releases @p ptr to the cache of the stream it was allocated on. */
GPUMEM_API void gpumem_cupy_free(void *param, void *ptr, int device);

/** Numba and direct calls through ctypes: as gpumem_torch_alloc(), for @p bytes. */
GPUMEM_API void *gpumem_python_alloc(size_t bytes, int device, cudaStream_t stream);
/** Releases @p ptr to @p stream's cache. Returns gpumem_free_async()'s status. */
GPUMEM_API int gpumem_python_free(void *ptr, cudaStream_t stream);

/** A failure as the Python package raises it: the status and the message of the failing
 *  call itself. */
typedef struct gpumem_python_failure {
    int code;          /**< gpumem status; GPUMEM_OK when the call succeeded */
    char message[1024]; /**< gpumem_last_error()->message right after the call; "" on success */
} gpumem_python_failure;

/** The Python package's gpumem.alloc(): as gpumem_python_alloc(), and on failure (NULL with a
 *  status other than GPUMEM_OK; 0 bytes give NULL and GPUMEM_OK) @p why holds the call's own
 *  status and message, taken before anything else runs, and the error handler does not print
 *  it (the package raises it; with GPUMEM_ABORT_ON_ERROR on, the handler still gets it). */
GPUMEM_API void *gpumem_python_try_alloc(size_t bytes, int device, cudaStream_t stream,
                                         gpumem_python_failure *why);
/** The Python package's gpumem.free(): as gpumem_python_free(), with @p why as above. */
GPUMEM_API int gpumem_python_try_free(void *ptr, cudaStream_t stream, gpumem_python_failure *why);

/** The status of the calling thread's last failure (gpumem_last_error()->code). */
GPUMEM_API int gpumem_python_error_code(void);
/** Its message, "gpumem: error: ..." (gpumem_last_error()->message); never NULL. */
GPUMEM_API const char *gpumem_python_error_message(void);

/** Fills @p out with the statistics of device @p device's pool. GPUMEM_OK; GPUMEM_EINVAL for
 *  a NULL @p out or a device the hooks made no pool for (then @p out is zeroed). */
GPUMEM_API int gpumem_python_pool_stats(int device, gpumem_pool_stats_t *out);
/** Requests on @p device that failed with GPUMEM_ENOMEM. */
GPUMEM_API unsigned long long gpumem_python_oom_count(int device);

/** gpumem_report() into a string the caller frees with gpumem_python_string_free(); NULL
 *  when memory for it cannot be had. */
GPUMEM_API char *gpumem_python_report(unsigned flags);
GPUMEM_API void gpumem_python_string_free(char *s);

/** Frames of files under @p dir (the gpumem package's folder) are skipped when a call site is
 *  taken from Python's stack. Copied; NULL forgets it. Called once, as the package loads the
 *  library: not while other threads allocate. */
GPUMEM_API void gpumem_python_skip_dir(const char *dir);

#ifdef __cplusplus
}
#endif
#endif /* GPUMEM_PYTHON_H */

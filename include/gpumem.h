/**
 * @file gpumem.h
 * @brief gpumem: safe, observable GPU memory allocation and release for CUDA programs.
 *
 * One API for the five CUDA allocation interfaces, one gpumem_free() that always picks the
 * right release call, and errors reported where they happen, with the call site of the
 * failing call and of the allocation involved.
 *
 * Usable from C (C11) and from C++/CUDA (.cu) files. Every allocation is calloc-shaped
 * (count, size: the product is overflow-checked), returns the pointer like malloc, and
 * records the caller's file, line and function: the lower-case names below are macros over
 * the exported `_at` functions.
 *
 * Threads: every function is thread-safe. The registry of live allocations is global; the
 * error record (gpumem_last_error()) is per thread; the current CUDA device is the caller's.
 *
 * Which CUDA: gpumem calls the CUDA driver API (libcuda.so.1, loaded at run time) in the
 * context current on the calling thread, so it shares the primary context, streams and
 * pointers with the caller's CUDA runtime (static or shared) and never touches that
 * runtime's error state. docs/api.md explains why.
 */
#ifndef GPUMEM_H
#define GPUMEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @name Version */
/**@{*/
#define GPUMEM_VERSION_MAJOR 0
#define GPUMEM_VERSION_MINOR 1
#define GPUMEM_VERSION_PATCH 0
/**@}*/

#if defined(__GNUC__)
#define GPUMEM_API __attribute__((visibility("default")))
#else
#define GPUMEM_API
#endif

/** The library's version as "MAJOR.MINOR.PATCH"; the value the library was built with. */
GPUMEM_API const char *gpumem_version(void);

/* ------------------------------------------------------------------------------------------ */
/** @name Status codes
 * Every status is 0 (GPUMEM_OK) or negative. They come from one X-macro table, which also
 * generates gpumem_strerror() and gpumem_err_name(), so names, messages and docs agree. */
/**@{*/
#define GPUMEM_STATUS_MAP(X)                                                                     \
    X(OK, 0, "success")                                                                          \
    X(ENOMEM, -1, "out of memory")                                                               \
    X(EOVERFLOW, -2, "size overflows: count * size does not fit in size_t")                      \
    X(EINVAL, -3, "invalid argument")                                                            \
    X(ENODEV, -4, "no usable CUDA device")                                                       \
    X(EFOREIGN, -5, "pointer was not allocated by gpumem")                                       \
    X(EDOUBLEFREE, -6, "double free")                                                            \
    X(EINTERIOR, -7, "pointer is inside an allocation, not at its start")                        \
    X(ECUDA, -8, "CUDA call failed")                                                             \
    X(ESTICKY, -9, "CUDA context is unusable (sticky error); the process must restart")          \
    X(EKIND, -10, "operation does not apply to this kind of memory")                             \
    X(EBUSY, -11, "resource still in use")

/** gpumem status codes: GPUMEM_OK, GPUMEM_ENOMEM, ... */
enum gpumem_status {
#define GPUMEM__STATUS_ENUM(name, value, text) GPUMEM_##name = (value),
    GPUMEM_STATUS_MAP(GPUMEM__STATUS_ENUM)
#undef GPUMEM__STATUS_ENUM
};

/** Message for a gpumem status, or for a cudaError_t value when @p code is positive.
 *  Never NULL; unknown codes give "unknown status". Thread-safe, no allocation. */
GPUMEM_API const char *gpumem_strerror(int code);
/** Name of a gpumem status ("GPUMEM_EDOUBLEFREE"), or of a cudaError_t value when @p code is
 *  positive ("cudaErrorMemoryAllocation"). Never NULL. Thread-safe, no allocation. */
GPUMEM_API const char *gpumem_err_name(int code);
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Memory kinds and flags */
/**@{*/
/** The kind of an allocation: which CUDA interface made it, and so which call releases it. */
typedef enum gpumem_kind {
    GPUMEM_KIND_NONE = 0,
    GPUMEM_KIND_DEVICE = 1,       /**< cudaMalloc; released by cudaFree */
    GPUMEM_KIND_MANAGED = 2,      /**< cudaMallocManaged; released by cudaFree */
    GPUMEM_KIND_PINNED = 3,       /**< cudaMallocHost; released by cudaFreeHost */
    GPUMEM_KIND_HOST = 4,         /**< cudaHostAlloc with flags; released by cudaFreeHost */
    GPUMEM_KIND_DEVICE_ASYNC = 5, /**< cudaMallocAsync; released by cudaFreeAsync */
    GPUMEM_KIND_COUNT_ = 6
} gpumem_kind;

/** Short lower-case name of a kind: "device", "managed", "pinned", "host", "device-async". */
GPUMEM_API const char *gpumem_kind_name(int kind);

/** gpumem_managed_alloc() flags (values of cudaMemAttachGlobal / cudaMemAttachHost). */
#define GPUMEM_ATTACH_GLOBAL 0x01u
#define GPUMEM_ATTACH_HOST 0x02u
/** gpumem_host_alloc() flags, combinable (values of cudaHostAllocPortable, ...Mapped,
 *  ...WriteCombined). */
#define GPUMEM_HOST_PORTABLE 0x01u
#define GPUMEM_HOST_MAPPED 0x02u
#define GPUMEM_HOST_WRITE_COMBINED 0x04u
/** Every pointer gpumem returns is aligned to at least this many bytes, for every kind. */
#define GPUMEM_ALIGNMENT 256u
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Call sites */
/**@{*/
/** Where a call was made in the caller's source. Strings are the caller's static literals. */
typedef struct gpumem_site {
    const char *file;
    const char *func;
    int line;
} gpumem_site;

#ifdef __cplusplus
#define GPUMEM_SITE_HERE (gpumem_site{__FILE__, __func__, __LINE__})
#else
#define GPUMEM_SITE_HERE ((gpumem_site){__FILE__, __func__, __LINE__})
#endif
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Allocation
 * Each returns a pointer aligned to at least GPUMEM_ALIGNMENT bytes, or NULL. On failure the
 * per-thread record (gpumem_last_error()) says why: GPUMEM_EOVERFLOW (count * size overflows;
 * nothing was allocated and CUDA was not called), GPUMEM_ENOMEM (CUDA is out of memory; the
 * error is consumed, so it does not surface at a later CUDA call), GPUMEM_ENODEV (no device or
 * driver), GPUMEM_EINVAL (bad flags), GPUMEM_ESTICKY or GPUMEM_ECUDA. A request for zero bytes
 * returns NULL and sets the record to GPUMEM_OK, as cudaMalloc(&p, 0) does. The caller owns
 * the memory and releases it with gpumem_free(). Thread-safe; uses the caller's current device.
 */
/**@{*/
/** Device memory (cudaMalloc). */
GPUMEM_API void *gpumem_device_alloc_at(size_t count, size_t size, gpumem_site site);
/** Managed memory (cudaMallocManaged); @p flags GPUMEM_ATTACH_GLOBAL or GPUMEM_ATTACH_HOST.
 *  A flags value of 0 means GPUMEM_ATTACH_GLOBAL. */
GPUMEM_API void *gpumem_managed_alloc_at(size_t count, size_t size, unsigned flags,
                                         gpumem_site site);
/** Page-locked host memory (cudaMallocHost). */
GPUMEM_API void *gpumem_pinned_alloc_at(size_t count, size_t size, gpumem_site site);
/** Page-locked host memory with flags (cudaHostAlloc): any combination of
 *  GPUMEM_HOST_MAPPED, GPUMEM_HOST_PORTABLE and GPUMEM_HOST_WRITE_COMBINED. */
GPUMEM_API void *gpumem_host_alloc_at(size_t count, size_t size, unsigned flags,
                                      gpumem_site site);
/** Stream-ordered device memory (cudaMallocAsync) on @p stream; usable by work on that
 *  stream once the call returns. Release with gpumem_free_async() (or gpumem_free()). */
GPUMEM_API void *gpumem_device_alloc_async_at(size_t count, size_t size, cudaStream_t stream,
                                              gpumem_site site);

#define gpumem_device_alloc(count, size) gpumem_device_alloc_at((count), (size), GPUMEM_SITE_HERE)
#define gpumem_managed_alloc(count, size, flags)                                                \
    gpumem_managed_alloc_at((count), (size), (flags), GPUMEM_SITE_HERE)
#define gpumem_pinned_alloc(count, size) gpumem_pinned_alloc_at((count), (size), GPUMEM_SITE_HERE)
#define gpumem_host_alloc(count, size, flags)                                                   \
    gpumem_host_alloc_at((count), (size), (flags), GPUMEM_SITE_HERE)
#define gpumem_device_alloc_async(count, size, stream)                                          \
    gpumem_device_alloc_async_at((count), (size), (stream), GPUMEM_SITE_HERE)
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Release */
/**@{*/
/**
 * Releases memory of any kind allocated by gpumem, with the CUDA call that matches its kind.
 * NULL is a no-op that returns GPUMEM_OK. Errors, each with a message naming the free's call
 * site and the allocation's call site, kind and size; nothing is released on error:
 * - GPUMEM_EDOUBLEFREE: the pointer was already released (names where it first was);
 * - GPUMEM_EINTERIOR: the pointer is inside a live allocation (names it and the offset);
 * - GPUMEM_EFOREIGN: gpumem never allocated this pointer (or freed it long ago);
 * - GPUMEM_ECUDA / GPUMEM_ESTICKY: CUDA refused the release; the record leaves the registry.
 * Device-async memory is released with cudaFree, which waits for the device, so it is safe
 * even when the allocation's stream no longer exists; use gpumem_free_async() to release in
 * stream order instead.
 * Thread-safe: of two threads freeing the same pointer, one succeeds, one gets EDOUBLEFREE.
 */
GPUMEM_API int gpumem_free_at(void *p, gpumem_site site);
/** Release in stream order: device-async memory with cudaFreeAsync on @p stream; device
 *  memory (cudaMalloc) with cudaFree, which waits for the whole device and so also for
 *  @p stream. Other kinds get GPUMEM_EKIND and are not released. Otherwise as gpumem_free(). */
GPUMEM_API int gpumem_free_async_at(void *p, cudaStream_t stream, gpumem_site site);
/** gpumem_free() as a real function (no call site recorded), for function pointers and
 *  deleters: `deleter = gpumem_free;` or `(gpumem_free)(p)` bypass the macro. */
GPUMEM_API int(gpumem_free)(void *p);

#define gpumem_free(p) gpumem_free_at((p), GPUMEM_SITE_HERE)
#define gpumem_free_async(p, stream) gpumem_free_async_at((p), (stream), GPUMEM_SITE_HERE)
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Queries */
/**@{*/
/** What gpumem knows of a live allocation. */
typedef struct gpumem_info {
    int kind;              /**< gpumem_kind */
    unsigned flags;        /**< the flags passed at allocation (attach or host flags) */
    void *base;            /**< start of the allocation */
    size_t bytes;          /**< bytes requested (count * size) */
    size_t offset;         /**< offset of the queried address from base */
    int device;            /**< device current at allocation */
    cudaStream_t stream;   /**< stream of a device-async allocation, else NULL */
    const char *file;      /**< allocation call site */
    int line;
    const char *func;
    unsigned thread;       /**< gpumem's number of the allocating thread (1 = first seen) */
    uint64_t seq;          /**< allocation sequence number, process-wide, from 1 */
} gpumem_info;

/** Fills @p info for any address inside a live gpumem allocation (its start or interior).
 *  Returns GPUMEM_OK, or GPUMEM_EFOREIGN when no live allocation contains @p p (then @p info
 *  is untouched), or GPUMEM_EINVAL for NULL arguments. Thread-safe; no CUDA call. */
GPUMEM_API int gpumem_query(const void *p, gpumem_info *info);

/** The device address of mapped host memory (GPUMEM_HOST_MAPPED), for kernels
 *  (cudaHostGetDevicePointer). @p mapped_host may point inside the allocation. Returns NULL
 *  with GPUMEM_EKIND for memory allocated without GPUMEM_HOST_MAPPED, GPUMEM_EFOREIGN for
 *  memory gpumem does not own. Thread-safe. */
GPUMEM_API void *gpumem_device_ptr_at(const void *mapped_host, gpumem_site site);
#define gpumem_device_ptr(p) gpumem_device_ptr_at((p), GPUMEM_SITE_HERE)

/** Live allocations and bytes, by kind (index gpumem_kind; index 0 is the total). */
typedef struct gpumem_live {
    uint64_t count[GPUMEM_KIND_COUNT_];
    uint64_t bytes[GPUMEM_KIND_COUNT_];
} gpumem_live;
/** Counts what is live now. Thread-safe; a consistent snapshot per registry shard. */
GPUMEM_API void gpumem_live_get(gpumem_live *out);
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Errors
 * Each failure fills the calling thread's record and then calls the error handler. */
/**@{*/
/** Everything known about the most recent failure on this thread. */
typedef struct gpumem_error {
    int code;                /**< gpumem status; allocations and releases that succeed reset it
                                  to GPUMEM_OK */
    int cuda_error;          /**< cudaError_t value when CUDA failed, else 0 */
    const char *cuda_name;   /**< e.g. "cudaErrorMemoryAllocation", or NULL */
    const char *cuda_string; /**< e.g. "out of memory", or NULL */
    const char *expr;        /**< the failing gpumem function or checked expression */
    gpumem_site site;        /**< where the failing call was made */
    int checked;             /**< 1 when reported by GPUMEM_CHECK / GPUMEM_CHECK_LAUNCH */
    size_t requested;        /**< bytes asked for, for allocation failures */
    /* The allocation involved, for release and query errors (kind 0 when none). */
    int alloc_kind;
    unsigned alloc_flags;
    void *alloc_base;
    size_t alloc_bytes;
    size_t alloc_offset;     /**< offset of the pointer given, for GPUMEM_EINTERIOR */
    gpumem_site alloc_site;
    unsigned alloc_thread;
    uint64_t alloc_seq;
    gpumem_site freed_site;  /**< first release, for GPUMEM_EDOUBLEFREE */
    unsigned freed_thread;
    /* Out of memory context. */
    size_t device_free;      /**< bytes free on the device at failure (0 when unknown) */
    size_t device_total;
    uint64_t live_bytes;     /**< bytes live in gpumem at failure */
    char message[1024];      /**< the full message, "gpumem: error: ..." (may span lines) */
} gpumem_error;

/** The calling thread's record. Never NULL; valid until the thread's next gpumem call. */
GPUMEM_API const gpumem_error *gpumem_last_error(void);

/** Called on every failure, on the failing thread, after the record is filled. */
typedef void (*gpumem_error_handler)(const gpumem_error *err, void *arg);
/** Replaces the handler (process-wide); NULL restores the default, which prints the message
 *  to stderr and, for failures reported by GPUMEM_CHECK (or any failure when
 *  GPUMEM_ABORT_ON_ERROR=1), calls abort(). The library never calls exit(). Thread-safe. */
GPUMEM_API void gpumem_set_error_handler(gpumem_error_handler fn, void *arg);
/** The handler used when none is set; callable from a custom handler to chain to it. */
GPUMEM_API void gpumem_default_error_handler(const gpumem_error *err, void *arg);

/** Implementation of GPUMEM_CHECK: @p status is a gpumem status (negative), a cudaError_t
 *  (positive) or 0. Returns @p status unchanged. */
GPUMEM_API int gpumem_check_at(int status, const char *expr, gpumem_site site);
/** Whether GPUMEM_SYNC_LAUNCH is on (GPUMEM_CHECK_LAUNCH synchronizes after the launch). */
GPUMEM_API int gpumem_sync_launch(void);

/**
 * Checks a CUDA (cudaError_t) or gpumem status right where it is made. On failure: prints
 * `file:line: function: expr: cudaErrorMemoryAllocation: out of memory` plus context (for
 * out of memory: device free and total, bytes live in gpumem; for a sticky error: that the
 * context is lost), fills the record and calls the handler (the default one aborts).
 * Evaluates to the status, so `if (GPUMEM_CHECK(x) != 0)` works with a handler that returns.
 */
#define GPUMEM_CHECK(expr) gpumem_check_at((int)(expr), #expr, GPUMEM_SITE_HERE)

/* Asks the caller's own CUDA runtime, so it expands in the caller's code. */
static inline int gpumem__launch_status(const char **what)
{
    cudaError_t e = cudaGetLastError();
    *what = "kernel launch (cudaGetLastError)";
    if (e == cudaSuccess && gpumem_sync_launch()) {
        *what = "kernel execution (cudaDeviceSynchronize after launch)";
        e = cudaDeviceSynchronize();
    }
    return (int)e;
}
static inline int gpumem__check_launch(gpumem_site site)
{
    const char *what = "";
    int e = gpumem__launch_status(&what);
    return gpumem_check_at(e, what, site);
}
/**
 * Checks the kernel launch just made, through the caller's CUDA runtime (cudaGetLastError).
 * With GPUMEM_SYNC_LAUNCH=1 it also synchronizes, so an asynchronous fault in the kernel is
 * reported at its launch. Failure handling as GPUMEM_CHECK. Evaluates to the status.
 */
#define GPUMEM_CHECK_LAUNCH() gpumem__check_launch(GPUMEM_SITE_HERE)
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Backend and devices */
/**@{*/
/** Name of the backend in use: "cuda" or "sim"; initializes gpumem if needed. */
GPUMEM_API const char *gpumem_backend(void);

/**
 * Chooses the backend: "cuda" (the real driver) or "sim" (the simulated device); overrides
 * GPUMEM_BACKEND. Allowed before gpumem initializes, and after a backend failed to initialize
 * (so a program can fall back to the simulated device explicitly); the new one is initialized
 * at the next call. Returns GPUMEM_EINVAL for another name, GPUMEM_EBUSY while a different
 * backend is up (it is never swapped under live memory). Thread-safe.
 */
GPUMEM_API int gpumem_backend_select(const char *name);

/** Initializes gpumem now (it otherwise does so at its first call). Returns GPUMEM_OK, or
 *  GPUMEM_ENODEV with CUDA's reason in the record and the message. Thread-safe, idempotent. */
GPUMEM_API int gpumem_init(void);

/** One device as the backend sees it. */
typedef struct gpumem_device_info {
    int ordinal;
    char name[256];
    size_t total_bytes;
    size_t free_bytes;
    int cc_major, cc_minor; /**< compute capability */
} gpumem_device_info;

/** Number of devices; 0 with the record set when there is none or no driver. */
GPUMEM_API int gpumem_device_count(void);
/** Fills @p out for device @p ordinal (free bytes as cudaMemGetInfo says). Returns
 *  GPUMEM_OK, GPUMEM_EINVAL for a bad ordinal, GPUMEM_ENODEV or GPUMEM_ECUDA. */
GPUMEM_API int gpumem_device_get(int ordinal, gpumem_device_info *out);
/**@}*/

/* ------------------------------------------------------------------------------------------ */
/** @name Options
 * Options come from one table and are read from GPUMEM_<NAME> environment variables at
 * initialization. Booleans accept 1/0, on/off, yes/no, true/false; sizes accept suffixes
 * such as 16MiB, 4GB, 512k. Unknown GPUMEM_* variables get a warning. */
/**@{*/
/** Number of options in the table. */
GPUMEM_API int gpumem_option_count(void);
/** Option @p i: its variable name, effective value as text, default and one line of help.
 *  Returns GPUMEM_EINVAL for an index out of range. Pointers stay valid. */
GPUMEM_API int gpumem_option_get(int i, const char **name, const char **value,
                                 const char **default_value, const char **help);
/**@}*/

/** Formats @p bytes as "1.0 MiB" ("512 B", "4.0 KiB", ...) into @p buf; returns @p buf. */
GPUMEM_API char *gpumem_format_bytes(uint64_t bytes, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* GPUMEM_H */

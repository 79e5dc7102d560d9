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
    X(EBUSY, -11, "resource still in use")                                                       \
    X(EMISALIGNED, -12, "address is not aligned for the requested vector width")                 \
    X(EIO, -13, "writing a report failed (disk full, closed pipe, ...)")

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
    /* The library never makes these; `gpumem check` sees programs make them. */
    GPUMEM_KIND_REGISTERED = 6,   /**< cudaHostRegister; undone by cudaHostUnregister */
    GPUMEM_KIND_VIRTUAL = 7,      /**< cuMemCreate / cuMemMap; cuMemRelease / cuMemUnmap */
    GPUMEM_KIND_ARRAY = 8,        /**< cudaMallocArray, cudaMalloc3DArray, cuArrayCreate,
                                       cuArray3DCreate; cudaFreeArray / cuArrayDestroy */
    GPUMEM_KIND_MIPMAPPED = 9,    /**< cudaMallocMipmappedArray, cuMipmappedArrayCreate;
                                       cudaFreeMipmappedArray / cuMipmappedArrayDestroy */
    GPUMEM_KIND_GRAPH = 10,       /**< a graph's memory allocation node; its free node */
    GPUMEM_KIND_RESERVED = 11,    /**< cuMemAddressReserve; cuMemAddressFree */
    GPUMEM_KIND_COUNT_ = 12
} gpumem_kind;

/** Short lower-case name of a kind: "device", "managed", "pinned", "host", "device-async",
 *  "registered", "virtual", "array", "mipmapped-array", "graph", "reserved". */
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
/* Compile-time pairing: with GCC >= 11 the allocation functions carry
 * `__attribute__((malloc, malloc(dealloc, 1)))` for each release function, so
 * -Wmismatched-dealloc flags free() or cudaFree() on gpumem memory and -fanalyzer flags leaks.
 * The release functions must be declared first. Define GPUMEM_NO_MALLOC_ATTRIBUTE before
 * including this header to leave the attribute out (e.g. in a test that misuses on purpose).
 * Not for Clang (no deallocator form) nor nvcc's front end. docs/ownership.md has details. */
#if defined(__GNUC__) && __GNUC__ >= 11 && !defined(__clang__) && !defined(__CUDACC__) &&       \
    !defined(__NVCOMPILER) && !defined(__INTEL_COMPILER) && !defined(GPUMEM_NO_MALLOC_ATTRIBUTE)
GPUMEM_API int(gpumem_free)(void *p);
GPUMEM_API int gpumem_free_at(void *p, gpumem_site site);
GPUMEM_API int gpumem_free_async_at(void *p, cudaStream_t stream, gpumem_site site);
#define GPUMEM_MALLOC_ATTRIBUTE                                                                  \
    __attribute__((malloc, malloc(gpumem_free, 1), malloc(gpumem_free_at, 1),                   \
                   malloc(gpumem_free_async_at, 1)))
/* Never defined nor called: it makes CUDA's release calls known deallocators, so that GCC
 * flags cudaFree(), cudaFreeHost() or cudaFreeAsync() on gpumem memory too. */
void *gpumem__cuda_release_marker(void)
    __attribute__((malloc(cudaFree, 1), malloc(cudaFreeHost, 1), malloc(cudaFreeAsync, 1)));
#else
#define GPUMEM_MALLOC_ATTRIBUTE
#endif

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
GPUMEM_MALLOC_ATTRIBUTE
GPUMEM_API void *gpumem_device_alloc_at(size_t count, size_t size, gpumem_site site);
/** Managed memory (cudaMallocManaged); @p flags GPUMEM_ATTACH_GLOBAL or GPUMEM_ATTACH_HOST.
 *  A flags value of 0 means GPUMEM_ATTACH_GLOBAL. */
GPUMEM_MALLOC_ATTRIBUTE
GPUMEM_API void *gpumem_managed_alloc_at(size_t count, size_t size, unsigned flags,
                                         gpumem_site site);
/** Page-locked host memory (cudaMallocHost). */
GPUMEM_MALLOC_ATTRIBUTE
GPUMEM_API void *gpumem_pinned_alloc_at(size_t count, size_t size, gpumem_site site);
/** Page-locked host memory with flags (cudaHostAlloc): any combination of
 *  GPUMEM_HOST_MAPPED, GPUMEM_HOST_PORTABLE and GPUMEM_HOST_WRITE_COMBINED. */
GPUMEM_MALLOC_ATTRIBUTE
GPUMEM_API void *gpumem_host_alloc_at(size_t count, size_t size, unsigned flags,
                                      gpumem_site site);
/** Stream-ordered device memory (cudaMallocAsync) on @p stream; usable by work on that
 *  stream once the call returns. Release with gpumem_free_async() (or gpumem_free()). */
GPUMEM_MALLOC_ATTRIBUTE
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
    uint64_t seq;          /**< allocation sequence number: unique, increasing per thread */
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
/** The handler in use and its argument (the default handler and NULL when none is set), for a
 *  handler that chains to the one it replaces. Thread-safe. */
GPUMEM_API void gpumem_get_error_handler(gpumem_error_handler *fn, void **arg);
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
/**
 * Makes device @p ordinal current on the calling thread, as cudaSetDevice does: its primary
 * context becomes current, for gpumem and for the caller's CUDA runtime alike (with the
 * simulated device, the thread's simulated current device). Allocations made afterwards on
 * this thread are that device's. Per thread. Returns GPUMEM_OK, GPUMEM_EINVAL for a device
 * that does not exist, GPUMEM_ENODEV or GPUMEM_ECUDA.
 */
GPUMEM_API int gpumem_device_set(int ordinal);
/** The calling thread's current device into @p ordinal (device 0 on a thread that set none).
 *  Returns GPUMEM_OK, GPUMEM_EINVAL for NULL, GPUMEM_ENODEV or GPUMEM_ECUDA. Per thread. */
GPUMEM_API int gpumem_device_current(int *ordinal);
/** Whether @p device can read and write @p peer's memory directly (cuDeviceCanAccessPeer;
 *  0 for a device and itself), into @p can. gpumem_copy between two devices' memory is a peer
 *  copy when it can and is staged through pinned host memory when not. Returns GPUMEM_OK,
 *  GPUMEM_EINVAL for a device that does not exist or a NULL @p can, GPUMEM_ENODEV or
 *  GPUMEM_ECUDA. Thread-safe. */
GPUMEM_API int gpumem_device_can_access_peer(int device, int peer, int *can);
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

/* ---- Alignment and memory kinds ---- */
/** @name Alignment, vector views and memory kinds
 * Checks for the rules docs/alignment.md and docs/memory-kinds.md explain: a vector load needs
 * an address that is a multiple of its width, and each kind of memory has its own rules (who
 * may dereference it, how it moves). The device-side check for kernels is in gpumem_device.h. */
/**@{*/

/** The host as the target of gpumem_prefetch() and the location of gpumem_advise()
 *  (the value of cudaCpuDeviceId). */
#define GPUMEM_HOST (-1)

/**
 * Whether @p p is a multiple of @p align, which must be a power of two.
 * Returns 1 when it is, 0 when it is not or when @p align is 0 or not a power of two.
 * NULL counts as aligned (address 0 is a multiple of everything). Pure arithmetic: no
 * registry lookup, no CUDA call, no error record; thread-safe.
 */
GPUMEM_API int gpumem_is_aligned(const void *p, size_t align);

/**
 * A vector view: @p base + @p byte_offset, checked for a load or store @p vec_bytes wide
 * (16 for float4), before any kernel sees it. Returns the address, or NULL with:
 * - GPUMEM_EMISALIGNED: the address is not a multiple of @p vec_bytes; the message names the
 *   offset, the width and the allocation ("offset 4 is not a multiple of 16 for a 16-byte
 *   vector view of the 1.0 MiB device allocation made at main.c:42 (main)"), and says so when
 *   @p base itself is misaligned;
 * - GPUMEM_EINVAL: @p vec_bytes is 0 or not a power of two; @p base is NULL; or the first
 *   vector of the view does not lie inside the gpumem allocation containing @p base (past the
 *   end, or before the start for a "negative" offset).
 * Memory gpumem did not allocate is checked for alignment only (no range is known).
 * The record is reset to GPUMEM_OK on success. No CUDA call; thread-safe.
 */
GPUMEM_API void *gpumem_vec_ptr_at(const void *base, size_t byte_offset, size_t vec_bytes,
                                   gpumem_site site);
#define gpumem_vec_ptr(base, byte_offset, vec_bytes)                                            \
    gpumem_vec_ptr_at((base), (byte_offset), (vec_bytes), GPUMEM_SITE_HERE)
/** A typed vector view: `float4 *v = GPUMEM_VEC(float4, d_ptr, 1);` with `float *d_ptr` is
 *  d_ptr + 1 seen as float4 (byte offset 1 * sizeof *d_ptr = 4: refused, 4 is not a multiple
 *  of 16). @p elem_offset counts elements of @p base's own type, so @p base must be a typed
 *  pointer (not void *; use gpumem_vec_ptr with a byte offset for that). The width checked is
 *  sizeof(type). Works in C and in C++/CUDA host code; NULL and the record as
 *  gpumem_vec_ptr(). */
#define GPUMEM_VEC(type, base, elem_offset)                                                     \
    ((type *)gpumem_vec_ptr_at((base), (size_t)(elem_offset) * sizeof *(base), sizeof(type),    \
                               GPUMEM_SITE_HERE))

/**
 * Writes what @p p is to @p out, one or more lines. For an address inside a live gpumem
 * allocation: "0x7f... is 4 bytes into a 1.0 MiB device allocation made at main.c:42 (main,
 * thread 1, #17)", then the allocation's flags, device or stream, and the rules of its kind.
 * For any other address: what CUDA says it is (device, pinned host, managed or unregistered
 * host memory). Returns GPUMEM_OK for gpumem's memory, GPUMEM_EFOREIGN (written, but not
 * reported to the handler) for other memory, GPUMEM_EINVAL for a NULL @p p or @p out or when
 * writing fails (reported). Asks CUDA only about foreign addresses. Thread-safe; lines from
 * concurrent calls on one stream may interleave.
 */
GPUMEM_API int gpumem_describe_at(const void *p, FILE *out, gpumem_site site);
#define gpumem_describe(p, out) gpumem_describe_at((p), (out), GPUMEM_SITE_HERE)

/**
 * Migrates @p bytes of managed memory from @p p to @p device (an ordinal) or to the host
 * (GPUMEM_HOST), in order on @p stream: cudaMemPrefetchAsync (CUDA 13:
 * cuMemPrefetchAsync_v2). Without it, a kernel's first touch migrates page by page on faults
 * (6.7 against 47.7 GB/s on an H200). @p bytes 0 does nothing and returns GPUMEM_OK.
 * Errors, each with a message naming the call site and the allocation, nothing migrated:
 * - GPUMEM_EFOREIGN: @p p is not inside memory gpumem allocated (names what CUDA says it is);
 * - GPUMEM_EKIND: @p p is in gpumem memory of another kind (only managed memory migrates);
 * - GPUMEM_EINVAL: NULL @p p; the range runs past the end of the allocation; no such device;
 * - GPUMEM_ECUDA / GPUMEM_ESTICKY / GPUMEM_ENODEV: CUDA refused.
 * Asynchronous like the CUDA call: returns once queued. Thread-safe.
 */
GPUMEM_API int gpumem_prefetch_at(const void *p, size_t bytes, int device, cudaStream_t stream,
                                  gpumem_site site);
#define gpumem_prefetch(p, bytes, device, stream)                                               \
    gpumem_prefetch_at((p), (bytes), (device), (stream), GPUMEM_SITE_HERE)

/**
 * Advice on how @p bytes of managed memory from @p p will be used: cudaMemAdvise (CUDA 13:
 * cuMemAdvise_v2). @p advice is a cudaMemoryAdvise value (cudaMemAdviseSetReadMostly,
 * ...SetPreferredLocation, ...SetAccessedBy and their Unset forms); @p device is an ordinal or
 * GPUMEM_HOST, and is ignored by the read-mostly advice and by UnsetPreferredLocation, as
 * CUDA ignores it. @p bytes 0 does nothing and returns GPUMEM_OK. Errors as
 * gpumem_prefetch(), plus GPUMEM_EINVAL for an advice value CUDA does not define.
 * Thread-safe.
 */
GPUMEM_API int gpumem_advise_at(const void *p, size_t bytes, int advice, int device,
                                gpumem_site site);
#define gpumem_advise(p, bytes, advice, device)                                                 \
    gpumem_advise_at((p), (bytes), (advice), (device), GPUMEM_SITE_HERE)
/**@}*/

/* ---- Statistics, leak reports and checkpoints ---- */
/** @name Statistics
 * Process-wide counters of gpumem allocations, updated on every successful allocation and
 * release: counts and totals are kept by the registry's shards under the locks they take
 * anyway; only the byte peaks need shared atomic counters. Thread-safe; a snapshot taken
 * while other threads allocate is consistent per shard, not across the whole process. */
/**@{*/
/** Bytes: current, peak (since start or the last reset) and total (ever allocated). */
typedef struct gpumem_counter_t {
    uint64_t current;
    uint64_t peak;
    uint64_t total;
} gpumem_counter_t;

/** Allocations: live now, and made in all. */
typedef struct gpumem_count_t {
    uint64_t current;
    uint64_t total;
} gpumem_count_t;

/** Devices with their own counters: 64, as many as the simulated device makes and more GPUs
 *  (MIG instances included) than one process sees on any node today; allocations on ordinals
 *  beyond share the last entry. */
#define GPUMEM_STATS_DEVICES 64

typedef struct gpumem_stats_t {
    gpumem_counter_t bytes[GPUMEM_KIND_COUNT_]; /**< by gpumem_kind; index 0: every kind */
    gpumem_count_t count[GPUMEM_KIND_COUNT_];
    gpumem_counter_t device_bytes[GPUMEM_STATS_DEVICES]; /**< every kind, by device ordinal */
    gpumem_count_t device_count[GPUMEM_STATS_DEVICES];
} gpumem_stats_t;

/** Fills @p out. Returns GPUMEM_OK, or GPUMEM_EINVAL for NULL. No CUDA call. */
GPUMEM_API int gpumem_stats(gpumem_stats_t *out);
/** Prints the statistics as a table, one row per kind and per device used, each row ending in
 *  "ok" or "not all freed", and flushes @p out. Returns GPUMEM_OK, GPUMEM_EINVAL for NULL, or
 *  GPUMEM_EIO when writing to or flushing @p out failed (a full disk). No CUDA call. */
GPUMEM_API int gpumem_stats_print(FILE *out);
/** Sets every peak to its current value, to measure the peak of a phase of the program.
 *  Peaks are exact for the calling thread's own allocations; with several threads allocating
 *  at once they are within 4 MiB a thread of the true peak (docs/leaks.md). */
GPUMEM_API void gpumem_stats_reset_peak(void);
/**@}*/

/** @name Leak reports
 * At exit, when allocations are still live, gpumem reports them (GPUMEM_LEAK_REPORT: off,
 * summary (default) or full), to stderr or GPUMEM_REPORT_FILE, as text or JSON
 * (GPUMEM_REPORT_FORMAT); GPUMEM_LEAK_EXITCODE=N makes a leaking process exit with N.
 * The report works from the registry alone and never calls CUDA. */
/**@{*/
#define GPUMEM_REPORT_SUMMARY 0x0u /**< one line */
#define GPUMEM_REPORT_FULL 0x1u    /**< grouped by call site, sorted by bytes */
#define GPUMEM_REPORT_JSON 0x2u    /**< JSON (schema "gpumem.report", version 1) */
/**
 * Writes the report of what is live now to @p out, as at exit. Returns the number of live
 * allocations (>= 0), or GPUMEM_EINVAL for a NULL @p out, GPUMEM_ENOMEM when the grouping
 * needs memory it cannot get (then a summary is written), GPUMEM_EIO when writing to or
 * flushing @p out failed (a full disk). Never calls CUDA. Thread-safe.
 */
GPUMEM_API int gpumem_report(FILE *out, unsigned flags);
/**@}*/

/** @name Checkpoints
 * The cudaMemGetInfo method of leak hunting, made precise: what was allocated between two points of
 * a program and is still live, by call site, and how device free memory changed, with the
 * part gpumem cannot attribute (other libraries, raw cudaMalloc). */
/**@{*/
typedef struct gpumem_checkpoint_t {
    uint64_t seq;          /**< allocations with a larger sequence number came after */
    uint64_t device_bytes; /**< gpumem's device-resident bytes live then on device (device,
                                async, device pool blocks) */
    size_t device_free;    /**< cudaMemGetInfo then, on device */
    size_t device_total;
    int device;            /**< the caller's current device then; -1 when unknown */
} gpumem_checkpoint_t;

typedef struct gpumem_checkpoint_diff_t {
    uint64_t count;           /**< allocations made since the checkpoint and still live */
    uint64_t bytes;
    uint64_t sites;           /**< distinct call sites among them */
    int64_t device_used;      /**< growth of used device memory (cudaMemGetInfo), bytes */
    int64_t gpumem_device;    /**< growth of gpumem's device-resident live bytes */
    int64_t unattributed;     /**< device_used - gpumem_device: memory gpumem did not make */
    int device_known;         /**< 0 when device memory could not be read: then the three
                                   device figures are 0 */
} gpumem_checkpoint_diff_t;

/** Marks a point in the program. Reads cudaMemGetInfo of the caller's current device when
 *  gpumem can (device -1 in the result otherwise); gpumem's part is its device-resident memory
 *  on that device only. Thread-safe. */
GPUMEM_API gpumem_checkpoint_t gpumem_checkpoint(void);
/** As gpumem_checkpoint(), of device @p device whatever device is current: its cudaMemGetInfo
 *  and gpumem's memory on it (device -1 in the result when it cannot be read, e.g. no such
 *  device). With several devices, one checkpoint per device says where memory went on each.
 *  Thread-safe. */
GPUMEM_API gpumem_checkpoint_t gpumem_checkpoint_device(int device);
/**
 * Compares now with @p cp: fills @p diff (may be NULL) and, when @p out is not NULL, writes
 * the allocations made since @p cp that are still live, grouped by call site and sorted by
 * bytes, and the device memory change. Device memory is reserved by CUDA in chunks, so
 * device_used moves in steps (commonly 2 MiB) and small allocations can show as 0 or as a
 * chunk. @p out is flushed. Returns GPUMEM_OK, GPUMEM_EINVAL for a NULL @p cp, GPUMEM_ENOMEM
 * when grouping needs memory it cannot get, GPUMEM_EIO when writing to or flushing @p out
 * failed (a full disk; @p diff is filled all the same). Thread-safe.
 */
GPUMEM_API int gpumem_checkpoint_diff(const gpumem_checkpoint_t *cp, FILE *out,
                                      gpumem_checkpoint_diff_t *diff);
/**@}*/

/* ---- Ownership ---- */
/** @name Ownership: GPUMEM_AUTO, gpumem_steal() and scopes
 * Memory released when the block that owns it ends, on every path out of it (return, goto,
 * break, and in C++ an exception). docs/ownership.md has worked examples and the rules; C++
 * code has gpumem::unique_ptr in gpumem.hpp.
 *
 * Automatic release needs the `cleanup` attribute (GCC, Clang, and nvcc with either as host
 * compiler): GPUMEM_HAVE_CLEANUP is 1 there, and only then are GPUMEM_AUTO and GPUMEM_SCOPE
 * defined, so code that relies on them fails to compile elsewhere instead of leaking. Defining
 * GPUMEM_NO_CLEANUP before including this header turns them off. Without cleanup, declare a
 * scope with GPUMEM_SCOPE_MANUAL(s) and close it with gpumem_scope_close(s) on every path. */
/**@{*/
#if !defined(GPUMEM_NO_CLEANUP) && (defined(__GNUC__) || defined(__clang__))
#define GPUMEM_HAVE_CLEANUP 1
#else
#define GPUMEM_HAVE_CLEANUP 0
#endif

/**
 * Releases the pointer stored at @p pp (the address of any object pointer variable) with
 * gpumem_free() and sets the variable to NULL. A NULL variable is a no-op. The cleanup
 * function behind GPUMEM_AUTO; errors are reported as by gpumem_free() (which records no call
 * site here: messages say "released at (unknown site)"). Not for use on a scope.
 */
GPUMEM_API void gpumem_auto_release(void *pp);

#if GPUMEM_HAVE_CLEANUP
/**
 * `GPUMEM_AUTO float *d = gpumem_device_alloc(n, sizeof *d);` releases d with gpumem_free()
 * when the enclosing block ends, on every path. NULL (a failed or zero-byte allocation) is
 * fine. To hand the memory on, take it out first: `return gpumem_steal(&d);`; to release it
 * early: `gpumem_free(gpumem_steal(&d));`. Never jump (goto) into the block past the
 * declaration. Defined only where GPUMEM_HAVE_CLEANUP is 1.
 */
#define GPUMEM_AUTO __attribute__((cleanup(gpumem_auto_release)))
#endif

/**
 * Hands ownership on: returns the pointer stored at @p pp (the address of a pointer variable,
 * `gpumem_steal(&d)`) and sets that variable to NULL, so a GPUMEM_AUTO variable or a later
 * gpumem_free(d) no longer releases it. NULL @p pp returns NULL. No registry lookup, no error
 * record; the variable must be a pointer to an object type. Thread safety: as the variable.
 * In C++, gpumem.hpp adds a typed overload (`float *p = gpumem_steal(&d);`).
 */
GPUMEM_API void *gpumem_steal(void *pp);

/** Entries a scope holds without allocating; more go to the heap. */
#define GPUMEM_SCOPE_INLINE 8

/** One adopted allocation (private to the scope functions). */
typedef struct gpumem_scope_entry {
    void *ptr;
    uint64_t seq;     /**< the allocation's sequence number: tells a reused address apart */
    gpumem_site site; /**< where it was allocated */
} gpumem_scope_entry;

/**
 * An ownership scope: the allocations adopted into it, released in reverse order of adoption
 * when it closes. Declare one with GPUMEM_SCOPE(s) or GPUMEM_SCOPE_MANUAL(s), which make `s`
 * an array of one, so `s` is passed as is (a `gpumem_scope *`). The fields are private.
 * Thread safety: a scope belongs to the thread that declared it; no two threads may use one
 * scope at once (the memory it holds may be used anywhere).
 */
typedef struct gpumem_scope {
    unsigned magic;             /**< set by initialization; catches an uninitialized scope */
    unsigned reserved_;
    size_t count;               /**< entries held */
    size_t capacity;            /**< entries that fit without growing */
    gpumem_scope_entry *heap;   /**< NULL while the entries fit in inline_entries */
    gpumem_site site;           /**< where the scope was declared */
    gpumem_scope_entry inline_entries[GPUMEM_SCOPE_INLINE];
} gpumem_scope;

/** An empty, open scope declared at @p site: the initializer behind GPUMEM_SCOPE. */
GPUMEM_API gpumem_scope gpumem_scope_make_at(gpumem_site site);
/** Initializes the scope at @p s (for a scope that is not a local variable, e.g. a struct
 *  member); close it with gpumem_scope_close(). */
GPUMEM_API void gpumem_scope_init_at(gpumem_scope *s, gpumem_site site);
#define gpumem_scope_init(s) gpumem_scope_init_at((s), GPUMEM_SITE_HERE)

/** The cleanup function behind GPUMEM_SCOPE: closes the scope at @p scope (a
 *  `gpumem_scope *`, or the address of the array GPUMEM_SCOPE declares). Reports as
 *  gpumem_scope_close(), naming the scope's declaration as the release site. */
GPUMEM_API void gpumem_scope_cleanup(void *scope);

#if GPUMEM_HAVE_CLEANUP
/**
 * `GPUMEM_SCOPE(s);` declares the scope `s` (a `gpumem_scope[1]`, used as a
 * `gpumem_scope *`), which closes when the enclosing block ends, on every path: everything
 * adopted is released in reverse order of adoption. Scopes nest: an inner block's scope
 * closes first. Defined only where GPUMEM_HAVE_CLEANUP is 1; see GPUMEM_SCOPE_MANUAL.
 */
#define GPUMEM_SCOPE(s)                                                                          \
    __attribute__((cleanup(gpumem_scope_cleanup))) gpumem_scope s[1] = {                         \
        gpumem_scope_make_at(GPUMEM_SITE_HERE)}
#endif
/** `GPUMEM_SCOPE_MANUAL(s);` declares the scope `s` without automatic close, for compilers
 *  without `cleanup`: the caller calls gpumem_scope_close(s) on every path out. */
#define GPUMEM_SCOPE_MANUAL(s) gpumem_scope s[1] = {gpumem_scope_make_at(GPUMEM_SITE_HERE)}

/**
 * Gives the scope @p s ownership of @p p, an allocation gpumem returned, and returns @p p:
 * `float *d = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d));`. NULL passes through
 * (returns NULL, nothing adopted, record untouched), so one NULL check after adoption covers
 * the allocation. Adopting a pointer the scope already holds does nothing and returns it.
 * Errors (reported through the record and handler; the call returns NULL):
 * - GPUMEM_EFOREIGN / GPUMEM_EINTERIOR: @p p is not the start of a live gpumem allocation;
 *   it is neither adopted nor released;
 * - GPUMEM_ENOMEM: the scope could not grow on the heap; @p p is released at once, so it
 *   does not leak;
 * - GPUMEM_EINVAL: @p s is NULL or not initialized; @p p is released at once.
 * Cost: one registry lookup, and a scan of the entries held (scopes are meant for a few
 * hundred allocations at most). Thread safety: see gpumem_scope.
 */
GPUMEM_API void *gpumem_adopt_at(gpumem_scope *s, void *p, gpumem_site site);
#define gpumem_adopt(s, p) gpumem_adopt_at((s), (p), GPUMEM_SITE_HERE)

/**
 * Closes @p s now: releases every adopted allocation in reverse order of adoption with
 * gpumem_free(), naming this call as the release site. Each failure is reported through the
 * record and the handler, and closing goes on with the rest. An allocation that was released
 * behind the scope's back (gpumem_free() of an adopted pointer) is not released again, even
 * if its address was reused since: that is reported as GPUMEM_EDOUBLEFREE. Afterwards the
 * scope is empty and may adopt again; closing an empty scope (or a NULL @p s) does nothing.
 * Returns GPUMEM_OK or the first failure's status.
 */
GPUMEM_API int gpumem_scope_close_at(gpumem_scope *s, gpumem_site site);
#define gpumem_scope_close(s) gpumem_scope_close_at((s), GPUMEM_SITE_HERE)

/**
 * Releases @p p now and takes it out of @p s (the way to release an adopted allocation
 * early). Returns gpumem_free()'s status; NULL @p p returns GPUMEM_OK. GPUMEM_EINVAL
 * (reported, nothing released) when @p s does not hold @p p.
 */
GPUMEM_API int gpumem_scope_release_at(gpumem_scope *s, void *p, gpumem_site site);
#define gpumem_scope_release(s, p) gpumem_scope_release_at((s), (p), GPUMEM_SITE_HERE)

/**
 * Takes @p p out of @p s without releasing it and returns it: the caller owns it again (to
 * return it, or hand it to another owner). NULL @p p returns NULL. Returns NULL with
 * GPUMEM_EINVAL reported when @p s does not hold @p p.
 */
GPUMEM_API void *gpumem_scope_steal_at(gpumem_scope *s, void *p, gpumem_site site);
#define gpumem_scope_steal(s, p) gpumem_scope_steal_at((s), (p), GPUMEM_SITE_HERE)

/** Number of allocations @p s holds now (0 for NULL). */
GPUMEM_API size_t gpumem_scope_count(const gpumem_scope *s);
/**@}*/

/* ---- Pools ---- */
/** @name Pools
 * Caching allocators for device memory and pinned host memory. Blocks are carved from the
 * memory a pool holds and merge with free neighbours when released, so memory one size freed
 * serves any other. A device pool maps physical pages into address ranges of its own and
 * moves pages no block needs to where one does (GPUMEM_POOL_DESIGN_VMM, the default where the
 * device can), or carves segments CUDA gives in one piece (GPUMEM_POOL_DESIGN_SEGMENTS);
 * pinned pools carve large cudaMallocHost chunks. Every block is a gpumem
 * allocation like any other: in the registry (gpumem_query(), leak reports, statistics), and
 * released with gpumem_free() (or, device pool, gpumem_free_async()), which gives it back to
 * its pool instead of to CUDA. docs/pools.md has the rules and the numbers. */
/**@{*/
/** An opaque pool; made by gpumem_pool_create(), ended by gpumem_pool_destroy(). */
typedef struct gpumem_pool gpumem_pool;

/** Options of gpumem_pool_create(); zero-initialize, then set what matters. */
typedef struct gpumem_pool_options_t {
    /** Most bytes the pool may reserve from CUDA (cached and in use together); 0: no limit.
     *  A request that would pass it first releases cached blocks, then fails with
     *  GPUMEM_ENOMEM. */
    uint64_t limit;
    /** Pinned pool: bytes of each pinned chunk that small blocks are carved from; 0: 16 MiB
     *  (smaller when a limit is set below it). Requests above a quarter of a chunk get a
     *  cudaMallocHost of their own. Ignored by device pools. */
    uint64_t chunk_bytes;
    /** How the pool holds memory: GPUMEM_POOL_DESIGN_AUTO (0, the default: the
     *  GPUMEM_POOL_DESIGN variable, else pages where the device can map them, no limit
     *  below 64 pages is set and compute-sanitizer's NVTX heaps are off), or one of the
     *  others; a design a pool cannot use falls back to segments. docs/pools.md compares them. */
    uint32_t design;
    /** GPUMEM_POOL_* flags (0: none). */
    uint32_t flags;
} gpumem_pool_options_t;

/** gpumem_pool_options_t.flags: the pool's blocks belong to a runtime that frees what it
 *  holds at its own teardown, or never (an interpreter and the framework it runs: the Python
 *  package's pools). Blocks of such a pool still live when the process exits are left out of
 *  the exit report's summary (GPUMEM_LEAK_REPORT=summary, the default); the full report
 *  (GPUMEM_LEAK_REPORT=full) and gpumem_report() list them as any others. */
#define GPUMEM_POOL_RUNTIME_OWNED 1u

/** Values of gpumem_pool_options_t.design. */
enum {
    GPUMEM_POOL_DESIGN_AUTO = 0,
    /** Device pools: blocks carved from address ranges of the pool's own into which physical
     *  pages are mapped while blocks lie on them (CUDA's virtual memory management). */
    GPUMEM_POOL_DESIGN_VMM = 1,
    /** Blocks carved from segments CUDA gives in one piece (2 MiB for small blocks, 20 MiB or
     *  the block's size for large ones; pinned: the chunks), split and merged again. */
    GPUMEM_POOL_DESIGN_SEGMENTS = 2,
    /** A CUDA allocation per block, of its size class, cached by class and never split: for
     *  comparison (it holds memory for every class a program ever had live at once). */
    GPUMEM_POOL_DESIGN_CLASSES = 3
};

/** Size ranges of gpumem_pool_stats_t.cached_by_size: under 64 KiB, 64 KiB to 1 MiB, 1 to
 *  16 MiB, 16 to 256 MiB, 256 MiB and over. */
#define GPUMEM_POOL_SIZE_RANGES 5

/** What a pool holds (gpumem_pool_stats()). Bytes are block bytes (requests rounded to their
 *  class, or to 256 bytes above 4 MiB) unless said. */
typedef struct gpumem_pool_stats_t {
    uint64_t reserved;       /**< bytes held from CUDA: segments, or mapped and spare pages */
    uint64_t in_use;         /**< block bytes of live blocks */
    uint64_t requested;      /**< bytes the live blocks were asked for (count * size) */
    uint64_t cached;         /**< reserved bytes not in live blocks: free blocks, blocks in
                                  thread caches, the free rest of pages and segments */
    uint64_t peak_reserved;  /**< largest reserved so far */
    uint64_t peak_in_use;    /**< largest in_use so far */
    uint64_t blocks_in_use;
    uint64_t blocks_cached;  /**< free blocks holding memory, and blocks in thread caches */
    uint64_t hits;           /**< allocations served without asking CUDA for memory */
    uint64_t misses;         /**< allocations that asked CUDA for memory or a mapping */
    uint64_t oom_retries;    /**< out-of-memory answers retried after releasing cached blocks */
    /** Share of reserved bytes that hold no requested byte, (reserved - requested) / reserved,
     *  from 0 (every reserved byte is asked for) to 1; 0 when nothing is reserved. It counts
     *  rounding, cached blocks and free space in segments and pages alike: after
     *  gpumem_pool_trim() of an idle phase it shows what stays held for nothing. */
    double fragmentation;
    uint64_t peak_requested; /**< largest requested so far */
    /** The largest block the pool could hand out now without asking CUDA for memory. */
    uint64_t largest_free;
    /** cached bytes by the size of the free block (or thread-cached block) they lie in; the
     *  ranges are GPUMEM_POOL_SIZE_RANGES's. */
    uint64_t cached_by_size[GPUMEM_POOL_SIZE_RANGES];
    /** Share of cached bytes outside the largest free block, 1 - largest_free / cached: near 1
     *  when memory is cached in pieces too small for a large request. */
    double free_fragmentation;
    uint64_t remaps;         /**< pages moved from where no block needed them to a new block */
    /** The CUDA calls that got, mapped, unmapped and gave back the pool's memory (a
     *  segment's cudaMallocAsync, cudaMalloc or cudaHostAlloc and its release; a page's
     *  cuMemCreate, cuMemMap with its access setting, cuMemUnmap and cuMemRelease), and the
     *  wall time spent in them, in nanoseconds: what managing its memory cost the program. */
    uint64_t cuda_calls;
    uint64_t cuda_ns;
} gpumem_pool_stats_t;

/**
 * Makes a pool. @p kind is GPUMEM_KIND_DEVICE (a device pool on device ordinal @p device) or
 * GPUMEM_KIND_PINNED (a pinned host pool; @p device is ignored). @p options may be NULL
 * (no limit, default chunk). Returns the pool, or NULL with the record set: GPUMEM_EINVAL
 * (another kind), GPUMEM_ENODEV, GPUMEM_ENOMEM, GPUMEM_ECUDA (e.g. no such device, or a
 * device without memory pools). Thread-safe; the pool may be used from any thread.
 */
GPUMEM_API gpumem_pool *gpumem_pool_create_at(int kind, int device,
                                              const gpumem_pool_options_t *options,
                                              gpumem_site site);
#define gpumem_pool_create(kind, device, options)                                               \
    gpumem_pool_create_at((kind), (device), (options), GPUMEM_SITE_HERE)

/**
 * A block of at least count * size bytes (overflow-checked), aligned to GPUMEM_ALIGNMENT,
 * recorded at the caller's site, of kind GPUMEM_KIND_DEVICE or GPUMEM_KIND_PINNED. Device
 * pool: usable by work on @p stream once the call returns, as cudaMallocAsync; memory
 * released on @p stream is reused at once, memory released on another stream only once the
 * work queued there before the release is done. Pinned pool:
 * @p stream is ignored. Returns NULL with the record set: GPUMEM_EOVERFLOW, GPUMEM_EINVAL
 * (NULL pool), GPUMEM_ENOMEM (after releasing cached blocks and retrying once; the message
 * says what the pool held), GPUMEM_ECUDA. Zero bytes: NULL and GPUMEM_OK. Thread-safe.
 */
GPUMEM_MALLOC_ATTRIBUTE
GPUMEM_API void *gpumem_pool_alloc_at(gpumem_pool *pool, size_t count, size_t size,
                                      cudaStream_t stream, gpumem_site site);
#define gpumem_pool_alloc(pool, count, size, stream)                                            \
    gpumem_pool_alloc_at((pool), (count), (size), (stream), GPUMEM_SITE_HERE)

/**
 * Releases what no live block needs back to CUDA, thread caches included (device pool: after
 * the device finished the work that may still use it): pages no block lies on, segments no
 * live block is carved from. Live blocks are untouched. Returns GPUMEM_OK,
 * GPUMEM_EINVAL (NULL pool) or the CUDA failure. Thread-safe; slow (it synchronizes).
 */
GPUMEM_API int gpumem_pool_trim(gpumem_pool *pool);

/** Fills @p stats with a snapshot. Returns GPUMEM_OK or GPUMEM_EINVAL (NULL argument). No CUDA
 *  call. Thread-safe. */
GPUMEM_API int gpumem_pool_stats(gpumem_pool *pool, gpumem_pool_stats_t *stats);

/**
 * Destroys @p pool: releases everything it holds to CUDA and frees it. With blocks still live
 * it returns GPUMEM_EBUSY, with a message listing each live block (site and size, the first
 * ones), and changes nothing: release them and call again. NULL is a no-op (GPUMEM_OK).
 * Not to be called while another thread uses the pool.
 */
GPUMEM_API int gpumem_pool_destroy_at(gpumem_pool *pool, gpumem_site site);
#define gpumem_pool_destroy(pool) gpumem_pool_destroy_at((pool), GPUMEM_SITE_HERE)
/**@}*/

/* ---- Copies ---- */
/** @name Copies
 * cudaMemcpy without the direction argument, checked against what gpumem knows, and fast from
 * pageable memory. The direction comes from both pointers: a pointer into a live gpumem
 * allocation (interior pointers and pool blocks included) has its allocation's kind; any
 * other pointer is what CUDA says it is (cudaPointerGetAttributes: device, pinned host,
 * managed, or unregistered, which is pageable host memory). Copies of at least
 * GPUMEM_COPY_STAGE_MIN bytes (default 16 MiB) between pageable host memory and device memory
 * go through a ring of pinned staging slots, filled and drained by worker threads while the
 * DMA engine moves the slot before; all others are one cuMemcpyAsync. docs/copies.md has the
 * rules, the options and the numbers.
 *
 * Threads: thread-safe; concurrent copies in the same direction on one device share that
 * direction's staging ring one at a time (one copy already fills the link). The staging rings
 * (pinned memory, events and sleeping worker threads) are made at the first staged copy, per
 * device and direction, and kept until the process ends. The device is the caller's current
 * one; the error record is per thread. */
/**@{*/
/**
 * Copies @p bytes from @p src to @p dst and returns once the data is in @p dst, like
 * cudaMemcpy with cudaMemcpyDefault: the copy is queued on the legacy default stream, so it
 * also waits for the work that stream waits for. Errors (nothing copied, record and handler):
 * - GPUMEM_EINVAL: @p dst or @p src NULL with @p bytes > 0; the ranges overlap; the range
 *   from a pointer into a gpumem allocation runs past its end (the message names the
 *   allocation's kind, size and site, the offset, and by how many bytes it overruns);
 * - GPUMEM_ECUDA / GPUMEM_ESTICKY / GPUMEM_ENODEV: CUDA refused (the message names the CUDA
 *   call); after a failed transfer the destination may hold part of the data.
 * @p bytes 0 does nothing and returns GPUMEM_OK (NULL pointers allowed). The record is reset
 * to GPUMEM_OK on success; requested holds @p bytes on failure.
 */
GPUMEM_API int gpumem_copy_at(void *dst, const void *src, size_t bytes, gpumem_site site);
#define gpumem_copy(dst, src, bytes) gpumem_copy_at((dst), (src), (bytes), GPUMEM_SITE_HERE)

/**
 * As gpumem_copy(), in order on @p stream, returning as cudaMemcpyAsync does: @p src may be
 * reused (overwritten, freed) as soon as the call returns; a pageable @p dst is complete on
 * return; any other @p dst is complete once @p stream reaches the copy (synchronize the
 * stream or an event recorded after it). A staged copy from pageable memory returns once its
 * last slot is filled and queued, so at most GPUMEM_COPY_SLOTS transfers are still in flight.
 * Like cudaMemcpyAsync from or to pageable memory, the call may wait for work already queued
 * on @p stream. Errors as gpumem_copy().
 */
GPUMEM_API int gpumem_copy_async_at(void *dst, const void *src, size_t bytes,
                                    cudaStream_t stream, gpumem_site site);
#define gpumem_copy_async(dst, src, bytes, stream)                                              \
    gpumem_copy_async_at((dst), (src), (bytes), (stream), GPUMEM_SITE_HERE)
/**@}*/

#ifdef __cplusplus
}
#endif
#endif /* GPUMEM_H */

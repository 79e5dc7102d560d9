/* The backend table: the only door through which gpumem reaches CUDA.
 *
 * Two implementations: the real one (backend_cuda.c, the CUDA driver API loaded at run time)
 * and the simulated device (backend_sim.c, memory in host RAM). Each entry has the semantics
 * of the CUDA runtime call it is named after, including its answers to misuse
 * (docs/cuda-facts.md), and returns a cudaError_t value as an int (0 = cudaSuccess). */
#ifndef GPUMEM_CUDA_BACKEND_H
#define GPUMEM_CUDA_BACKEND_H

#include <stddef.h>

#include <cuda_runtime_api.h>

/* What cudaPointerGetAttributes says memory is (its cudaMemoryType values). */
enum { GPUMEM__PTR_UNREGISTERED = 0, GPUMEM__PTR_HOST = 1, GPUMEM__PTR_DEVICE = 2,
       GPUMEM__PTR_MANAGED = 3 };

typedef struct gpumem__backend {
    const char *name;
    /* Loads and initializes; on failure writes CUDA's reason into why. */
    int (*init)(char *why, size_t n);
    int (*device_count)(int *count);
    int (*device_get)(int ordinal, char *name, size_t n, size_t *total, int *cc_major,
                      int *cc_minor);
    /* The caller's current device (the context current on this thread, or device 0). */
    int (*current_device)(int *ordinal);
    /* cudaSetDevice: makes the device's primary context current on this thread. */
    int (*set_device)(int ordinal);
    /* For one gpumem call on another device's memory: makes ordinal current on this thread
     * unless it is already, and sets *token so that device_pop(token) restores the caller's
     * current device (token 0: nothing was changed). On failure nothing was changed. */
    int (*device_push)(int ordinal, int *token);
    void (*device_pop)(int token);
    /* cuDeviceCanAccessPeer: whether device can reach peer's memory directly (0 for itself). */
    int (*can_access_peer)(int device, int peer, int *can);
    /* cudaDeviceEnablePeerAccess (enable 1) or cudaDeviceDisablePeerAccess (0) of peer's memory
     * from device, whatever device is current: cudaErrorPeerAccessAlreadyEnabled (704) when
     * it is enabled already, cudaErrorPeerAccessNotEnabled (705) when it was not, and
     * cudaErrorPeerAccessUnsupported (217) where device cannot reach peer. */
    int (*peer_access)(int device, int peer, int enable);
    /* The device whose memory p is (cuPointerGetAttribute, DEVICE_ORDINAL). */
    int (*pointer_device)(const void *p, int *ordinal);
    /* cudaMemGetInfo for the given device. */
    int (*mem_info)(int ordinal, size_t *free_bytes, size_t *total_bytes);
    int (*malloc_device)(void **p, size_t bytes);                       /* cudaMalloc */
    int (*malloc_managed)(void **p, size_t bytes, unsigned flags);      /* cudaMallocManaged */
    int (*host_alloc)(void **p, size_t bytes, unsigned flags);          /* cudaHostAlloc */
    int (*malloc_async)(void **p, size_t bytes, cudaStream_t stream);   /* cudaMallocAsync */
    int (*free)(void *p);                                               /* cudaFree */
    int (*free_host)(void *p);                                          /* cudaFreeHost */
    int (*free_async)(void *p, cudaStream_t stream);                    /* cudaFreeAsync */
    int (*host_device_ptr)(void **dev, void *host);          /* cudaHostGetDevicePointer */
    int (*pointer_type)(const void *p, int *type);           /* cudaPointerGetAttributes */
    /* cudaMemPrefetchAsync: device is an ordinal or -1 (cudaCpuDeviceId) for the host. */
    int (*prefetch)(const void *p, size_t bytes, int device, cudaStream_t stream);
    /* cudaMemAdvise: advice is a cudaMemoryAdvise value; device an ordinal or -1 (host). */
    int (*advise)(const void *p, size_t bytes, int advice, int device);
    /* Pools. cuMemPoolCreate of device memory on ordinal, with its release threshold
     * at UINT64_MAX so that freed memory stays cached in the pool. */
    int (*mempool_create)(int ordinal, void **pool);
    /* cuMemAllocFromPoolAsync; memory it gives is released by free or free_async. */
    int (*mempool_alloc)(void *pool, void **p, size_t bytes, cudaStream_t stream);
    int (*mempool_trim)(void *pool, size_t keep_bytes);                  /* cuMemPoolTrimTo */
    int (*mempool_destroy)(void *pool);                                   /* cuMemPoolDestroy */
    /* Copies. cuMemcpyAsync with unified addressing: the direction comes from the
     * addresses. As CUDA documents, a copy from pageable memory returns once the source was
     * read, and one to pageable memory or between two host buffers returns once done. */
    int (*memcpy_async)(void *dst, const void *src, size_t bytes, cudaStream_t stream);
    /* cuMemcpyPeerAsync between device memory of two devices, in their primary contexts. */
    int (*memcpy_peer_async)(void *dst, int dst_device, const void *src, int src_device,
                             size_t bytes, cudaStream_t stream);
    int (*stream_sync)(cudaStream_t stream);                              /* cuStreamSynchronize */
    /* Events in the current context, without timing (cuEventCreate, CU_EVENT_DISABLE_TIMING). */
    int (*event_create)(void **event);
    int (*event_record)(void *event, cudaStream_t stream);                /* cuEventRecord */
    int (*event_sync)(void *event);                                       /* cuEventSynchronize */
    int (*event_destroy)(void *event);                                    /* cuEventDestroy */
    /* The registration cache: cuMemHostRegister (flags 0) of a page-aligned range of pageable
     * memory, and cuMemHostUnregister of its start. */
    int (*host_register)(void *p, size_t bytes);
    int (*host_unregister)(void *p);
    /* fork(): takes (GPUMEM__FORK_PREPARE) and releases (PARENT, CHILD) the backend's own
     * locks, so that a child never finds one held by a thread it does not have (fork.c). */
    void (*at_fork)(int phase);
    /* Virtual memory management, for the device pools' segments that grow and shrink by
     * pages (pool_arena.c). The granularity of device ordinal's physical memory
     * (cuMemGetAllocationGranularity, recommended), or 0 when the device cannot map memory
     * into reserved address ranges (CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED). */
    int (*vmm_granularity)(int ordinal, size_t *granularity);
    int (*vmm_reserve)(void **va, size_t bytes);            /* cuMemAddressReserve */
    int (*vmm_unreserve)(void *va, size_t bytes);           /* cuMemAddressFree */
    /* cuMemCreate of bytes of device ordinal's memory; the handle is released by vmm_release,
     * and the memory goes once the handle is released and its last mapping unmapped. */
    int (*vmm_create)(unsigned long long *handle, size_t bytes, int ordinal);
    int (*vmm_release)(unsigned long long handle);          /* cuMemRelease */
    /* cuMemMap of the whole handle at va, then cuMemSetAccess: read and write for ordinal and
     * every device that can reach ordinal's memory directly (as cudaMalloc's memory is, once
     * peer access is enabled). A handle may be mapped at several addresses at once. */
    int (*vmm_map)(void *va, size_t bytes, unsigned long long handle, int ordinal);
    int (*vmm_unmap)(void *va, size_t bytes);               /* cuMemUnmap */
    /* cuEventQuery: 0 when the work recorded before the event is done, else
     * cudaErrorNotReady or an error. */
    int (*event_query)(void *event);
    int (*stream_wait_event)(cudaStream_t stream, void *event); /* cuStreamWaitEvent */
    int (*device_sync)(void); /* cuCtxSynchronize: the current context's work is done */
} gpumem__backend;

extern const gpumem__backend gpumem__backend_cuda;
extern const gpumem__backend gpumem__backend_sim;

/* The CUDA runtime's name and message for a cudaError_t value, from a table generated at
 * build time from the CUDA runtime itself; NULL for values it does not know. */
const char *gpumem__cuda_error_name(int err);
const char *gpumem__cuda_error_string(int err);
/* Whether the error leaves the context unusable (every later call fails too). */
int gpumem__cuda_error_is_sticky(int err);

/* Simulated device, for tests: make the context sticky-dead with this error (0 revives it),
 * and count what the simulated driver holds. */
void gpumem__sim_poison(int cuda_error);
size_t gpumem__sim_live_count(void);
/* Simulated device, for tests: after `after` more successful copies (memcpy_async), the next
 * one fails with cuda_error, once; cuda_error 0 cancels. Not sticky, unlike a poison. */
void gpumem__sim_fail_copy(unsigned after, int cuda_error);
/* Simulated device, for tests: peer copies (memcpy_peer_async) made so far, and of them those
 * made while the destination's device had peer access to the source's enabled. */
unsigned long long gpumem__sim_peer_copies(void);
unsigned long long gpumem__sim_peer_copies_enabled(void);
/* Simulated device, for tests: host ranges registered now (host_register), and whether p lies
 * in one; after `after` more successful registrations the next one fails with cuda_error. */
size_t gpumem__sim_registered_count(void);
int gpumem__sim_registered(const void *p);
void gpumem__sim_fail_register(unsigned after, int cuda_error);
/* Simulated device, for tests: the next copy frees p (malloc memory) while it runs, as the
 * driver frees blocks of its own inside its calls. */
void gpumem__sim_free_during_copy(void *p);

#endif

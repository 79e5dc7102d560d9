/* The real backend: the CUDA driver API, loaded at run time from libcuda.so.1.
 *
 * Why the driver and not the runtime: nvcc links the CUDA runtime statically into every
 * program, so a gpumem that linked a runtime would put a second one in the process, with its
 * own error state and current device. The driver is one per process. gpumem works in the
 * context current on the calling thread, which is the primary context the caller's runtime
 * made current (cudaSetDevice or any runtime call does); on a thread with none, it makes
 * device 0's primary context current, as the runtime would. Pointers and streams are the
 * driver's own objects, so they cross freely; the caller's cudaGetLastError never sees
 * gpumem's errors (an out-of-memory here cannot surface at the caller's next call).
 *
 * Loading at run time also means the library builds and links on machines without a driver,
 * and reports GPUMEM_ENODEV with the loader's or the driver's reason instead of failing to
 * start. CUresult values equal the cudaError_t values for every error this code returns. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../internal.h"
#include "backend.h"

#define GPUMEM__DRIVER_FUNCS(X)                                                                  \
    X(cuInit, (unsigned))                                                                        \
    X(cuDeviceGetCount, (int *))                                                                 \
    X(cuDeviceGet, (CUdevice *, int))                                                            \
    X(cuDeviceGetName, (char *, int, CUdevice))                                                  \
    X(cuDeviceTotalMem_v2, (size_t *, CUdevice))                                                 \
    X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))                               \
    X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                         \
    X(cuCtxGetCurrent, (CUcontext *))                                                            \
    X(cuCtxSetCurrent, (CUcontext))                                                              \
    X(cuCtxPushCurrent_v2, (CUcontext))                                                          \
    X(cuCtxPopCurrent_v2, (CUcontext *))                                                         \
    X(cuCtxGetDevice, (CUdevice *))                                                              \
    X(cuMemGetInfo_v2, (size_t *, size_t *))                                                     \
    X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                                    \
    X(cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned))                                      \
    X(cuMemAllocHost_v2, (void **, size_t))                                                      \
    X(cuMemHostAlloc, (void **, size_t, unsigned))                                               \
    X(cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))                                        \
    X(cuMemFree_v2, (CUdeviceptr))                                                               \
    X(cuMemFreeHost, (void *))                                                                   \
    X(cuMemFreeAsync, (CUdeviceptr, CUstream))                                                   \
    X(cuMemHostGetDevicePointer_v2, (CUdeviceptr *, void *, unsigned))                           \
    X(cuPointerGetAttribute, (void *, CUpointer_attribute, CUdeviceptr))                       \
    X(cuDeviceCanAccessPeer, (int *, CUdevice, CUdevice))                                        \
    X(cuCtxEnablePeerAccess, (CUcontext, unsigned))                                              \
    X(cuCtxDisablePeerAccess, (CUcontext))                                                       \
    X(cuMemcpyPeerAsync, (CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream))     \
    X(cuMemPrefetchAsync_v2, (CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream))          \
    X(cuMemAdvise_v2, (CUdeviceptr, size_t, CUmem_advise, CUmemLocation))                      \
    X(cuMemPoolCreate, (CUmemoryPool *, const CUmemPoolProps *))                                 \
    X(cuMemPoolSetAttribute, (CUmemoryPool, CUmemPool_attribute, void *))                        \
    X(cuMemAllocFromPoolAsync, (CUdeviceptr *, size_t, CUmemoryPool, CUstream))                  \
    X(cuMemPoolTrimTo, (CUmemoryPool, size_t))                                                   \
    X(cuMemPoolDestroy, (CUmemoryPool))                                                          \
    X(cuMemcpyAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                               \
    X(cuStreamSynchronize, (CUstream))                                                           \
    X(cuEventCreate, (CUevent *, unsigned))                                                      \
    X(cuEventRecord, (CUevent, CUstream))                                                        \
    X(cuEventSynchronize, (CUevent))                                                             \
    X(cuEventDestroy_v2, (CUevent))                                                              \
    X(cuMemHostRegister_v2, (void *, size_t, unsigned))                                          \
    X(cuMemHostUnregister, (void *))                                                            \
    X(cuMemGetAllocationGranularity,                                                             \
      (size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags))                 \
    X(cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))     \
    X(cuMemAddressFree, (CUdeviceptr, size_t))                                                   \
    X(cuMemCreate, (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,         \
                    unsigned long long))                                                         \
    X(cuMemRelease, (CUmemGenericAllocationHandle))                                              \
    X(cuMemMap, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
    X(cuMemUnmap, (CUdeviceptr, size_t))                                                         \
    X(cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))                    \
    X(cuEventQuery, (CUevent))                                                                   \
    X(cuStreamWaitEvent, (CUstream, CUevent, unsigned))                                          \
    X(cuCtxSynchronize, (void))

static struct {
#define GPUMEM__DRIVER_FIELD(name, args) CUresult(*name) args;
    GPUMEM__DRIVER_FUNCS(GPUMEM__DRIVER_FIELD)
#undef GPUMEM__DRIVER_FIELD
} drv;

/* Primary contexts retained by gpumem, one per device, made current on threads that have
 * none; retained for the life of the process (the runtime's own use shares them). */
#define MAX_DEVICES 64
static CUcontext primary[MAX_DEVICES];
static pthread_mutex_t primary_lock = PTHREAD_MUTEX_INITIALIZER;

/* A CUDA context does not survive fork() (CUDA's own rule: a child may not use the parent's
 * CUDA); the lock is still taken so that the child's copy of the table is whole. */
static void cuda_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        pthread_mutex_lock(&primary_lock);
    else
        pthread_mutex_unlock(&primary_lock);
}

static CUresult primary_ctx(int ordinal, CUcontext *out)
{
    if (ordinal < 0 || ordinal >= MAX_DEVICES)
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&primary_lock);
    if (!primary[ordinal]) {
        CUdevice dev;
        r = drv.cuDeviceGet(&dev, ordinal);
        if (r == CUDA_SUCCESS)
            r = drv.cuDevicePrimaryCtxRetain(&primary[ordinal], dev);
    }
    *out = primary[ordinal];
    pthread_mutex_unlock(&primary_lock);
    return r;
}

/* Makes sure a context is current on this thread; returns a CUresult. */
static CUresult ensure_ctx(void)
{
    CUcontext c = NULL;
    CUresult r = drv.cuCtxGetCurrent(&c);
    if (r != CUDA_SUCCESS || c)
        return r;
    r = primary_ctx(0, &c);
    return r == CUDA_SUCCESS ? drv.cuCtxSetCurrent(c) : r;
}

static int cuda_init(char *why, size_t n)
{
    const char *path = gpumem__opt_str(GPUMEM__OPT_LIBCUDA);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *msg = dlerror();
        snprintf(why, n, "cannot load the CUDA driver (%s): %s; is the NVIDIA driver installed?",
                 path, msg ? msg : "unknown reason");
        return -1;
    }
#define GPUMEM__DRIVER_LOAD(name, args)                                                          \
    *(void **)(&drv.name) = dlsym(lib, #name);                                                   \
    if (!drv.name) {                                                                             \
        snprintf(why, n, "the CUDA driver %s lacks %s: the driver is too old for gpumem "      \
                         "(it needs CUDA 12.2 or newer)", path, #name);                          \
        return -1;                                                                               \
    }
    GPUMEM__DRIVER_FUNCS(GPUMEM__DRIVER_LOAD)
#undef GPUMEM__DRIVER_LOAD
    CUresult r = drv.cuInit(0);
    int count = 0;
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGetCount(&count);
    if (r == CUDA_SUCCESS && count == 0)
        r = CUDA_ERROR_NO_DEVICE;
    if (r != CUDA_SUCCESS) {
        const char *name = gpumem__cuda_error_name((int)r);
        const char *text = gpumem__cuda_error_string((int)r);
        snprintf(why, n, "the CUDA driver (%s) says %s: %s", path, name ? name : "error",
                 text ? text : "unknown error");
        return (int)r;
    }
    return 0;
}

static int cuda_device_count(int *count)
{
    return (int)drv.cuDeviceGetCount(count);
}

static int cuda_device_get(int ordinal, char *name, size_t n, size_t *total, int *major,
                           int *minor)
{
    CUdevice dev;
    CUresult r = drv.cuDeviceGet(&dev, ordinal);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGetName(name, (int)n, dev);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceTotalMem_v2(total, dev);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    return (int)r;
}

static int cuda_current_device(int *ordinal)
{
    CUdevice dev = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuCtxGetDevice(&dev);
    *ordinal = (int)dev;
    return (int)r;
}

/* cudaSetDevice does the same: the device's primary context becomes current on the thread,
 * for gpumem and for the caller's runtime alike (the runtime works in the current context). */
static int cuda_set_device(int ordinal)
{
    CUcontext c;
    CUresult r = primary_ctx(ordinal, &c);
    return (int)(r == CUDA_SUCCESS ? drv.cuCtxSetCurrent(c) : r);
}

/* A context of the device is current already (the caller's, primary or not): nothing to do.
 * Otherwise the device's primary context is pushed, and popped by device_pop. */
static int cuda_device_push(int ordinal, int *token)
{
    *token = 0;
    CUdevice dev = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuCtxGetDevice(&dev);
    if (r != CUDA_SUCCESS || (int)dev == ordinal)
        return (int)r;
    CUcontext c;
    r = primary_ctx(ordinal, &c);
    if (r == CUDA_SUCCESS)
        r = drv.cuCtxPushCurrent_v2(c);
    *token = r == CUDA_SUCCESS;
    return (int)r;
}

static void cuda_device_pop(int token)
{
    CUcontext c;
    if (token) /* pops what device_push pushed; the call it framed gave the answer */
        (void)drv.cuCtxPopCurrent_v2(&c);
}

static int cuda_can_access_peer(int device, int peer, int *can)
{
    CUdevice a, b;
    *can = 0;
    if (device == peer)
        return (int)drv.cuDeviceGet(&a, device);
    CUresult r = drv.cuDeviceGet(&a, device);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGet(&b, peer);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceCanAccessPeer(can, a, b);
    return (int)r;
}

/* cudaDeviceEnablePeerAccess and cudaDeviceDisablePeerAccess: in device's primary context,
 * pushed for the call, about peer's primary context. */
static int cuda_peer_access(int device, int peer, int enable)
{
    CUcontext dc, pc;
    CUresult r = primary_ctx(device, &dc);
    if (r == CUDA_SUCCESS)
        r = primary_ctx(peer, &pc);
    if (r != CUDA_SUCCESS)
        return (int)r;
    r = drv.cuCtxPushCurrent_v2(dc);
    if (r != CUDA_SUCCESS)
        return (int)r;
    r = enable ? drv.cuCtxEnablePeerAccess(pc, 0) : drv.cuCtxDisablePeerAccess(pc);
    (void)drv.cuCtxPopCurrent_v2(&dc); /* pops what was pushed above; r is the answer */
    return (int)r;
}

static int cuda_pointer_device(const void *p, int *ordinal)
{
    int dev = -1;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                      (CUdeviceptr)(uintptr_t)p);
    *ordinal = dev;
    return (int)r;
}

/* cudaMemGetInfo of any device: in its primary context, pushed for the call. */
static int cuda_mem_info(int ordinal, size_t *free_bytes, size_t *total)
{
    CUcontext c;
    CUresult r = primary_ctx(ordinal, &c);
    if (r != CUDA_SUCCESS)
        return (int)r;
    r = drv.cuCtxPushCurrent_v2(c);
    if (r != CUDA_SUCCESS)
        return (int)r;
    r = drv.cuMemGetInfo_v2(free_bytes, total);
    (void)drv.cuCtxPopCurrent_v2(&c); /* pops what was pushed above; r is the answer */
    return (int)r;
}

static int cuda_malloc_device(void **p, size_t bytes)
{
    CUdeviceptr d = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && bytes)
        r = drv.cuMemAlloc_v2(&d, bytes);
    *p = (void *)(uintptr_t)d;
    return (int)r;
}

static int cuda_malloc_managed(void **p, size_t bytes, unsigned flags)
{
    CUdeviceptr d = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && bytes)
        r = drv.cuMemAllocManaged(&d, bytes, flags);
    *p = (void *)(uintptr_t)d;
    return (int)r;
}

static int cuda_host_alloc(void **p, size_t bytes, unsigned flags)
{
    *p = NULL;
    CUresult r = ensure_ctx();
    if (r != CUDA_SUCCESS || !bytes)
        return (int)r;
    /* cudaMallocHost is cuMemAllocHost; cudaHostAlloc's flags are cuMemHostAlloc's. */
    return (int)(flags ? drv.cuMemHostAlloc(p, bytes, flags) : drv.cuMemAllocHost_v2(p, bytes));
}

static int cuda_malloc_async(void **p, size_t bytes, cudaStream_t stream)
{
    CUdeviceptr d = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && bytes)
        r = drv.cuMemAllocAsync(&d, bytes, (CUstream)stream);
    *p = (void *)(uintptr_t)d;
    return (int)r;
}

static int cuda_free(void *p)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && p)
        r = drv.cuMemFree_v2((CUdeviceptr)(uintptr_t)p);
    return (int)r;
}

static int cuda_free_host(void *p)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && p)
        r = drv.cuMemFreeHost(p);
    return (int)r;
}

static int cuda_free_async(void *p, cudaStream_t stream)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && p)
        r = drv.cuMemFreeAsync((CUdeviceptr)(uintptr_t)p, (CUstream)stream);
    return (int)r;
}

static int cuda_host_device_ptr(void **dev, void *host)
{
    CUdeviceptr d = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuMemHostGetDevicePointer_v2(&d, host, 0);
    *dev = (void *)(uintptr_t)d;
    return (int)r;
}

static int cuda_pointer_type(const void *p, int *type)
{
    CUresult r = ensure_ctx();
    if (r != CUDA_SUCCESS)
        return (int)r;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)p;
    unsigned managed = 0;
    CUmemorytype mt = (CUmemorytype)0;
    if (drv.cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d) != CUDA_SUCCESS) {
        *type = GPUMEM__PTR_UNREGISTERED; /* the driver does not know the address */
        return 0;
    }
    if (drv.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, d) == CUDA_SUCCESS &&
        managed)
        *type = GPUMEM__PTR_MANAGED;
    else if (mt == CU_MEMORYTYPE_HOST)
        *type = GPUMEM__PTR_HOST;
    else if (mt == CU_MEMORYTYPE_DEVICE)
        *type = GPUMEM__PTR_DEVICE;
    else
        *type = GPUMEM__PTR_UNREGISTERED;
    return 0;
}

/* cudaCpuDeviceId (-1) is the host. CUDA 12.2 replaced the device argument of the prefetch
 * and advice calls with a location, and CUDA 13's cuda.h declares only that form, so both are
 * loaded by their exported _v2 names (drivers since 12.2 have them). */
static CUmemLocation location_of(int device)
{
    CUmemLocation loc;
    loc.type = device == -1 ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
    loc.id = device == -1 ? 0 : device;
    return loc;
}

static int cuda_prefetch(const void *p, size_t bytes, int device, cudaStream_t stream)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuMemPrefetchAsync_v2((CUdeviceptr)(uintptr_t)p, bytes, location_of(device), 0,
                                      (CUstream)stream);
    return (int)r;
}

static int cuda_advise(const void *p, size_t bytes, int advice, int device)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuMemAdvise_v2((CUdeviceptr)(uintptr_t)p, bytes, (CUmem_advise)advice,
                               location_of(device));
    return (int)r;
}

/* A device pool of gpumem's own rather than the device's default pool, so that its release
 * threshold (kept at the maximum: freed memory stays cached for reuse instead of going back
 * to the driver at each synchronization) and its trimming affect nobody else. Created in the
 * device's primary context, pushed for the call. */
static int cuda_mempool_create(int ordinal, void **pool)
{
    CUcontext c;
    CUmemoryPool mp = NULL;
    *pool = NULL;
    CUresult r = primary_ctx(ordinal, &c);
    if (r != CUDA_SUCCESS)
        return (int)r;
    r = drv.cuCtxPushCurrent_v2(c);
    if (r != CUDA_SUCCESS)
        return (int)r;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = ordinal;
    r = drv.cuMemPoolCreate(&mp, &props);
    if (r == CUDA_SUCCESS) {
        cuuint64_t threshold = UINT64_MAX;
        r = drv.cuMemPoolSetAttribute(mp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold);
        if (r != CUDA_SUCCESS)
            (void)drv.cuMemPoolDestroy(mp); /* r, the first failure, is what is reported */
        else
            *pool = mp;
    }
    (void)drv.cuCtxPopCurrent_v2(&c);
    return (int)r;
}

static int cuda_mempool_alloc(void *pool, void **p, size_t bytes, cudaStream_t stream)
{
    CUdeviceptr d = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && bytes)
        r = drv.cuMemAllocFromPoolAsync(&d, bytes, (CUmemoryPool)pool, (CUstream)stream);
    *p = (void *)(uintptr_t)d;
    return (int)r;
}

static int cuda_mempool_trim(void *pool, size_t keep_bytes)
{
    return (int)drv.cuMemPoolTrimTo((CUmemoryPool)pool, keep_bytes);
}

static int cuda_mempool_destroy(void *pool)
{
    return (int)drv.cuMemPoolDestroy((CUmemoryPool)pool);
}

/* Copies: with unified addressing cuMemcpyAsync tells host from device memory by address, as
 * cudaMemcpyAsync with cudaMemcpyDefault does, pageable host memory included. */
static int cuda_memcpy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS && bytes)
        r = drv.cuMemcpyAsync((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, bytes,
                              (CUstream)stream);
    return (int)r;
}

/* cudaMemcpyPeerAsync: each pointer named with its device's primary context, the copy on the
 * caller's stream. */
static int cuda_memcpy_peer_async(void *dst, int dst_device, const void *src, int src_device,
                                  size_t bytes, cudaStream_t stream)
{
    CUcontext dc, sc;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = primary_ctx(dst_device, &dc);
    if (r == CUDA_SUCCESS)
        r = primary_ctx(src_device, &sc);
    if (r == CUDA_SUCCESS && bytes)
        r = drv.cuMemcpyPeerAsync((CUdeviceptr)(uintptr_t)dst, dc, (CUdeviceptr)(uintptr_t)src,
                                  sc, bytes, (CUstream)stream);
    return (int)r;
}

static int cuda_stream_sync(cudaStream_t stream)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuStreamSynchronize((CUstream)stream);
    return (int)r;
}

static int cuda_event_create(void **event)
{
    CUevent ev = NULL;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
    *event = ev;
    return (int)r;
}

static int cuda_event_record(void *event, cudaStream_t stream)
{
    return (int)drv.cuEventRecord((CUevent)event, (CUstream)stream);
}

static int cuda_event_sync(void *event)
{
    return (int)drv.cuEventSynchronize((CUevent)event);
}

static int cuda_event_destroy(void *event)
{
    return (int)drv.cuEventDestroy_v2((CUevent)event);
}

static int cuda_host_register(void *p, size_t bytes)
{
    CUresult r = ensure_ctx();
    return (int)(r == CUDA_SUCCESS ? drv.cuMemHostRegister_v2(p, bytes, 0) : r);
}

static int cuda_host_unregister(void *p)
{
    CUresult r = ensure_ctx();
    return (int)(r == CUDA_SUCCESS ? drv.cuMemHostUnregister(p) : r);
}

/* ---- virtual memory management (the device pools' page-mapped segments) ---- */

static CUmemAllocationProp device_memory_prop(int ordinal)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    return prop;
}

static int cuda_vmm_granularity(int ordinal, size_t *granularity)
{
    CUdevice dev;
    int supported = 0;
    *granularity = 0;
    CUresult r = drv.cuDeviceGet(&dev, ordinal);
    if (r == CUDA_SUCCESS)
        r = drv.cuDeviceGetAttribute(
            &supported, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    if (r != CUDA_SUCCESS || !supported)
        return (int)r;
    CUmemAllocationProp prop = device_memory_prop(ordinal);
    return (int)drv.cuMemGetAllocationGranularity(granularity, &prop,
                                                  CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
}

static int cuda_vmm_reserve(void **va, size_t bytes)
{
    CUdeviceptr d = 0;
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuMemAddressReserve(&d, bytes, 0, 0, 0);
    *va = (void *)(uintptr_t)d;
    return (int)r;
}

static int cuda_vmm_unreserve(void *va, size_t bytes)
{
    return (int)drv.cuMemAddressFree((CUdeviceptr)(uintptr_t)va, bytes);
}

static int cuda_vmm_create(unsigned long long *handle, size_t bytes, int ordinal)
{
    CUmemGenericAllocationHandle h = 0;
    CUmemAllocationProp prop = device_memory_prop(ordinal);
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuMemCreate(&h, bytes, &prop, 0);
    *handle = (unsigned long long)h;
    return (int)r;
}

static int cuda_vmm_release(unsigned long long handle)
{
    return (int)drv.cuMemRelease((CUmemGenericAllocationHandle)handle);
}

/* Mapped memory is reachable only by the devices given access. cudaMalloc's is reachable by
 * every peer that enables peer access, so the pages get the same: the owner and each device
 * that can reach it directly (PyTorch's expandable segments do the same for their peers).
 * Which devices can reach which does not change while the process runs, so each device's list
 * is read from the driver once. */
static struct {
    CUmemAccessDesc desc[MAX_DEVICES];
    size_t n;
    atomic_int ready;
} access_of[MAX_DEVICES];

static size_t access_read(int ordinal, CUmemAccessDesc *desc, size_t max)
{
    int count = 0;
    size_t n = 0;
    CUdevice owner;
    memset(desc, 0, max * sizeof *desc);
    if (drv.cuDeviceGetCount(&count) != CUDA_SUCCESS || drv.cuDeviceGet(&owner, ordinal) != CUDA_SUCCESS)
        count = 0;
    for (int d = -1; d < count && n < max; d++) { /* -1: the owner first */
        int can = d < 0;
        CUdevice peer;
        if (d == ordinal || (!can && (drv.cuDeviceGet(&peer, d) != CUDA_SUCCESS ||
                                      drv.cuDeviceCanAccessPeer(&can, peer, owner) != CUDA_SUCCESS)))
            continue;
        if (!can)
            continue;
        desc[n].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        desc[n].location.id = d < 0 ? ordinal : d;
        desc[n].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        n++;
    }
    return n;
}

static const CUmemAccessDesc *access_list(int ordinal, size_t *n)
{
    if (!atomic_load_explicit(&access_of[ordinal].ready, memory_order_acquire)) {
        pthread_mutex_lock(&primary_lock);
        if (!atomic_load_explicit(&access_of[ordinal].ready, memory_order_relaxed)) {
            access_of[ordinal].n = access_read(ordinal, access_of[ordinal].desc, MAX_DEVICES);
            atomic_store_explicit(&access_of[ordinal].ready, 1, memory_order_release);
        }
        pthread_mutex_unlock(&primary_lock);
    }
    *n = access_of[ordinal].n;
    return access_of[ordinal].desc;
}

static int cuda_vmm_map(void *va, size_t bytes, unsigned long long handle, int ordinal)
{
    if (ordinal < 0 || ordinal >= MAX_DEVICES)
        return (int)CUDA_ERROR_INVALID_DEVICE;
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)va;
    CUresult r = drv.cuMemMap(d, bytes, 0, (CUmemGenericAllocationHandle)handle, 0);
    if (r != CUDA_SUCCESS)
        return (int)r;
    size_t ndesc = 0;
    const CUmemAccessDesc *access = access_list(ordinal, &ndesc);
    r = drv.cuMemSetAccess(d, bytes, access, ndesc);
    if (r != CUDA_SUCCESS)
        (void)drv.cuMemUnmap(d, bytes); /* r, the first failure, is what is reported */
    return (int)r;
}

static int cuda_vmm_unmap(void *va, size_t bytes)
{
    return (int)drv.cuMemUnmap((CUdeviceptr)(uintptr_t)va, bytes);
}

static int cuda_event_query(void *event)
{
    return (int)drv.cuEventQuery((CUevent)event);
}

static int cuda_stream_wait_event(cudaStream_t stream, void *event)
{
    CUresult r = ensure_ctx();
    if (r == CUDA_SUCCESS)
        r = drv.cuStreamWaitEvent((CUstream)stream, (CUevent)event, 0);
    return (int)r;
}

static int cuda_device_sync(void)
{
    CUresult r = ensure_ctx();
    return (int)(r == CUDA_SUCCESS ? drv.cuCtxSynchronize() : r);
}

const gpumem__backend gpumem__backend_cuda = {
    "cuda",
    cuda_init,
    cuda_device_count,
    cuda_device_get,
    cuda_current_device,
    cuda_set_device,
    cuda_device_push,
    cuda_device_pop,
    cuda_can_access_peer,
    cuda_peer_access,
    cuda_pointer_device,
    cuda_mem_info,
    cuda_malloc_device,
    cuda_malloc_managed,
    cuda_host_alloc,
    cuda_malloc_async,
    cuda_free,
    cuda_free_host,
    cuda_free_async,
    cuda_host_device_ptr,
    cuda_pointer_type,
    cuda_prefetch,
    cuda_advise,
    cuda_mempool_create,
    cuda_mempool_alloc,
    cuda_mempool_trim,
    cuda_mempool_destroy,
    cuda_memcpy_async,
    cuda_memcpy_peer_async,
    cuda_stream_sync,
    cuda_event_create,
    cuda_event_record,
    cuda_event_sync,
    cuda_event_destroy,
    cuda_host_register,
    cuda_host_unregister,
    cuda_at_fork,
    cuda_vmm_granularity,
    cuda_vmm_reserve,
    cuda_vmm_unreserve,
    cuda_vmm_create,
    cuda_vmm_release,
    cuda_vmm_map,
    cuda_vmm_unmap,
    cuda_event_query,
    cuda_stream_wait_event,
    cuda_device_sync,
};

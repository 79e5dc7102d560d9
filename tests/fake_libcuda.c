/* A stand-in for libcuda.so.1 whose driver reports no device, to test gpumem's ENODEV path
 * on any machine. Built without FAKE_COMPLETE it also lacks a function, as a driver too old
 * for gpumem would. */
#include <cuda.h>

/* Exported whatever the build's visibility preset: the loader must find these. */
#pragma GCC visibility push(default)

#define FAIL_ALL(X)                                                                              \
    X(cuDeviceGetCount, int *a) X(cuDeviceGet, CUdevice *a, int b)                               \
    X(cuDeviceGetName, char *a, int b, CUdevice c) X(cuDeviceTotalMem_v2, size_t *a, CUdevice b) \
    X(cuDeviceGetAttribute, int *a, CUdevice_attribute b, CUdevice c)                            \
    X(cuDevicePrimaryCtxRetain, CUcontext *a, CUdevice b) X(cuCtxGetCurrent, CUcontext *a)       \
    X(cuCtxSetCurrent, CUcontext a) X(cuCtxPushCurrent_v2, CUcontext a)                          \
    X(cuCtxPopCurrent_v2, CUcontext *a) X(cuCtxGetDevice, CUdevice *a)                           \
    X(cuMemGetInfo_v2, size_t *a, size_t *b) X(cuMemAlloc_v2, CUdeviceptr *a, size_t b)          \
    X(cuMemAllocManaged, CUdeviceptr *a, size_t b, unsigned c)                                   \
    X(cuMemAllocHost_v2, void **a, size_t b) X(cuMemHostAlloc, void **a, size_t b, unsigned c)   \
    X(cuMemFree_v2, CUdeviceptr a) X(cuMemFreeHost, void *a)                                     \
    X(cuMemHostGetDevicePointer_v2, CUdeviceptr *a, void *b, unsigned c)                         \
    X(cuPointerGetAttribute, void *a, CUpointer_attribute b, CUdeviceptr c)                     \
    X(cuDeviceCanAccessPeer, int *a, CUdevice b, CUdevice c)                                     \
    X(cuCtxEnablePeerAccess, CUcontext a, unsigned b) X(cuCtxDisablePeerAccess, CUcontext a)     \
    X(cuMemcpyPeerAsync, CUdeviceptr a, CUcontext b, CUdeviceptr c, CUcontext d, size_t e,       \
      CUstream f)                                                                                \
    X(cuMemPrefetchAsync_v2, CUdeviceptr a, size_t b, CUmemLocation c, unsigned d, CUstream e)   \
    X(cuMemAdvise_v2, CUdeviceptr a, size_t b, CUmem_advise c, CUmemLocation d)                 \
    X(cuMemPoolCreate, CUmemoryPool *a, const CUmemPoolProps *b)                                 \
    X(cuMemPoolSetAttribute, CUmemoryPool a, CUmemPool_attribute b, void *c)                     \
    X(cuMemAllocFromPoolAsync, CUdeviceptr *a, size_t b, CUmemoryPool c, CUstream d)             \
    X(cuMemPoolTrimTo, CUmemoryPool a, size_t b) X(cuMemPoolDestroy, CUmemoryPool a)            \
    X(cuMemcpyAsync, CUdeviceptr a, CUdeviceptr b, size_t c, CUstream d)                         \
    X(cuStreamSynchronize, CUstream a) X(cuEventCreate, CUevent *a, unsigned b)                  \
    X(cuEventRecord, CUevent a, CUstream b) X(cuEventSynchronize, CUevent a)                     \
    X(cuEventDestroy_v2, CUevent a) X(cuMemHostRegister_v2, void *a, size_t b, unsigned c)       \
    X(cuMemHostUnregister, void *a)                                                              \
    X(cuMemGetAllocationGranularity, size_t *a, const CUmemAllocationProp *b,                   \
      CUmemAllocationGranularity_flags c)                                                        \
    X(cuMemAddressReserve, CUdeviceptr *a, size_t b, size_t c, CUdeviceptr d,                    \
      unsigned long long e)                                                                      \
    X(cuMemAddressFree, CUdeviceptr a, size_t b)                                                 \
    X(cuMemCreate, CUmemGenericAllocationHandle *a, size_t b, const CUmemAllocationProp *c,      \
      unsigned long long d)                                                                      \
    X(cuMemRelease, CUmemGenericAllocationHandle a)                                              \
    X(cuMemMap, CUdeviceptr a, size_t b, size_t c, CUmemGenericAllocationHandle d,               \
      unsigned long long e)                                                                      \
    X(cuMemUnmap, CUdeviceptr a, size_t b)                                                       \
    X(cuMemSetAccess, CUdeviceptr a, size_t b, const CUmemAccessDesc *c, size_t d)               \
    X(cuEventQuery, CUevent a) X(cuStreamWaitEvent, CUstream a, CUevent b, unsigned c)           \
    X(cuCtxSynchronize, void)

#define DEFINE(name, ...)                                                                        \
    CUresult name(__VA_ARGS__);                                                                  \
    CUresult name(__VA_ARGS__) { return CUDA_ERROR_NO_DEVICE; }
FAIL_ALL(DEFINE)

CUresult cuInit(unsigned flags);
CUresult cuInit(unsigned flags)
{
    (void)flags;
    return CUDA_ERROR_NO_DEVICE;
}

#ifdef FAKE_COMPLETE
CUresult cuMemAllocAsync(CUdeviceptr *a, size_t b, CUstream c);
CUresult cuMemAllocAsync(CUdeviceptr *a, size_t b, CUstream c) { return CUDA_ERROR_NO_DEVICE; }
CUresult cuMemFreeAsync(CUdeviceptr a, CUstream b);
CUresult cuMemFreeAsync(CUdeviceptr a, CUstream b) { return CUDA_ERROR_NO_DEVICE; }
#endif

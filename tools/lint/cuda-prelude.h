/* Included by `gpumem lint` before each CUDA unit it analyzes: what nvcc gives host code and
 * clang 22's CUDA mode does not, so that code nvcc compiles is analyzed. Only host code is
 * analyzed; the device functions here exist to be called, not to be compiled.
 *
 * nvcc defines __CUDACC__ as 1; clang's CUDA wrapper defines it empty, so headers that test it
 * with `#if __CUDACC__` (NCCL's nccl_device/utility.h is one) stop clang with "expected value
 * in expression". */
#undef __CUDACC__
#define __CUDACC__ 1

#ifdef __cplusplus
/* nvcc's cuda_runtime.h includes <math.h> and <time.h> for host code (isfinite, isnan,
 * clock, time); clang's declares only the device versions. */
#include <math.h>
#include <time.h>

/* nvcc declares host min and max for every pair of integer and floating types; clang's are
 * device functions only ("no matching function for call to 'min'" in host code). These are
 * templates, so that a program's own min (a function, a template, std::min brought in by
 * `using`) is preferred to them where both fit, as nvcc's overloads are where it matters. */
template <class A, class B>
static inline __host__ auto min(A a, B b) -> decltype(a < b ? a : b)
{
    return b < a ? b : a;
}
template <class A, class B>
static inline __host__ auto max(A a, B b) -> decltype(a < b ? a : b)
{
    return a < b ? b : a;
}

/* Cache-hinted loads and stores that CUDA's sm_32_intrinsics.h declares and clang 22 lacks,
 * as plain device loads and stores. */
template <class T>
static inline __device__ T __ldca(const T *p)
{
    return *p;
}
template <class T>
static inline __device__ T __ldlu(const T *p)
{
    return *p;
}
template <class T, class V>
static inline __device__ void __stcg(T *p, V v)
{
    *p = v;
}
template <class T, class V>
static inline __device__ void __stcs(T *p, V v)
{
    *p = v;
}
template <class T, class V>
static inline __device__ void __stwb(T *p, V v)
{
    *p = v;
}

/* nvcc's atomic builtins with a memory order (CUDA 12.8), as plain device loads and stores. */
#ifndef __NV_ATOMIC_RELAXED
#define __NV_ATOMIC_RELAXED 0
#define __NV_ATOMIC_CONSUME 1
#define __NV_ATOMIC_ACQUIRE 2
#define __NV_ATOMIC_RELEASE 3
#define __NV_ATOMIC_ACQ_REL 4
#define __NV_ATOMIC_SEQ_CST 5
#define __NV_THREAD_SCOPE_SYSTEM 0
#define __NV_THREAD_SCOPE_DEVICE 1
#define __NV_THREAD_SCOPE_BLOCK 2
template <class T>
static inline __device__ T __nv_atomic_load_n(const T *p, int order, int scope = 0)
{
    return (void)order, (void)scope, *p;
}
template <class T, class V>
static inline __device__ void __nv_atomic_store_n(T *p, V v, int order, int scope = 0)
{
    (void)order, (void)scope, *p = v;
}
#endif
#endif

/* The runtime calls CUDA 13 removed, as their successors (code written for CUDA 12 and
 * earlier is analyzed; a finding names the successor). */
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
#define cudaThreadSynchronize cudaDeviceSynchronize
#define cudaThreadExit cudaDeviceReset
#define cudaThreadSetLimit cudaDeviceSetLimit
#define cudaThreadGetLimit cudaDeviceGetLimit
#define cudaThreadSetCacheConfig cudaDeviceSetCacheConfig
#define cudaThreadGetCacheConfig cudaDeviceGetCacheConfig
#endif

/* nvcc accepts an initializer on a __shared__ variable (it warns that it is ignored, or takes a
 * constant one); clang stops the unit at it ("initialization is not supported for __shared__
 * variables"), device code or not. A host-only analysis does not look at where device
 * variables live, so __shared__ is read as nothing: such a variable is an ordinary local (or
 * static) one of its kernel. */
#undef __shared__
#define __shared__

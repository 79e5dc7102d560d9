/**
 * @file gpumem_device.h
 * @brief gpumem checks for kernels: GPUMEM_DEVICE_ASSERT_ALIGNED.
 *
 * A vector load or store from an address that is not a multiple of its width stops the kernel
 * with cudaErrorMisalignedAddress: no file, no line, no thread, and the error is sticky (the
 * CUDA context is lost). GPUMEM_DEVICE_ASSERT_ALIGNED(ptr, bytes), placed before the access,
 * reports the file, line, thread, block and address first, then stops the kernel through the
 * device-side assert (cudaErrorAssert, "device-side assert triggered"; also sticky: it is a
 * report, not a recovery). docs/alignment.md shows both outputs.
 *
 * The switch: checks are on when GPUMEM_DEVICE_CHECKS is defined as 1, off when it is defined
 * as 0, and otherwise follow the standard one: on unless NDEBUG is defined (CMake's Debug
 * builds; Release and RelWithDebInfo define NDEBUG). Off, the macro expands to an expression
 * that evaluates nothing (its arguments appear only under sizeof), so a kernel compiles to the
 * same PTX and SASS as without it; the test `device_assert_costs_nothing` compares the PTX.
 *
 * Usable from .cu files (device and host-device code); in host code and in files not compiled
 * by nvcc it does nothing. Needs no library call and no link with gpumem.
 */
#ifndef GPUMEM_DEVICE_H
#define GPUMEM_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#if defined(GPUMEM_DEVICE_CHECKS)
#if GPUMEM_DEVICE_CHECKS
#define GPUMEM__DEVICE_CHECKS_ON 1
#else
#define GPUMEM__DEVICE_CHECKS_ON 0
#endif
#elif !defined(NDEBUG)
#define GPUMEM__DEVICE_CHECKS_ON 1
#else
#define GPUMEM__DEVICE_CHECKS_ON 0
#endif

#if GPUMEM__DEVICE_CHECKS_ON && defined(__CUDACC__)
#include <cstdio>

/* The device's assert prints "file:line: function: block: [x,y,z], thread: [x,y,z]
 * Assertion `...` failed." and stops the kernel with cudaErrorAssert. It is called directly,
 * not through assert(), so that it works when NDEBUG is defined and GPUMEM_DEVICE_CHECKS=1. */
#if defined(__CUDA_ARCH__) && defined(__GNUC__) && !defined(__CUDACC_RTC__)
#define GPUMEM__DEVICE_STOP(msg, file, line, func) __assert_fail((msg), (file), (line), (func))
#elif defined(__CUDA_ARCH__)
#define GPUMEM__DEVICE_STOP(msg, file, line, func) ((void)(msg), (void)(file), (void)(line),  \
                                                    (void)(func), __trap())
#endif

/** Implementation of GPUMEM_DEVICE_ASSERT_ALIGNED; call the macro. */
static __host__ __device__ __forceinline__ void
gpumem__device_assert_aligned(const void *ptr, size_t bytes, const char *expr, const char *file,
                              unsigned line, const char *func)
{
#if defined(__CUDA_ARCH__)
    uintptr_t a = (uintptr_t)ptr;
    size_t past = bytes ? (size_t)(a % bytes) : 0;
    if (bytes == 0 || past != 0) {
        printf("%s:%u: gpumem: error: misaligned access in %s: %s = %p is %llu bytes past a "
               "%llu-byte boundary; thread (%u,%u,%u) of block (%u,%u,%u); stopping the kernel "
               "before the access\n",
               file, line, func, expr, ptr, (unsigned long long)past, (unsigned long long)bytes,
               threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z);
        GPUMEM__DEVICE_STOP("gpumem: misaligned pointer (GPUMEM_DEVICE_ASSERT_ALIGNED)", file,
                            line, func);
    }
#else
    (void)ptr, (void)bytes, (void)expr, (void)file, (void)line, (void)func;
#endif
}

/**
 * In a kernel, before a load or store @p bytes wide through @p ptr: checks that @p ptr is a
 * multiple of @p bytes (a power of two; 0 always fails). On failure prints
 * "file:line: gpumem: error: misaligned access in kernel: ptr = 0x... is 4 bytes past a
 * 16-byte boundary; thread (x,y,z) of block (x,y,z); stopping the kernel before the access"
 * and stops the kernel (cudaErrorAssert). Every failing thread prints. Off (see the file's
 * comment) it costs nothing: no instruction is generated.
 */
#define GPUMEM_DEVICE_ASSERT_ALIGNED(ptr, bytes)                                                \
    gpumem__device_assert_aligned((const void *)(ptr), (size_t)(bytes), #ptr, __FILE__,         \
                                  (unsigned)__LINE__, __func__)
#else
#define GPUMEM_DEVICE_ASSERT_ALIGNED(ptr, bytes) ((void)sizeof(ptr), (void)sizeof(bytes))
#endif

#endif /* GPUMEM_DEVICE_H */

/* CUB's CachingDeviceAllocator behind C functions (cub.cu, built only with nvcc), for
 * `gpumem bench` and bench_pool. */
#ifndef GPUMEM_BENCH_CUB_H
#define GPUMEM_BENCH_CUB_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif
/* Makes the shared CachingDeviceAllocator (default bins and cache limit). Returns 0. */
int bench_cub_create(void);
/* DeviceAllocate + DeviceFree of @bytes on @stream; returns a cudaError_t value. */
int bench_cub_pair(size_t bytes, cudaStream_t stream);
void bench_cub_destroy(void);
#ifdef __cplusplus
}
#endif

#endif

/* The checkers on C: the C API (no C++ wrappers), the driver API. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdlib.h>

void runtime_c(size_t n) {
  void *h;
  if (cudaMallocHost(&h, n) != cudaSuccess)
    return;
  (void)cudaFree(h); /* expected-warning{{memory allocated with cudaMallocHost is released with cudaFree; release it with cudaFreeHost}} */
}

void driver(size_t n) {
  CUdeviceptr d;
  if (cuMemAlloc(&d, n) != CUDA_SUCCESS) /* expected-warning{{memory allocated with cuMemAlloc is never released on this path}} */
    return;
}

void driver_pinned(size_t n) {
  void *h;
  if (cuMemAllocHost(&h, n) != CUDA_SUCCESS)
    return;
  free(h); /* expected-warning{{memory allocated with cuMemAllocHost is released with free; release it with cudaFreeHost}} */
}

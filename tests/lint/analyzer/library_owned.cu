// Memory a library's code allocates (CUB's CachingDeviceAllocator, from the toolkit's system
// headers) is the library's: its own bookkeeping, in containers the analyzer does not follow,
// decides when it is released, so no path through it is the caller's leak. The CUDA runtime's
// inline wrappers (cudaMallocHost<T>) are not such a library: what they allocate is the
// caller's.
#include <cub/util_allocator.cuh>

#include "check.h"

static cub::CachingDeviceAllocator *cache;

int through_the_cache(size_t bytes, cudaStream_t stream) {
  void *p = nullptr;
  cudaError_t e = cache->DeviceAllocate(&p, bytes, stream);
  if (e != cudaSuccess)
    return (int)e;
  return (int)cache->DeviceFree(p);
}

void through_the_runtime_wrapper(size_t n) {
  float *h;
  CHECK(cudaMallocHost(&h, n)); // expected-warning{{memory allocated with cudaMallocHost is never released}}
}

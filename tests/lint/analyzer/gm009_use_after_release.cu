// GM009: host access to released host-visible memory; a released pointer given to CUDA.
#include "check.h"
float pinned_read(size_t n) {
  float *h;
  CHECK(cudaMallocHost(&h, n));
  CHECK(cudaFreeHost(h));
  return h[0]; // expected-warning{{host read of memory allocated with cudaMallocHost after it was released with cudaFreeHost}}
}
void to_cuda(float *h, size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  CHECK(cudaFree(d));
  CHECK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost)); // expected-warning{{memory allocated with cudaMalloc is passed to cudaMemcpy after it was released with cudaFree}}
}

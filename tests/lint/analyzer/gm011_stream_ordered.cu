// GM011: stream-ordered release of memory that is not stream-ordered device memory.
#include "check.h"
void pinned(size_t n, cudaStream_t s) {
  float *h;
  CHECK(cudaMallocHost(&h, n));
  CHECK(cudaFreeAsync(h, s)); // expected-warning{{cudaFreeAsync releases in stream order, but memory allocated with cudaMallocHost is not stream-ordered device memory; release it with cudaFreeHost}}
}
void device_memory_is_fine(size_t n, cudaStream_t s) {
  float *a, *b;
  CHECK(cudaMallocAsync(&a, n, s));
  CHECK(cudaMalloc(&b, n));
  CHECK(cudaFreeAsync(a, s));
  CHECK(cudaFreeAsync(b, s));
}

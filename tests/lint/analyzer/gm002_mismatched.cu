// GM002: a release that does not match the allocation; correlated branches are not mismatches.
#include "check.h"
#include <gpumem.h>

void pinned_with_cudafree(size_t n) {
  float *h;
  CHECK(cudaMallocHost(&h, n));
  CHECK(cudaFree(h)); // expected-warning{{memory allocated with cudaMallocHost is released with cudaFree; release it with cudaFreeHost}}
}

void managed_with_free(size_t n) {
  float *m;
  CHECK(cudaMallocManaged(&m, n));
  free(m); // expected-warning{{memory allocated with cudaMallocManaged is released with free; release it with cudaFree}}
}

void new_with_cudafreehost(size_t n) {
  float *h = new float[n];
  CHECK(cudaFreeHost(h)); // expected-warning{{memory allocated with new[] is released with cudaFreeHost; release it with delete[]}}
}

void gpumem_with_cudafree(size_t n) {
  float *d = (float *)gpumem_device_alloc(n, 4);
  CHECK(cudaFree(d)); // expected-warning{{memory allocated with gpumem_device_alloc is released with cudaFree; release it with gpumem_free or gpumem_free_async}}
}

void array_with_cudafree(const cudaChannelFormatDesc *desc) {
  cudaArray_t a;
  CHECK(cudaMallocArray(&a, desc, 64, 64));
  CHECK(cudaFree(a)); // expected-warning{{memory allocated with cudaMallocArray is released with cudaFree; release it with cudaFreeArray}}
}

void correlated(int pageable, size_t n) {
  float *p;
  if (pageable)
    p = (float *)malloc(n);
  else
    CHECK(cudaMallocManaged(&p, n));
  if (pageable)
    free(p);
  else
    CHECK(cudaFree(p));
}

struct buf { float *data; };
void fields_of_two_objects(size_t n) {
  struct buf a, b;
  CHECK(cudaMallocHost(&a.data, n));
  CHECK(cudaMalloc(&b.data, n));
  CHECK(cudaFreeHost(a.data));
  CHECK(cudaFree(b.data));
}

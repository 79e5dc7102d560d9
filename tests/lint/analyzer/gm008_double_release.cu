// GM008: memory released twice.
#include "check.h"
void twice(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  CHECK(cudaFree(d));
  CHECK(cudaFree(d)); // expected-warning{{memory allocated with cudaMalloc is released again with cudaFree (it was released with cudaFree)}}
}
void reset_between(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  CHECK(cudaFree(d));
  d = nullptr;
  CHECK(cudaFree(d));
}

// GM010: release of a pointer into the middle of an allocation.
#include "check.h"
void advanced(size_t n) {
  char *d;
  CHECK(cudaMalloc(&d, n + 256));
  CHECK(cudaFree(d + 256)); // expected-warning{{cudaFree is given a pointer 256 bytes into the memory allocated with cudaMalloc; pass the pointer cudaMalloc returned}}
}
void base_released(size_t n) {
  char *d;
  CHECK(cudaMalloc(&d, n + 256));
  char *payload = d + 256;
  (void)payload;
  CHECK(cudaFree(d));
}

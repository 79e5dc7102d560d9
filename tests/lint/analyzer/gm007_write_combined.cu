// GM007: host reads of write-combined memory; writes are what it is for.
#include "check.h"
#include <string.h>

float read_back(size_t n) {
  float *h;
  CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocWriteCombined));
  h[0] = 1.0f;
  float v = h[0]; // expected-warning{{host read of write-combined memory allocated with cudaHostAlloc}}
  CHECK(cudaFreeHost(h));
  return v;
}

void copy_out(char *dst, size_t n) {
  char *wc;
  CHECK(cudaHostAlloc((void **)&wc, n, cudaHostAllocWriteCombined | cudaHostAllocMapped));
  memcpy(dst, wc, n); // expected-warning{{host read of write-combined memory}}
  CHECK(cudaFreeHost(wc));
}

void plain_pinned_is_readable(size_t n) {
  float *h;
  CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocMapped));
  float v = h[0];
  (void)v;
  CHECK(cudaFreeHost(h));
}

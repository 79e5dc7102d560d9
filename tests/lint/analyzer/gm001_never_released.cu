// GM001: memory never released on some path; the warning is at the allocation.
#include "check.h"
void consume(const float *p);
void take(float *p);

void leak(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n)); // expected-warning{{memory allocated with cudaMalloc is never released on this path; release it with cudaFree or cudaFreeAsync}}
  consume(d);
}

void leak_one_branch(size_t n, int keep) {
  float *h;
  CHECK(cudaMallocHost(&h, n)); // expected-warning{{memory allocated with cudaMallocHost is never released}}
  if (!keep)
    CHECK(cudaFreeHost(h));
}

void failed_allocation_owns_nothing(size_t n) {
  float *d;
  if (cudaMalloc(&d, n) != cudaSuccess)
    return;
  CHECK(cudaFree(d));
}

void escapes_to_unknown_function(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  take(d);
}

float *returned(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  return d;
}

void ends_the_process(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  consume(d);
  exit(1);
}

// A size known to be zero on the path allocates nothing (CUDA gives NULL or an error): a total
// summed over no elements leaks nothing when the loop did not run.
void zero_bytes_on_some_path(const int *sizes, int count, float **out) {
  size_t total = 0;
  for (int i = 0; i < count; i++)
    total += sizes[i];
  float *d;
  CHECK(cudaMalloc(&d, total * sizeof(float)));
  for (int i = 0; i < count; i++)
    out[i] = d;
}

void zero_bytes(void) {
  float *d;
  CHECK(cudaMalloc(&d, 0));
}

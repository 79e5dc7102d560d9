// GM004: what is not an unchecked status. A helper's launch or call whose
// error its caller reads with cudaGetLastError() right after it returns; a
// status tested after an error-clearing cudaGetLastError(); calls that only
// name an error (cudaGetErrorName, cudaGetErrorString) are no "next CUDA call".
#include "check.h"
#include <stdio.h>
__global__ void k(float *p);

static void launch_helper(float *p) { k<<<1, 1>>>(p); }

static void copy_helper(float *d, const float *h, size_t n) {
  cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); // expected-warning{{the status cudaMemcpy returns is discarded}}
}

static void stored_helper(float *d, size_t n) {
  cudaError_t e = cudaMemset(d, 0, n);
  if (n == 0)
    printf("empty\n");
  (void)&e;
}

void caller_checks(float *d, const float *h, size_t n) {
  launch_helper(d);
  CHECK(cudaGetLastError());
  copy_helper(d, h, n);
  CHECK(cudaGetLastError());
  stored_helper(d, n);
  CHECK(cudaGetLastError());
}

// Found once, at the helper's call, though two callers reach it.
void caller_forgets(float *d, const float *h, size_t n) {
  copy_helper(d, h, n);
  CHECK(cudaMemset(d, 0, n));
  copy_helper(d, h, n);
  CHECK(cudaMemset(d, 0, n));
}

void clearing_query(float *d, size_t n) {
  cudaError_t err = cudaMemset(d, 0, n);
  cudaGetLastError(); // clears the error record; err is tested below
  if (err != cudaSuccess)
    abort();
}

void error_text(float *d, size_t n, cudaError_t prev) {
  cudaError_t err = cudaMemset(d, 0, n);
  fprintf(stderr, "previous: %s\n", cudaGetErrorName(prev));
  CHECK(err);
  k<<<1, 1>>>(d);
  fprintf(stderr, "previous: %s\n", cudaGetErrorString(prev));
  CHECK(cudaGetLastError());
}

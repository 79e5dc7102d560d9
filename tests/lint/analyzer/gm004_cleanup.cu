// Releases in teardown and in the cleanup of an error path: their statuses
// are not reported when no CUDA call but other releases follows them before
// the program or the analysed function ends (nothing is left to act on a
// failed release there). A release followed by more CUDA work is reported.
#include "check.h"
#include <stdio.h>

int setup(float **a, float **b, size_t n) {
  if (cudaMalloc(a, n) != cudaSuccess)
    return 1;
  if (cudaMalloc(b, n) != cudaSuccess) {
    cudaFree(*a); // no finding: the error path's cleanup
    return 1;
  }
  return 0;
}

int main(void) {
  float *a, *b, *c;
  if (setup(&a, &b, 64)) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  CHECK(cudaMalloc(&c, 64));
  CHECK(cudaMemset(a, 0, 64));
  cudaFree(a);
  cudaFree(b); // no finding: teardown
  cudaFreeHost(NULL);
  cudaFree(c);
  return 0;
}

void release_then_work(float *d, float *e) {
  cudaFree(d); // expected-warning{{the status cudaFree returns is discarded}}
  CHECK(cudaMemset(e, 0, 4));
}

void destroy_then_launch(cudaStream_t s, float *e) {
  cudaStreamDestroy(s); // expected-warning{{the status cudaStreamDestroy returns is discarded}}
  CHECK(cudaMemset(e, 0, 4));
}

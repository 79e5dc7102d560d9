// GM006: a leak on an early exit of a function that releases on its normal path.
#include "check.h"
#include <stdexcept>
int prepare(const float *p);

int early_return(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  if (prepare(d))
    return -1; // expected-warning{{memory allocated with cudaMalloc is not released on this early exit, though the function releases it on its normal path}}
  CHECK(cudaFree(d));
  return 0;
}

int early_goto(size_t n) {
  int rc = 0;
  float *d;
  CHECK(cudaMalloc(&d, n));
  if (prepare(d)) {
    rc = -1;
    goto out; // expected-warning{{not released on this early exit}}
  }
  CHECK(cudaFree(d));
out:
  return rc;
}

void early_throw(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  if (prepare(d))
    throw std::runtime_error("x"); // expected-warning{{memory allocated with cudaMalloc is not released on this early exit}}
  CHECK(cudaFree(d));
}

int cleanup_label(size_t n) {
  int rc = -1;
  float *a = NULL;
  if (cudaMalloc(&a, n) != cudaSuccess)
    goto fail;
  if (prepare(a))
    goto fail;
  rc = 0;
fail:
  cudaFree(a); // no GM004: cleanup (gm004_cleanup.cu)
  return rc;
}

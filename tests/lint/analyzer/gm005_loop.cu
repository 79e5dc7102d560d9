// GM005: allocation in a loop lost before the next iteration.
#include "check.h"
void work(const float *p);

void per_iteration(int k, size_t n) {
  for (int i = 0; i < k; i++) {
    float *t;
    CHECK(cudaMalloc(&t, n)); // expected-warning{{memory allocated with cudaMalloc in a loop is lost before the next iteration allocates again}}
    work(t);
  }
}

void released_each_iteration(int k, size_t n) {
  for (int i = 0; i < k; i++) {
    float *t;
    CHECK(cudaMalloc(&t, n));
    work(t);
    CHECK(cudaFree(t));
  }
}

void retry_in_condition(size_t n) {
  float *p;
  while (cudaMalloc(&p, n) != cudaSuccess)
    n /= 2;
  work(p);
  CHECK(cudaFree(p));
}

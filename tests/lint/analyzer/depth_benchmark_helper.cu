// A benchmark helper runs a kernel through a function pointer a thousand
// times, with the caller's buffers as forwarding references: after the
// widened loop the caller's pointers are what they were (the loop body never
// writes them), so the leaks and double releases after the helper are found.
#include "check.h"
#include <utility>

__global__ void scale_kernel(float *out, const float *in, int n);

void scale(float *out, const float *in, int n) {
  scale_kernel<<<1, 1>>>(out, in, n);
  CHECK(cudaGetLastError());
}

template <class Kernel, class... Args>
void benchmark_kernel(int repeats, Kernel kernel, Args &&...args) {
  for (int i = 0; i < repeats; i++)
    kernel(std::forward<Args>(args)...);
  CHECK(cudaDeviceSynchronize());
}

int main(void) {
  int n = 1024;
  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float))); // expected-warning{{memory allocated with cudaMalloc is never released on this path}}
  benchmark_kernel(1000, scale, d_out, d_in, n);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_in)); // expected-warning{{is released again with cudaFree}}
  return 0;
}

// A loop the helper runs with a pointer it is given by value: the caller's
// variable, which the loop cannot reach, is kept too.
void repeat(int times, void (*step)(float *), float *p) {
  for (int i = 0; i < times; i++)
    step(p);
}
void touch(float *p) { CHECK(cudaMemset(p, 0, 4)); }
void by_value(void) {
  float *d;
  CHECK(cudaMalloc(&d, 64));
  repeat(500, touch, d);
  CHECK(cudaFree(d));
  CHECK(cudaMemset(d, 0, 64)); // expected-warning{{after it was released}}
}

// An object handed a pointer at construction owns it only when it can release
// it: a class with a destructor that does something (a smart pointer). A view
// with a trivial destructor (an accessor of pointer, sizes and strides) leaves
// the memory to the caller, whose dropped or wrong release is reported.
#include <cuda_runtime.h>
#include <memory>
#include "check.h"

template <typename T> struct Accessor {
  Accessor(T *data, const long *sizes) : data_(data), size_(sizes[0]) {}
  T *data_;
  long size_;
};

struct Deleter {
  void operator()(float *p) const { (void)cudaFree(p); }
};

__global__ void k(Accessor<float> a) {}

void view_forgotten(long n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, sizeof(float) * n)); // expected-warning{{memory allocated with cudaMalloc is never released on this path; release it with cudaFree or cudaFreeAsync}}
  Accessor<float> acc(d, &n);
  k<<<1, 1>>>(acc);
  CHECK(cudaGetLastError());
}

void view_wrong_release(long n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, sizeof(float) * n));
  Accessor<float> acc(d, &n);
  k<<<1, 1>>>(acc);
  CHECK(cudaGetLastError());
  CHECK(cudaFreeHost(d)); // expected-warning{{memory allocated with cudaMalloc is released with cudaFreeHost; release it with cudaFree or cudaFreeAsync}}
}

// The smart pointer releases it: nothing to report.
void owned(long n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, sizeof(float) * n));
  std::unique_ptr<float, Deleter> owner(d);
}

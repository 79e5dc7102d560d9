// A function of this unit the engine does not inline (too long, or here:
// inlining turned off) is read for what it does with the pointers it is
// given: a release helper releases (with the call it makes), a function that
// only reads keeps nothing, and an allocating helper allocates.
// FLAGS: -Xclang -analyzer-config -Xclang ipa=none
#include "check.h"

void release_device(float *p) {
  if (p)
    CHECK(cudaFree(p));
}
void release_two(float *a, float *b) {
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
}
void read_only(float *p, int n) {
  float *row = p + n / 2;
  CHECK(cudaMemset(p, 0, n));
  CHECK(cudaMemset(row, 1, 4));
}
cudaError_t make_device(float **p, size_t n) { return cudaMalloc((void **)p, n); }
float *new_device(size_t n) {
  float *p = NULL;
  if (cudaMalloc((void **)&p, n) != cudaSuccess)
    return NULL;
  return p;
}
float *keep;
void keeps(float *p) { keep = p; }
void released_sometimes(float *p, int now) {
  if (now)
    CHECK(cudaFree(p));
}

void double_release(void) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 64));
  release_device(d);
  release_device(d); // expected-warning{{memory allocated with cudaMalloc is released again with release_device (cudaFree) (it was released with release_device (cudaFree))}}
}

void wrong_kind(void) {
  float *h, *d;
  CHECK(cudaMallocHost((void **)&h, 64));
  CHECK(cudaMalloc((void **)&d, 64));
  release_two(d, h); // expected-warning{{memory allocated with cudaMallocHost is released with release_two (cudaFree); release it with cudaFreeHost}}
}

void leak_after_read(void) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 64)); // expected-warning{{never released on this path}}
  read_only(d, 64);
}

void allocated_by_helper(void) {
  float *d, *e;
  CHECK(make_device(&d, 64)); // expected-warning{{memory allocated with make_device (cudaMalloc) is never released on this path}}
  e = new_device(64);
  CHECK(cudaFreeHost(e)); // expected-warning{{memory allocated with new_device (cudaMalloc) is released with cudaFreeHost}}
}

// Handed on, or released on some paths only: not followed after the call.
void not_followed(int now) {
  float *d, *e;
  CHECK(cudaMalloc((void **)&d, 64));
  CHECK(cudaMalloc((void **)&e, 64));
  keeps(d);
  released_sometimes(e, now);
  CHECK(cudaFree(e));
}

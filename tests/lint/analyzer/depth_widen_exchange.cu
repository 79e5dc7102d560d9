// Double buffering: a loop too long to follow round by round that only
// exchanges the buffers its pointers hold (a swap helper, or a temporary).
// The widening forgets what the loop writes, the two pointers with it; they
// are put back as they were before it (one of the orders the rounds leave
// them in), so the releases after the loop are still checked.
#include "check.h"
__global__ void step(const float *in, float *out);
const int ROUNDS = 50;

template <typename T> void exchange(T &a, T &b) {
  T t = a;
  a = b;
  b = t;
}

void swapped_by_helper(void) {
  float *in, *out;
  CHECK(cudaMalloc((void **)&in, 64));
  CHECK(cudaMalloc((void **)&out, 64));
  for (int i = 0; i < ROUNDS; i++) {
    step<<<1, 64>>>(in, out);
    CHECK(cudaGetLastError());
    exchange(in, out);
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaMemset(in, 0, 1)); // expected-warning{{after it was released}}
}

void swapped_by_hand(int n) {
  float *a, *b;
  CHECK(cudaMalloc((void **)&a, 64));
  CHECK(cudaMalloc((void **)&b, 64));
  for (int i = 0; i < 10 * ROUNDS; i++) {
    step<<<1, 64>>>(a, b);
    CHECK(cudaGetLastError());
    float *t = a;
    a = b;
    b = t;
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(a)); // expected-warning{{is released again with cudaFree}}
}

// A loop that allocates a new buffer each round does not exchange: what it
// leaves is not put back, and nothing is made up about it.
void replaced_each_round(void) {
  float *p;
  CHECK(cudaMalloc((void **)&p, 64));
  for (int i = 0; i < ROUNDS; i++) {
    float *q;
    CHECK(cudaMalloc((void **)&q, 64));
    CHECK(cudaFree(p));
    p = q;
  }
  CHECK(cudaFree(p));
}

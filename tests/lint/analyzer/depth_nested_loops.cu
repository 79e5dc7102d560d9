// Code after nested loops is analysed. The engine counts the visits of a loop
// head on the whole path, not per entrance of the loop: an inner loop widened
// in the first round of an outer loop is past the visit limit in the second,
// and the path ends at its head. The widening forgets the outer loops'
// counters too, so the path can leave the outer loop after that first round;
// these functions end in a bug that is only seen when it does (the outer loop
// cannot be left earlier: a constant bound, unrolled or not).
#include "check.h"
__global__ void k(float *p);

// An unrolled outer loop (4 rounds) around a loop too long to unroll with it.
void unrolled_outer(void) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 16));
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 100; i++) {
      k<<<1, 1>>>(d);
      CHECK(cudaGetLastError());
    }
  CHECK(cudaFree(d));
  CHECK(cudaFree(d)); // expected-warning{{is released again with cudaFree}}
}

// Timing loops with a repeat count the function sets, inside a loop over
// block sizes (a benchmark's main).
void timing_rounds(int argc) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 16));
  int repeat = 100;
  for (int b = 0; b < 4; b++) {
    for (int i = 0; i < repeat; i++) {
      k<<<1, 1>>>(d);
      CHECK(cudaGetLastError());
    }
    for (int i = 0; i < repeat; i++) {
      k<<<2, 1>>>(d);
      CHECK(cudaGetLastError());
    }
  }
  CHECK(cudaFree(d));
  CHECK(cudaMemset(d, 0, 16)); // expected-warning{{after it was released}}
}

// An outer loop too long to unroll, around a loop on a size of the caller.
void long_outer(int m) {
  float *d, *h;
  CHECK(cudaMalloc((void **)&d, 16));
  CHECK(cudaMallocHost((void **)&h, 16));
  for (int j = 0; j < 1000; j++)
    for (int i = 0; i < 200; i++)
      h[0] += 1.0f;
  CHECK(cudaFree(d));
  CHECK(cudaFree(h)); // expected-warning{{allocated with cudaMallocHost}}
}

// The counters of the outer loops are forgotten, not what the loops never
// write: the allocation stays tracked through both, and one that is released
// after them is not reported.
void released_after_nest(void) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 16));
  for (int j = 0; j < 8; j++)
    for (int i = 0; i < 300; i++) {
      k<<<1, 1>>>(d);
      CHECK(cudaGetLastError());
    }
  CHECK(cudaFree(d));
}

// What the outer loops write and the widened loop does not (a buffer the
// round allocates before it) is put back: only their counters are forgotten.
// The inner loop's bound is the round's size, known to the path but no
// literal, so it is widened in the first round.
float next_value(void);
void allocated_each_round(void) {
  for (int s = 1; s <= 64; s *= 2) {
    int n = 8 * s;
    float *d, *h = (float *)malloc(n * sizeof(float));
    CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
    for (int i = 0; i < n; i++)
      h[i] = next_value();
    CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaFree(d));
    CHECK(cudaMemset(d, 0, 1)); // expected-warning{{after it was released}}
    free(h);
  }
}

// Code after a loop is analysed: clang's engine drops a path at a loop whose
// trip count it knows and which runs more than 4 times, unless the loop is
// unrolled (small bounds) or widened (the rest).
#include "check.h"
__global__ void step(float *w);
void train(const float *w);

void double_free_after_training(size_t n) {
  float *w;
  CHECK(cudaMalloc(&w, n));
  for (int epoch = 0; epoch < 8; epoch++) {
    step<<<1, 1>>>(w);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaFree(w));
  CHECK(cudaFree(w)); // expected-warning{{is released again with cudaFree}}
}

void leak_after_long_loop(float *host, size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  for (int i = 0; i < 150; i++)
    host[i] = 0.0f;
  if (host[0] > 1.0f)
    return; // expected-warning{{memory allocated with cudaMalloc is not released on this early exit}}
  CHECK(cudaFree(d));
}

// The loop body checks every launch: widening must not make up a path on
// which the loop is left without the check having run.
void checked_in_loop(float *w, int iters) {
  for (int i = 0; i < 1000; i++) {
    step<<<1, 1>>>(w);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
      return;
  }
  CHECK(cudaDeviceSynchronize());
}

void status_checked_in_loop(float *d, const float *h, size_t n) {
  cudaError_t err = cudaSuccess;
  for (int i = 0; i < 200; i++) {
    err = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    if (err != cudaSuccess)
      break;
  }
  if (err != cudaSuccess)
    return;
  CHECK(cudaDeviceSynchronize());
}

// Widening forgets every variable; `every` is not written in the loop, so
// it is put back, and the body checks the launch on each path.
void check_when_due(float *w, float *h, size_t n) {
  int every = 1;
  for (int i = 0; i < 1000; i++) {
    step<<<1, 1>>>(w);
    if (i % every == 0)
      CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(h, w, n, cudaMemcpyDeviceToHost));
  }
}

// What the loop writes stays forgotten: here the pointer it replaces.
void replaced_in_loop(size_t n, int k) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  for (int i = 0; i < 1000; i++) {
    CHECK(cudaFree(d));
    CHECK(cudaMalloc(&d, n));
  }
  CHECK(cudaFree(d));
}

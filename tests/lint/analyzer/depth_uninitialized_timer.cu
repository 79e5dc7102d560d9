// A benchmark starts its timer in a round of its timing loop (after the
// warm-up rounds); on the paths that leave the loop before that round, the
// start time is uninitialized. Clang's core checkers ended every such path at
// `toc - tic`, and nothing after the loop was analysed: they are off.
#include "check.h"
#include <cstdio>
__global__ void k(float *p);
double now(void);

void timed_after_warmup(int iters) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 64));
  double tic;
  for (int i = 0; i < iters; i++) {
    if (i == 2)
      tic = now();
    k<<<1, 1>>>(d);
    CHECK(cudaGetLastError());
  }
  CHECK(cudaDeviceSynchronize());
  double toc = now();
  printf("%f us per launch\n", (toc - tic) / (iters - 2));
  CHECK(cudaFree(d));
  CHECK(cudaMemset(d, 0, 1)); // expected-warning{{after it was released}}
}

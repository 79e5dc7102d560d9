// Loops whose bound the path does not know (`i < repeat`, repeat read from
// the command line) are left on the path's first visits of their head and
// are not widened as well (a widened path walked everything after the loop
// once more, and spent the budget before the releases at the end of main:
// seen on real code, softmax-fused-cuda, not reproduced this small). Eight
// timing loops, each around a call that branches, still reach the releases;
// a loop the path cannot leave before the widening (a constant bound past
// unroll-loops' 128 steps) is still widened and followed past.
#include <cuda_runtime.h>
#include "check.h"

__global__ void k(float *p, int n) {}

static void launch(float *d, int n) {
  switch (n % 8) {
  case 0: k<<<1, 1>>>(d, 0); break;
  case 1: k<<<1, 2>>>(d, 1); break;
  case 2: k<<<1, 4>>>(d, 2); break;
  case 3: k<<<1, 8>>>(d, 3); break;
  case 4: k<<<1, 16>>>(d, 4); break;
  case 5: k<<<1, 32>>>(d, 5); break;
  case 6: k<<<1, 64>>>(d, 6); break;
  default: k<<<1, 128>>>(d, 7); break;
  }
  CHECK(cudaGetLastError());
}

void timed(int n, int repeat) {
  float *d;
  CHECK(cudaMalloc((void **)&d, sizeof(float) * 4));
  for (int i = 0; i < repeat; i++)
    launch(d, n + i);
  for (int i = 0; i < repeat; i++)
    launch(d, n * i);
  for (int i = 0; i < repeat; i++)
    launch(d, n - i);
  for (int i = 0; i < repeat; i++)
    launch(d, n ^ i);
  for (int i = 0; i < repeat; i++)
    launch(d, n | i);
  for (int i = 0; i < repeat; i++)
    launch(d, n & i);
  for (int i = 0; i < repeat; i++)
    launch(d, n + 3 * i);
  for (int i = 0; i < repeat; i++)
    launch(d, n - 5 * i);
  CHECK(cudaFree(d));
  CHECK(cudaFree(d)); // expected-warning{{memory allocated with cudaMalloc is released again with cudaFree}}
}

void long_constant_loop(void) {
  float *d;
  CHECK(cudaMalloc((void **)&d, sizeof(float) * 4));
  float sum = 0;
  for (int i = 0; i < 100000; i++)
    sum += i;
  CHECK(cudaFree(d));
  CHECK(cudaFree(d)); // expected-warning{{memory allocated with cudaMalloc is released again with cudaFree}}
}

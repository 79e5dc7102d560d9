// A program that ends with exit(0) ends as one that returns from main: what
// it did not release is reported (gpumem check reports it too, as memory
// still reachable at exit). A failure status is the error branch of a
// check: the failure is what it reports.
#include "check.h"
#include <stdio.h>

int main(int argc, char **argv) {
  float *d, *h;
  CHECK(cudaMalloc(&d, 64)); // expected-warning{{memory allocated with cudaMalloc is never released on this path, which ends the program with exit(0)}}
  CHECK(cudaMallocHost(&h, 64));
  if (argc > 1) {
    fprintf(stderr, "usage: %s\n", argv[0]);
    exit(1); // no finding: a failure
  }
  CHECK(cudaMemset(d, 0, 64));
  CHECK(cudaFreeHost(h));
  exit(EXIT_SUCCESS);
}

void leaked_before_exit(void) {
  float *d;
  CHECK(cudaMalloc(&d, 64)); // expected-warning{{which ends the program with exit(0)}}
  d = NULL;
  exit(0);
}

// A check macro that exits with status 0 on a failed call (some do): its exit is the error
// branch all the same, as is one under a test of a status.
#define CHECK_EXIT0(call)                                                                  \
  do {                                                                                     \
    if ((call) != cudaSuccess)                                                             \
      exit(0);                                                                             \
  } while (0)

void exit_zero_on_error(void) {
  float *d;
  CHECK_EXIT0(cudaMalloc(&d, 64));
  CHECK_EXIT0(cudaMemset(d, 0, 64));
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    fprintf(stderr, "%s\n", cudaGetErrorString(err));
    exit(0);
  }
  CHECK(cudaFree(d));
}

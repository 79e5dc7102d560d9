// Fixture of bench/lint/mutants: which statements are mutation sites, and which are not.
// test_mutants.py lists the sites expected here by line; keep the lines in step.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                   \
  do {                                                                \
    cudaError_t e_ = (call);                                          \
    if (e_ != cudaSuccess) { fprintf(stderr, "%d\n", (int)e_); exit(1); } \
  } while (0)
#define RELEASE(p) cudaFree(p) /* a macro definition: no site */

__device__ void device_only(float *p) { cudaFree(p); }  // device code: no site

static void unused(float *d) {
  cudaFree(d);  // not reached from main: no site
}

template <typename T>
static void run(size_t n, int flag) {
  T *d = NULL, *h = NULL, *u = NULL;
  float *other;
  CHECK(cudaMalloc((void **)&d, n * sizeof(T)));  // unwrap, line 24
  CHECK(cudaMallocHost(&h, n * sizeof(T)));       // unwrap, line 25
  cudaMallocManaged(&u, n);                       // not wrapped: no site
  other = (float *)malloc(n);
  if (flag)
    cudaFree(u);  // the body of an unbraced if: no site
#if 0
  cudaFree(d);  // #if 0: no site
#endif
#ifdef DEBUG
  cudaFree(d);  // under a conditional: no site
#endif
  /* cudaFree(d); in a comment: no site */
  printf("cudaFree(d);\n");
  cudaFree(other);  // not allocated by CUDA in this file: no site
  cudaFreeHost(d);  // already the wrong release: no site
  cudaFree(d);                // line 40: drop, swap, duplicate, use
  CHECK(cudaFreeHost(h));     // line 41: drop, swap, duplicate, use
  {
    cudaFree(u);              // line 43: drop, swap, duplicate, use
  }
}

int main(void) {
  run<float>(1024, 0);
  return 0;
}

// GM001: a CUDA call writes into the struct it is given, not through the
// pointers stored in it. An allocation whose variable's address is in a
// launch's argument array, reached through a graph node's parameters, stays
// the variable's: it is released at the end, not reported as overwritten.
#include "check.h"
#include <string.h>
__global__ void scale(float *out, const float *in, int n);

void graph_node(cudaGraph_t graph, int n) {
  float *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(float)));
  CHECK(cudaMalloc(&d_out, n * sizeof(float)));
  void *args[] = {&d_out, &d_in, &n};
  // (a union with dim3 members: no default constructor in C++)
  cudaGraphNodeParams *params =
      (cudaGraphNodeParams *)calloc(1, sizeof(cudaGraphNodeParams));
  if (!params)
    abort();
  params->type = cudaGraphNodeTypeKernel;
  params->kernel.func = (void *)scale;
  params->kernel.gridDim = dim3(1);
  params->kernel.blockDim = dim3(256);
  params->kernel.kernelParams = args;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, graph, NULL, NULL, 0, params));
  free(params);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
}

void launch_args(int n, cudaStream_t s) {
  float *d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  void *args[] = {&d, &d, &n};
  CHECK(cudaLaunchKernel((void *)scale, dim3(1), dim3(256), args, 0, s));
  CHECK(cudaFree(d));
}

void still_found(int n) {
  float *d;
  CHECK(cudaMalloc(&d, n * sizeof(float))); // expected-warning{{memory allocated with cudaMalloc is never released}}
  void *args[] = {&d, &d, &n};
  CHECK(cudaLaunchKernel((void *)scale, dim3(1), dim3(256), args, 0, 0));
}

// GM006, one finding per exit: a CUDA_CHECK that returns leaks everything
// allocated so far; the finding at each exit lists the allocations it leaks
// (by variable and line), instead of one finding per kind of memory. Every
// finding of the file is expected below, so the count is checked too: 10 (the
// plugin gave 13 before, one per exit and kind of memory).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(call)                                                       \
  do {                                                                         \
    cudaError_t err_ = (call);                                                 \
    if (err_ != cudaSuccess) {                                                 \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                       \
              cudaGetErrorString(err_));                                       \
      return 1;                                                                \
    }                                                                          \
  } while (0)

__global__ void scale(float *out, const float *in, float s, int n);

int run(int n) {
  size_t bytes = n * sizeof(float);
  float *d_in, *d_out, *h_buf;
  CUDA_CHECK(cudaMalloc(&d_in, bytes));
  CUDA_CHECK(cudaMalloc(&d_out, bytes)); // expected-warning{{memory allocated with cudaMalloc is not released on this early exit, though the function releases it on its normal path: d_in (cudaMalloc, line 25)}}
  CUDA_CHECK(cudaMallocHost(&h_buf, bytes)); // expected-warning{{2 allocations are not released on this early exit, though the function releases them on its normal path: d_in (cudaMalloc, line 25), d_out (cudaMalloc, line 26)}}
  for (int i = 0; i < n; i++)
    h_buf[i] = (float)i;
  CUDA_CHECK(cudaMemcpy(d_in, h_buf, bytes, cudaMemcpyHostToDevice)); // expected-warning{{3 allocations are not released on this early exit, though the function releases them on its normal path: d_in (cudaMalloc, line 25), d_out (cudaMalloc, line 26), h_buf (cudaMallocHost, line 27)}}
  scale<<<(n + 255) / 256, 256>>>(d_out, d_in, 2.0f, n);
  CUDA_CHECK(cudaGetLastError()); // expected-warning{{3 allocations are not released on this early exit}}
  CUDA_CHECK(cudaMemcpy(h_buf, d_out, bytes, cudaMemcpyDeviceToHost)); // expected-warning{{3 allocations are not released on this early exit}}
  printf("%f\n", h_buf[0]);
  // A failed release is taken as done: what is left is the rest.
  CUDA_CHECK(cudaFree(d_in)); // expected-warning{{2 allocations are not released on this early exit, though the function releases them on its normal path: d_out (cudaMalloc, line 26), h_buf (cudaMallocHost, line 27)}}
  CUDA_CHECK(cudaFree(d_out)); // expected-warning{{memory allocated with cudaMallocHost is not released on this early exit, though the function releases it on its normal path: h_buf (cudaMallocHost, line 27)}}
  CUDA_CHECK(cudaFreeHost(h_buf));
  return 0;
}

// tmp is released nowhere in the function: never released (GM001), not
// "though the function releases it on its normal path". kept is passed on
// to the caller on the normal path, so its early exits are GM006, said so.
int keeps(int n, float **out) {
  float *tmp, *kept;
  CUDA_CHECK(cudaMalloc(&kept, n));
  CUDA_CHECK(cudaMalloc(&tmp, n)); // expected-warning{{memory allocated with cudaMalloc is not released on this early exit, though on its normal path the function releases or passes it on (returns or stores it): kept (cudaMalloc, line 47)}} expected-warning{{memory allocated with cudaMalloc is never released on this path}}
  CUDA_CHECK(cudaMemset(tmp, 0, n)); // expected-warning{{memory allocated with cudaMalloc is not released on this early exit, though on its normal path the function releases or passes it on (returns or stores it): kept (cudaMalloc, line 47)}}
  *out = kept;
  return 0;
}

int main(void) { return run(1 << 20); }

// Samples-style program: overlapping copies and kernels on streams with pinned memory.
// No findings expected.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    cudaError_t err = (call);                                               \
    if (err != cudaSuccess) {                                               \
      fprintf(stderr, "CUDA error %s:%d: %s\n", __FILE__, __LINE__,         \
              cudaGetErrorString(err));                                     \
      exit(EXIT_FAILURE);                                                   \
    }                                                                       \
  } while (0)

__global__ void __launch_bounds__(256) incKernel(int *g_out, const int *g_in, int N, int inner) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx < N) {
#pragma unroll 4
    for (int i = 0; i < inner; ++i) g_out[idx] = g_in[idx] + 1;
  }
}

static bool verify(const int *a, int n, int expected) {
  for (int i = 0; i < n; i++)
    if (a[i] != expected) return false;
  return true;
}

int main(void) {
  const int nStreams = 4;
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(int);
  int *h_in = nullptr, *h_out = nullptr, *d_in = nullptr, *d_out = nullptr;
  CUDA_CHECK(cudaMallocHost((void **)&h_in, bytes));
  CUDA_CHECK(cudaHostAlloc((void **)&h_out, bytes, cudaHostAllocDefault));
  CUDA_CHECK(cudaMalloc((void **)&d_in, bytes));
  CUDA_CHECK(cudaMalloc((void **)&d_out, bytes));
  for (int i = 0; i < n; i++) h_in[i] = i;

  cudaStream_t streams[nStreams];
  for (int i = 0; i < nStreams; i++) CUDA_CHECK(cudaStreamCreate(&streams[i]));
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));

  const int chunk = n / nStreams;
  CUDA_CHECK(cudaEventRecord(start, 0));
  for (int i = 0; i < nStreams; i++) {
    int offset = i * chunk;
    CUDA_CHECK(cudaMemcpyAsync(d_in + offset, h_in + offset, chunk * sizeof(int),
                               cudaMemcpyHostToDevice, streams[i]));
    incKernel<<<chunk / 256, 256, 0, streams[i]>>>(d_out + offset, d_in + offset, chunk, 1);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpyAsync(h_out + offset, d_out + offset, chunk * sizeof(int),
                               cudaMemcpyDeviceToHost, streams[i]));
  }
  CUDA_CHECK(cudaEventRecord(stop, 0));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  printf("time: %.3f ms, %s\n", ms, verify(h_out, n, 1) ? "ok" : "wrong");

  for (int i = 0; i < nStreams; i++) CUDA_CHECK(cudaStreamDestroy(streams[i]));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaFree(d_out));
  CUDA_CHECK(cudaFree(d_in));
  CUDA_CHECK(cudaFreeHost(h_out));
  CUDA_CHECK(cudaFreeHost(h_in));
  return 0;
}

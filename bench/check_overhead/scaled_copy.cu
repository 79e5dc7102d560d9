// (c) Kernel cost under a checker: 100 launches of a memory-bound kernel, a scaled copy of
// 64 MiB of floats into another 64 MiB. gpumem check does not instrument kernels, so it
// should cost nothing here; a checker that does (compute-sanitizer's memcheck) pays per access.
#include "bench_check.h"

__global__ void scale(const float *__restrict__ in, float *__restrict__ out, size_t n, float k)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = k * in[i];
}

int main(void)
{
    const int iterations = 100, warmup = 5;
    const size_t n = (64u << 20) / sizeof(float);
    CHECK(cudaSetDevice(0));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const unsigned blocks = (unsigned)sms * 8;
    float *a = NULL, *b = NULL;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));
    CHECK(cudaMemset(a, 0, n * sizeof(float)));
    for (int i = 0; i < warmup; i++)
        scale<<<blocks, 256>>>(a, b, n, 1.5f);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (int i = 0; i < iterations; i++)
        scale<<<blocks, 256>>>(i % 2 ? b : a, i % 2 ? a : b, n, 1.5f);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double t = now_s() - t0;
    result("scaled_copy_64MiB", t);
    printf("scaled_copy: %.1f GB/s\n", 2.0 * (double)(n * sizeof(float)) * iterations / t / 1e9);
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    return 0;
}

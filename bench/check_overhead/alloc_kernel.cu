// (a) The memory API's cost under a checker: 20 000 rounds of cudaMalloc(4 KiB), a small
// kernel on the block, cudaFree. Each allocation and release is an intercepted call (and a
// stack capture under gpumem check); cudaFree waits for the kernel.
#include "bench_check.h"

__global__ void fill(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = i;
}

static void round_trip(void)
{
    int *d = NULL;
    CHECK(cudaMalloc(&d, 4096));
    fill<<<4, 256>>>(d, 1024);
    CHECK(cudaGetLastError());
    CHECK(cudaFree(d));
}

int main(void)
{
    const int iterations = 20000, warmup = 200;
    CHECK(cudaSetDevice(0));
    for (int i = 0; i < warmup; i++)
        round_trip();
    CHECK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (int i = 0; i < iterations; i++)
        round_trip();
    CHECK(cudaDeviceSynchronize());
    result("alloc_kernel_free", now_s() - t0);
    return 0;
}

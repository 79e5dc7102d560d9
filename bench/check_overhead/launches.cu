// (b) Launch cost under a checker: 20 000 launches of an almost empty kernel, then one
// synchronize. No memory calls in the loop: what a checker adds here it adds to every launch.
#include "bench_check.h"

__global__ void tiny(int *p)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *p += 1;
}

int main(void)
{
    const int iterations = 20000, warmup = 500;
    CHECK(cudaSetDevice(0));
    int *d = NULL;
    CHECK(cudaMalloc(&d, sizeof(int)));
    CHECK(cudaMemset(d, 0, sizeof(int)));
    for (int i = 0; i < warmup; i++)
        tiny<<<1, 32>>>(d);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double t0 = now_s();
    for (int i = 0; i < iterations; i++)
        tiny<<<1, 32>>>(d);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    result("tiny_launches", now_s() - t0);
    int count = 0;
    CHECK(cudaMemcpy(&count, d, sizeof(int), cudaMemcpyDeviceToHost));
    if (count != iterations + warmup) {
        fprintf(stderr, "launches: counted %d launches, expected %d\n", count, iterations + warmup);
        return 1;
    }
    CHECK(cudaFree(d));
    return 0;
}

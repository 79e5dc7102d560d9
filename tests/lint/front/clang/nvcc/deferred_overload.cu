// A kernel calling a function that a header declares for the host and the program defines
// for the device later (XSBench's fast_forward_LCG): nvcc compiles it; clang's CUDA mode sees
// two overloads and, without deferred diagnostics, stops at the call in the kernel.
#include <cstdint>
#include <cuda_runtime.h>

uint64_t advance(uint64_t seed, uint64_t n);

__global__ void kern(uint64_t *out)
{
    out[threadIdx.x] = advance(1, threadIdx.x);
}

__device__ uint64_t advance(uint64_t seed, uint64_t n)
{
    return seed * 6364136223846793005ull + n;
}

int launch(uint64_t *d)
{
    kern<<<1, 32>>>(d);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

// A .c file that its build compiles as CUDA (nvcc -x cu): a kernel and its launch. As C,
// clang stops at __global__; gpumem lint analyzes it as CUDA.
#include <cuda_runtime.h>

__global__ void fill(float *p, float v)
{
    p[threadIdx.x] = v;
}

int run(float *d)
{
    fill<<<1, 32>>>(d, 1.0f);
    return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

#include <cuda_runtime.h>
#include "helper.h"
#if __CUDACC__ /* nvcc defines it as 1 */
#endif

int f(int c)
{
    void *p = gm_alloc(4);
    float *d;
    if (cudaMalloc(&d, 16) != cudaSuccess)
        return -1;
    if (c)
        gm_leak();
    cudaFree(d);
    return p != 0;
}

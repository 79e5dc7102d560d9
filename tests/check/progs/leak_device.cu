// expect: leak cudaMalloc device bytes=1048576 at=main@alloc
//
// One device block from cudaMalloc is used by a kernel and never released.
#include "check_prog.h"

__global__ void fill(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = i;
}

int main(void)
{
    prog_init();
    const int n = 1 << 18;
    int *d = NULL;
    CHECK(cudaMalloc(&d, n * sizeof(int))); // @alloc
    fill<<<(n + 255) / 256, 256>>>(d, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    prog_done("leak_device");
    return 0;
}

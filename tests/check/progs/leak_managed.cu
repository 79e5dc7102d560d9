// expect: leak cudaMallocManaged managed bytes=4096 at=main@alloc
//
// Managed memory touched by a kernel and by the host, never released.
#include "check_prog.h"

__global__ void inc(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += 1;
}

int main(void)
{
    prog_init();
    const int n = 1024;
    int *m = NULL;
    CHECK(cudaMallocManaged(&m, n * sizeof(int))); // @alloc
    for (int i = 0; i < n; i++)
        m[i] = i;
    inc<<<(n + 255) / 256, 256>>>(m, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    printf("m[%d] = %d\n", n - 1, m[n - 1]);
    prog_done("leak_managed");
    return 0;
}

// expect: leak cudaHostAlloc host bytes=8192 at=main@alloc
//
// Mapped host memory from cudaHostAlloc, read by a kernel through its device pointer, never
// released.
#include "check_prog.h"

__global__ void sum(const int *p, int n, int *out)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += p[i];
    *out = s;
}

int main(void)
{
    prog_init();
    const int n = 2048;
    int *h = NULL, *hd = NULL, *out = NULL, result = 0;
    CHECK(cudaHostAlloc(&h, n * sizeof(int), cudaHostAllocMapped)); // @alloc
    for (int i = 0; i < n; i++)
        h[i] = 1;
    CHECK(cudaHostGetDevicePointer(&hd, h, 0));
    CHECK(cudaMalloc(&out, sizeof(int)));
    sum<<<1, 1>>>(hd, n, out);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&result, out, sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(out));
    printf("sum = %d\n", result);
    prog_done("leak_host");
    return 0;
}

// expect: leak cudaMalloc device bytes=268435456 leak_kind=reachable at=main@alloc_a
// expect: leak cudaMalloc device bytes=268435456 leak_kind=reachable at=main@alloc_b
// expect: leak cudaMalloc device bytes=268435456 leak_kind=reachable at=main@alloc_c
// expect: leak cudaMalloc device bytes=268435456 leak_kind=reachable at=main@alloc_d
//
// As a public NVIDIA sample does: four 256 MiB device buffers in globals, and exit() from main
// without releasing them. The globals still point at them (still reachable), and each is a
// leak, an error by default, with its line.
#include <stdlib.h>

#include "check_prog.h"

static float *d_a, *d_b, *d_c, *d_d;

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

int main(void)
{
    const size_t bytes = (size_t)256 << 20, n = bytes / sizeof(float);
    prog_init();
    CHECK(cudaMalloc((void **)&d_a, bytes)); // @alloc_a
    CHECK(cudaMalloc((void **)&d_b, bytes)); // @alloc_b
    CHECK(cudaMalloc((void **)&d_c, bytes)); // @alloc_c
    CHECK(cudaMalloc((void **)&d_d, bytes)); // @alloc_d
    fill<<<(unsigned)((n + 255) / 256), 256>>>(d_a, n, 1.0f);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    prog_done("leak_global_exit");
    exit(EXIT_SUCCESS);
}

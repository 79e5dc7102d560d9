// expect-gpus: 2
// expect: leak cudaMalloc device bytes=1048576 device=0 at=main@a
// expect: leak cudaMalloc device bytes=2097152 device=1 at=main@b
//
// One process driving two devices: a buffer on each, a peer copy from device 0 to device 1
// (cudaMemcpyPeer, with peer access enabled when the devices allow it) and back, a third
// buffer on device 1 released, and the first two never released: one leak on each device,
// each reported with its own device.
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
    const int n = 1 << 18; // 1 MiB of int
    int *a = NULL, *b = NULL, *scratch = NULL;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&a, n * sizeof(int))); // @a
    fill<<<(n + 255) / 256, 256>>>(a, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(1));
    int can = 0;
    CHECK(cudaDeviceCanAccessPeer(&can, 1, 0));
    if (can)
        CHECK(cudaDeviceEnablePeerAccess(0, 0));
    CHECK(cudaMalloc(&b, 2 * n * sizeof(int))); // @b
    CHECK(cudaMalloc(&scratch, 4096));
    CHECK(cudaMemcpyPeer(b, 1, a, 0, n * sizeof(int)));
    CHECK(cudaMemcpyPeer(b + n, 1, b, 1, n * sizeof(int)));
    int last = 0;
    CHECK(cudaMemcpy(&last, b + 2 * n - 1, sizeof last, cudaMemcpyDeviceToHost));
    if (last != n - 1) {
        fprintf(stderr, "leak_two_gpus: the peer copy gave %d, not %d\n", last, n - 1);
        return 1;
    }
    CHECK(cudaFree(scratch));
    prog_done("leak_two_gpus");
    return 0;
}

// expect: mismatched-release cudaFreeHost device bytes=4096 at=main@planted alloc_at=main@alloc
//
// Device memory from cudaMalloc released with cudaFreeHost. When CUDA refuses the wrong call,
// the program releases the block with cudaFree, so nothing leaks.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096)); // @alloc
    CHECK(cudaMemset(d, 0, 4096));
    CHECK(cudaDeviceSynchronize());
    cudaError_t err = cudaFreeHost(d); // @planted
    printf("planted: cudaFreeHost of device memory returned %s\n", cudaGetErrorName(err));
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        CHECK(cudaFree(d));
    }
    prog_done("mismatch_freehost_device");
    return 0;
}

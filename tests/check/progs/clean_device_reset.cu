// No findings expected: device allocations still live at cudaDeviceReset are released by it,
// so they are not leaks. The device is then used again, and that memory released properly.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL, *async = NULL, *pitched = NULL;
    size_t pitch = 0;
    CHECK(cudaMalloc(&d, 1 << 20));
    CHECK(cudaMallocPitch(&pitched, &pitch, 1000, 100));
    CHECK(cudaMallocAsync(&async, 1 << 16, 0));
    CHECK(cudaMemset(d, 0, 1 << 20));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaDeviceReset());
    printf("clean_device_reset: reset with three device allocations live\n");

    prog_init();
    void *again = NULL;
    CHECK(cudaMalloc(&again, 1 << 20));
    CHECK(cudaMemset(again, 0, 1 << 20));
    CHECK(cudaFree(again));
    prog_done("clean_device_reset");
    return 0;
}

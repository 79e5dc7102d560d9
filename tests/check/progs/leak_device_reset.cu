// expect: leak cudaMalloc device bytes=1048576 at=main@malloc
// expect: leak cudaMallocPitch device at=main@pitch
// expect: leak cudaMallocAsync device-async bytes=65536 at=main@async
//
// Device allocations still live at cudaDeviceReset: the reset releases them with the context,
// and, as compute-sanitizer's leak check does at a context's destruction, each is reported as
// leaked then (with the reset's stack). The device is then used again, and that memory is
// released properly: no finding for it.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL, *async = NULL, *pitched = NULL;
    size_t pitch = 0;
    CHECK(cudaMalloc(&d, 1 << 20));                            // @malloc
    CHECK(cudaMallocPitch(&pitched, &pitch, 1000, 100));       // @pitch
    CHECK(cudaMallocAsync(&async, 1 << 16, 0));                // @async
    CHECK(cudaMemset(d, 0, 1 << 20));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaDeviceReset());
    printf("leak_device_reset: reset with three device allocations live\n");

    prog_init();
    void *again = NULL;
    CHECK(cudaMalloc(&again, 1 << 20));
    CHECK(cudaMemset(again, 0, 1 << 20));
    CHECK(cudaFree(again));
    prog_done("leak_device_reset");
    return 0;
}

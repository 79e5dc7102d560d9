// expect: leak cudaMallocAsync device-async bytes=262144 at=main@alloc
//
// Stream-ordered memory from the device's default pool: one block is released with
// cudaFreeAsync, the other never is.
#include "check_prog.h"

int main(void)
{
    prog_init();
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *kept = NULL, *freed = NULL;
    CHECK(cudaMallocAsync(&freed, 4096, s));
    CHECK(cudaMallocAsync(&kept, 262144, s)); // @alloc
    CHECK(cudaMemsetAsync(kept, 0, 262144, s));
    CHECK(cudaFreeAsync(freed, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));
    prog_done("leak_device_async");
    return 0;
}

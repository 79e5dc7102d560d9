// expect: leak cudaMallocPitch device at=main@alloc
//
// A pitched 2D block (the size is the pitch the runtime chose times the height, so no bytes=).
#include "check_prog.h"

int main(void)
{
    prog_init();
    float *d = NULL;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&d, &pitch, 1000 * sizeof(float), 300)); // @alloc
    CHECK(cudaMemset2D(d, pitch, 0, 1000 * sizeof(float), 300));
    CHECK(cudaDeviceSynchronize());
    printf("pitch = %zu\n", pitch);
    prog_done("leak_pitch");
    return 0;
}

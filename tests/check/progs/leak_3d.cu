// expect: leak cudaMalloc3D device at=main@alloc
//
// A 3D pitched block from cudaMalloc3D, never released.
#include "check_prog.h"

int main(void)
{
    prog_init();
    cudaPitchedPtr p;
    cudaExtent e = make_cudaExtent(100 * sizeof(float), 64, 32);
    CHECK(cudaMalloc3D(&p, e)); // @alloc
    CHECK(cudaMemset3D(p, 0, e));
    CHECK(cudaDeviceSynchronize());
    printf("pitch = %zu\n", p.pitch);
    prog_done("leak_3d");
    return 0;
}

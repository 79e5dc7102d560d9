// expect: mismatched-release cudaFreeHost managed bytes=4096 at=main@planted alloc_at=main@alloc
//
// Managed memory from cudaMallocManaged released with cudaFreeHost. When CUDA refuses the
// wrong call, the program releases the block with cudaFree, so nothing leaks.
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    char *m = NULL;
    CHECK(cudaMallocManaged(&m, 4096)); // @alloc
    memset(m, 0, 4096);
    cudaError_t err = cudaFreeHost(m); // @planted
    printf("planted: cudaFreeHost of managed memory returned %s\n", cudaGetErrorName(err));
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        CHECK(cudaFree(m));
    }
    prog_done("mismatch_freehost_managed");
    return 0;
}

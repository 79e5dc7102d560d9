// expect: mismatched-release cudaFree pinned bytes=4096 at=main@planted alloc_at=main@alloc
//
// Pinned memory from cudaMallocHost released with cudaFree instead of cudaFreeHost. CUDA is
// expected to refuse the wrong call; the program then releases the block with the right one,
// so nothing leaks. (Were CUDA to accept it, the block would be gone and must not be reported
// as a leak either.)
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    char *h = NULL;
    CHECK(cudaMallocHost(&h, 4096)); // @alloc
    memset(h, 0, 4096);
    cudaError_t err = cudaFree(h); // @planted
    printf("planted: cudaFree of pinned memory returned %s\n", cudaGetErrorName(err));
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        CHECK(cudaFreeHost(h));
    }
    prog_done("mismatch_cudafree_pinned");
    return 0;
}

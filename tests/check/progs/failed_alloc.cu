// expect: failed-alloc cudaMalloc device bytes=1125899906842624 error=cudaErrorMemoryAllocation at=main@huge
//
// cudaMalloc of 1 PiB (1 << 50 bytes), which no GPU has: the program checks the error, says
// so and goes on with a reasonable size.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *huge = NULL;
    cudaError_t err = cudaMalloc(&huge, (size_t)1 << 50); // @huge
    if (err == cudaSuccess) {
        fprintf(stderr, "failed_alloc: cudaMalloc of 1 PiB succeeded?\n");
        return 1;
    }
    printf("cudaMalloc(1 PiB) failed as it should: %s\n", cudaGetErrorName(err));
    (void)cudaGetLastError();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaFree(d));
    prog_done("failed_alloc");
    return 0;
}

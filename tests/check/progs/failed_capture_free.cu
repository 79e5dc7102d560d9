// expect: failed-call cudaFreeAsync - at=main@free
//
// A failed CUDA call the program ignores: a stream-ordered release of memory from cudaMalloc
// while its stream is being captured. A graph's free node may release only memory that
// stream-ordered allocation made, so CUDA refuses it, and the capture fails with it; the
// program looks at neither status. The memory is released with cudaFree after the capture:
// no leak.
#include "check_prog.h"

int main(void)
{
    prog_init();
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *d = NULL;
    CHECK(cudaMalloc(&d, 1 << 20));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    cudaFreeAsync(d, s); // @free
    cudaGraph_t g = NULL;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    printf("failed_capture_free: end of capture returned %s\n", cudaGetErrorName(end));
    if (g)
        CHECK(cudaGraphDestroy(g));
    (void)cudaGetLastError();
    CHECK(cudaFree(d));
    CHECK(cudaStreamDestroy(s));
    prog_done("failed_capture_free");
    return 0;
}

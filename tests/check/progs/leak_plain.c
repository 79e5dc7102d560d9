// expect: leak cudaMalloc device bytes=12288
//
// A plain C program, built by the host compiler and linked with the CUDA runtime (no nvcc, no
// kernels): one cudaMalloc is never released, one is.
#include "check_prog.h"

static void *make_buffer(size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes));
    CHECK(cudaMemset(p, 0, bytes));
    return p;
}

int main(void)
{
    prog_init();
    void *released = make_buffer(4096);
    void *leaked = make_buffer(12288);
    CHECK(cudaFree(released));
    printf("leaked block at %p\n", leaked);
    prog_done("leak_plain");
    return 0;
}

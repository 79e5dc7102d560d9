// expect: leak cudaMalloc device bytes=12288 at=make_buffer@alloc,main@leaked
//
// A plain C program, built by the host compiler and linked with the CUDA runtime (no nvcc, no
// kernels): one cudaMalloc is never released, one is. make_buffer is kept out of line, so that
// its frame and main's are both asserted at every optimization level.
#include "check_prog.h"

__attribute__((noinline)) static void *make_buffer(size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes)); // @alloc
    CHECK(cudaMemset(p, 0, bytes));
    return p;
}

int main(void)
{
    prog_init();
    void *released = make_buffer(4096);
    void *leaked = make_buffer(12288); // @leaked
    CHECK(cudaFree(released));
    printf("leaked block at %p\n", leaked);
    prog_done("leak_plain");
    return 0;
}

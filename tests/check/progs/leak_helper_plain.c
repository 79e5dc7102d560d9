// expect: leak cudaMalloc device bytes=65536 at=alloc_scratch@alloc,main@scratch
//
// A plain C program (host compiler, CUDA runtime as a library): a leak through a helper that
// keeps its own frame (noinline), called from main. The stack must name alloc_scratch at its
// allocation line and main at the call.
#include "check_prog.h"

__attribute__((noinline)) static void *alloc_scratch(size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMalloc(&p, bytes)); // @alloc
    CHECK(cudaMemset(p, 0, bytes));
    return p;
}

int main(void)
{
    prog_init();
    void *scratch = alloc_scratch(65536); // @scratch
    printf("scratch at %p\n", scratch);
    prog_done("leak_helper_plain");
    return 0;
}

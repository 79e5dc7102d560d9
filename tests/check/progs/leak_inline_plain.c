// expect: leak cudaMallocManaged managed bytes=8192 at=alloc_ring@alloc>make_ring@ring>main@make
//
// A plain C program (host compiler, CUDA runtime as a library): a leak through helpers that are
// always inlined (always_inline, at every optimization level): alloc_ring inlined into
// make_ring, inlined into main. The stack must name both helpers as inlined frames, each at its
// line, and main at the call of make_ring.
#include <string.h>

#include "check_prog.h"

static inline __attribute__((always_inline)) void *alloc_ring(size_t bytes)
{
    void *p = NULL;
    CHECK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal)); // @alloc
    return p;
}

static inline __attribute__((always_inline)) void *make_ring(size_t bytes)
{
    void *ring = alloc_ring(bytes); // @ring
    memset(ring, 0, bytes);
    return ring;
}

int main(void)
{
    prog_init();
    void *ring = make_ring(8192); // @make
    printf("ring at %p\n", ring);
    prog_done("leak_inline_plain");
    return 0;
}

// The program's release and allocation helpers, in a file of their own.
#include "check.h"
#include "buffers.h"
void release_buffer(void *p) {
    if (p)
        CHECK(cudaFree(p));
}
void alloc_buffer(float **p, size_t n) { CHECK(cudaMalloc((void **)p, n)); }
void fill(float *p, size_t n) { CHECK(cudaMemset(p, 0, n)); }

// Corpus for GM009 (use after release): host accesses to released host-visible memory, and
// released pointers handed to CUDA calls.
// corpus-rules: GM009
#include <cuda_runtime.h>
#include <gpumem.h>
#include <string.h>
#include "corpus_checks.h"

void use(const void *p);

// case: pinned memory read after cudaFreeHost
float gm009_pinned_read(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    h[0] = 1.0f;
    CUDA_CHECK(cudaFreeHost(h));
    return h[0];  // expect: GM009
}

// case: managed memory written after cudaFree
void gm009_managed_write(size_t n) {
    int *m;
    CUDA_CHECK(cudaMallocManaged(&m, n));
    CUDA_CHECK(cudaFree(m));
    m[1] = 2;  // expect: GM009
}

// case: a released device pointer passed to cudaMemcpy
void gm009_memcpy(float *h, size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));  // expect: GM009
}

// case: a released pointer passed to cudaMemset
void gm009_memset(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaMemset(d, 0, n));  // expect: GM009
}

// case: malloc memory copied into after free
void gm009_malloc(const char *src, size_t n) {
    char *buf = (char *)malloc(n);
    free(buf);
    buf[0] = src[0];  // expect: GM009
}

// case: gpumem pinned memory read after gpumem_free
float gm009_gpumem(size_t n) {
    float *h = (float *)gpumem_pinned_alloc(n, sizeof(float));
    gpumem_free(h);
    return h[0];  // expect: GM009
}

// ---- negatives ----

// case: use before the release
float ok_before(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    h[0] = 1.0f;
    float v = h[0];
    CUDA_CHECK(cudaFreeHost(h));
    return v;
}

// case: the variable is given new memory
void ok_new_memory(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    CUDA_CHECK(cudaFreeHost(h));
    CUDA_CHECK(cudaMallocHost(&h, n));
    h[0] = 0.0f;
    CUDA_CHECK(cudaFreeHost(h));
}

// case: the pointer's value (not the memory) is printed after the release
void ok_print_pointer(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    printf("released %p\n", (void *)d);
}

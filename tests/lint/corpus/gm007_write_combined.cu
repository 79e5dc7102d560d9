// Corpus for GM007 (host read of write-combined memory).
// corpus-rules: GM007
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <gpumem.h>

// case: summing a write-combined buffer on the host
float gm007_sum(size_t n) {
    float *h, sum = 0;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n * sizeof(float), cudaHostAllocWriteCombined));
    for (size_t i = 0; i < n; i++)
        sum += h[i];  // expect: GM007
    CUDA_CHECK(cudaFreeHost(h));
    return sum;
}

// case: dereference read
int gm007_deref(void) {
    int *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, 64, cudaHostAllocWriteCombined | cudaHostAllocMapped));
    int v = *h;  // expect: GM007
    CUDA_CHECK(cudaFreeHost(h));
    return v;
}

// case: memcpy out of write-combined memory
void gm007_memcpy(char *dst, size_t n) {
    char *wc;
    CUDA_CHECK(cudaHostAlloc((void **)&wc, n, cudaHostAllocWriteCombined));
    memcpy(dst, wc, n);  // expect: GM007
    CUDA_CHECK(cudaFreeHost(wc));
}

// case: gpumem write-combined allocation read back
double gm007_gpumem(size_t n) {
    double *h = (double *)gpumem_host_alloc(n, sizeof(double), GPUMEM_HOST_WRITE_COMBINED);
    double first = h[0];  // expect: GM007
    gpumem_free(h);
    return first;
}

// case: compound assignment reads
void gm007_compound(size_t n) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocWriteCombined));
    h[1] += 2.0f;  // expect: GM007
    CUDA_CHECK(cudaFreeHost(h));
}

// case: a read in a condition
int gm007_condition(size_t n) {
    int *flags;
    CUDA_CHECK(cudaHostAlloc((void **)&flags, n, cudaHostAllocWriteCombined));
    int done = 0;
    if (flags[0] != 0)  // expect: GM007
        done = 1;
    CUDA_CHECK(cudaFreeHost(flags));
    return done;
}

// case: printing a value
void gm007_print(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost((void **)&h, n, cudaHostAllocWriteCombined));
    printf("%f\n", h[0]);  // expect: GM007
    CUDA_CHECK(cudaFreeHost(h));
}

// case: read through an alias
float gm007_alias(size_t n) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocWriteCombined));
    float *view = h;
    float x = view[3];  // expect: GM007
    CUDA_CHECK(cudaFreeHost(h));
    return x;
}

// ---- negatives ----

// case: host writes, device reads: what write-combined memory is for
void ok_writes(float *d, size_t n) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n * sizeof(float), cudaHostAllocWriteCombined));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i;
    *h = 1.0f;
    memcpy(h, d, 4);
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaFreeHost(h));
}

// case: ordinary pinned memory may be read
float ok_not_wc(size_t n) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocMapped | cudaHostAllocPortable));
    float v = h[0];
    CUDA_CHECK(cudaFreeHost(h));
    return v;
}

// case: gpumem pinned without the flag
float ok_gpumem_plain(size_t n) {
    float *h = (float *)gpumem_host_alloc(n, 4, GPUMEM_HOST_MAPPED);
    float v = h[0];
    gpumem_free(h);
    return v;
}

// case: writes through an alias
void ok_alias_write(size_t n) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocWriteCombined));
    float *w = h;
    w[0] = 1.0f;
    CUDA_CHECK(cudaFreeHost(h));
}

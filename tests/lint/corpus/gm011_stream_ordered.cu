// Corpus for GM011 (stream-ordered release of memory that is not stream-ordered device memory).
// cudaFreeAsync also accepts cudaMalloc memory (CUDA Runtime API, stream-ordered allocator).
// corpus-rules: GM011 GM002
#include <cuda_runtime.h>
#include <gpumem.h>
#include "corpus_checks.h"

// case: pinned memory released with cudaFreeAsync
void gm011_pinned(size_t n, cudaStream_t s) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    CUDA_CHECK(cudaFreeAsync(h, s));  // expect: GM011
}

// case: managed memory released with cudaFreeAsync
void gm011_managed(size_t n, cudaStream_t s) {
    float *m;
    CUDA_CHECK(cudaMallocManaged(&m, n));
    CUDA_CHECK(cudaFreeAsync(m, s));  // expect: GM011
}

// case: mapped host memory released with cudaFreeAsync
void gm011_hostalloc(size_t n, cudaStream_t s) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocMapped));
    CUDA_CHECK(cudaFreeAsync(h, s));  // expect: GM011
}

// case: gpumem pinned memory released with gpumem_free_async
void gm011_gpumem_pinned(size_t n, cudaStream_t s) {
    float *h = (float *)gpumem_pinned_alloc(n, sizeof(float));
    gpumem_free_async(h, s);  // expect: GM011
}

// case: malloc memory released with cudaFreeAsync
void gm011_malloc(size_t n, cudaStream_t s) {
    float *h = (float *)malloc(n);
    CUDA_CHECK(cudaFreeAsync(h, s));  // expect: GM011
}

// ---- negatives ----

// case: stream-ordered memory released in stream order
void ok_async_pair(size_t n, cudaStream_t s) {
    float *d;
    CUDA_CHECK(cudaMallocAsync(&d, n, s));
    CUDA_CHECK(cudaFreeAsync(d, s));
}

// case: cudaMalloc memory released with cudaFreeAsync
void ok_device_async_free(size_t n, cudaStream_t s) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFreeAsync(d, s));
}

// case: gpumem device memory released with gpumem_free_async
void ok_gpumem_async(size_t n, cudaStream_t s) {
    float *a = (float *)gpumem_device_alloc_async(n, 4, s);
    float *b = (float *)gpumem_device_alloc(n, 4);
    gpumem_free_async(a, s);
    gpumem_free_async(b, s);
}

// case: pool allocation released in stream order
void ok_pool(size_t n, cudaMemPool_t pool, cudaStream_t s) {
    void *d;
    CUDA_CHECK(cudaMallocFromPoolAsync(&d, n, pool, s));
    CUDA_CHECK(cudaFreeAsync(d, s));
}

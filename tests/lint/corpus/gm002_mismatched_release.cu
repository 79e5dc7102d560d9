// Corpus for GM002 (mismatched release): the finding is at the release.
// corpus-rules: GM002
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <stdlib.h>
#include <gpumem.h>

// case: pinned memory released with cudaFree
void gm002_pinned_cudafree(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    CUDA_CHECK(cudaFree(h));  // expect: GM002
}

// case: cudaHostAlloc memory released with cudaFree
void gm002_hostalloc_cudafree(size_t n) {
    float *h;
    CUDA_CHECK(cudaHostAlloc((void **)&h, n, cudaHostAllocPortable));
    cudaFree(h);  // expect: GM002
}

// case: pinned memory released with free
void gm002_pinned_free(size_t n) {
    char *h;
    CUDA_CHECK(cudaMallocHost((void **)&h, n));
    free(h);  // expect: GM002
}

// case: pinned memory released with delete[]
void gm002_pinned_delete(size_t n) {
    int *h;
    CUDA_CHECK(cudaMallocHost(reinterpret_cast<void **>(&h), n));
    delete[] h;  // expect: GM002
}

// case: device memory released with cudaFreeHost
void gm002_device_freehost(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFreeHost(d));  // expect: GM002
}

// case: managed memory released with free
void gm002_managed_free(size_t n) {
    float *m;
    CUDA_CHECK(cudaMallocManaged(&m, n));
    free(m);  // expect: GM002
}

// case: managed memory released with cudaFreeHost
void gm002_managed_freehost(size_t n) {
    float *m;
    CUDA_CHECK(cudaMallocManaged(&m, n, cudaMemAttachGlobal));
    CUDA_CHECK(cudaFreeHost(m));  // expect: GM002
}

// case: device memory released with delete
void gm002_device_delete(size_t n) {
    double *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    delete d;  // expect: GM002
}

// case: malloc memory released with cudaFree
void gm002_malloc_cudafree(size_t n) {
    float *h = (float *)malloc(n);
    CUDA_CHECK(cudaFree(h));  // expect: GM002
}

// case: malloc memory released with cudaFreeHost
void gm002_malloc_freehost(size_t n) {
    float *h = static_cast<float *>(calloc(n, 4));
    CUDA_CHECK(cudaFreeHost(h));  // expect: GM002
}

// case: new[] memory released with cudaFreeHost
void gm002_new_freehost(size_t n) {
    float *h = new float[n];
    cudaFreeHost(h);  // expect: GM002
}

// case: gpumem memory released with cudaFree
void gm002_gpumem_cudafree(size_t n) {
    float *d = (float *)gpumem_device_alloc(n, 4);
    cudaFree(d);  // expect: GM002
}

// case: CUDA memory released with gpumem_free
void gm002_cuda_gpumem_free(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    gpumem_free(d);  // expect: GM002
}

// case: stream-ordered memory released with cudaFreeHost
void gm002_async_freehost(size_t n, cudaStream_t s) {
    float *d;
    CUDA_CHECK(cudaMallocAsync(&d, n, s));
    CUDA_CHECK(cudaFreeHost(d));  // expect: GM002
}

// case: released through an alias with the wrong call
void gm002_alias(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    float *staging = h;
    CUDA_CHECK(cudaFree(staging));  // expect: GM002
}

// case: pinned memory released through a wrapper that calls cudaFree (the finding is at the
// wrapper's cudaFree, reached from the caller's path)
static void free_device(float *p) {
    CUDA_CHECK(cudaFree(p));  // expect: GM002
}
void gm002_wrapper(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    free_device(h);
}

struct stage { float *h_staging; float *d_work; };
// case: a field allocated pinned in one function ...
void stage_init(struct stage *s, size_t n) {
    CUDA_CHECK(cudaMallocHost(&s->h_staging, n));
    CUDA_CHECK(cudaMalloc(&s->d_work, n));
}
// ... and released with cudaFree in another, both called on one object
void gm002_field_other_function(struct stage *s) {
    CUDA_CHECK(cudaFree(s->h_staging));  // expect: GM002
    CUDA_CHECK(cudaFree(s->d_work));
}
void stage_run(size_t n) {
    struct stage s;
    stage_init(&s, n);
    gm002_field_other_function(&s);
}

float *g_pinned;
void globals_init(size_t n) { CUDA_CHECK(cudaMallocHost(&g_pinned, n)); }
// case: a global allocated pinned released with cudaFree
void gm002_global(void) {
    CUDA_CHECK(cudaFree(g_pinned));  // expect: GM002
}
void globals_run(size_t n) {
    globals_init(n);
    gm002_global();
}

// case: released on a branch with the wrong call
void gm002_branch(size_t n, int fast) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    if (fast)
        CUDA_CHECK(cudaFreeHost(h));
    else
        CUDA_CHECK(cudaFree(h));  // expect: GM002
}

// ---- negatives ----

// case: each kind with its own release
void ok_pairs(size_t n, cudaStream_t s) {
    float *d, *m, *h, *p, *a;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaMallocManaged(&m, n));
    CUDA_CHECK(cudaMallocHost(&h, n));
    CUDA_CHECK(cudaHostAlloc((void **)&p, n, 0));
    CUDA_CHECK(cudaMallocAsync(&a, n, s));
    float *c = (float *)malloc(n);
    float *g = (float *)gpumem_pinned_alloc(n, 4);
    CUDA_CHECK(cudaFreeAsync(a, s));
    CUDA_CHECK(cudaFreeHost(p));
    CUDA_CHECK(cudaFreeHost(h));
    CUDA_CHECK(cudaFree(m));
    CUDA_CHECK(cudaFree(d));
    free(c);
    gpumem_free(g);
}

// case: one variable reused for two kinds
void ok_reused_variable(size_t n) {
    float *p;
    CUDA_CHECK(cudaMallocHost(&p, n));
    CUDA_CHECK(cudaFreeHost(p));
    CUDA_CHECK(cudaMalloc(&p, n));
    CUDA_CHECK(cudaFree(p));
}

// case: gpumem releases every gpumem kind
void ok_gpumem_kinds(size_t n, cudaStream_t s) {
    void *a = gpumem_device_alloc(n, 1);
    void *b = gpumem_managed_alloc(n, 1, 0);
    void *c = gpumem_host_alloc(n, 1, GPUMEM_HOST_MAPPED);
    void *d = gpumem_device_alloc_async(n, 1, s);
    gpumem_free(a);
    gpumem_free(b);
    gpumem_free(c);
    gpumem_free_async(d, s);
}

struct twin { float *buf; };
struct other { float *buf; };
void twin_init(struct twin *t, size_t n) { CUDA_CHECK(cudaMallocHost(&t->buf, n)); }
void other_init(struct other *o, size_t n) { CUDA_CHECK(cudaMalloc(&o->buf, n)); }
// case: a field name allocated as two kinds in this file is not guessed
void ok_ambiguous_field(struct other *o) {
    CUDA_CHECK(cudaFree(o->buf));
}

// case: new[] released with delete[]
void ok_new_delete(size_t n) {
    float *h = new float[n];
    delete[] h;
}

// case: field released with the matching call in another function
void ok_field_match(struct stage *s) {
    CUDA_CHECK(cudaFreeHost(s->h_staging));
}

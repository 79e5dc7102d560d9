// Corpus for GM001 (allocation never released). Each function is one case.
// A line's "expect:" comment lists the findings the linter must report on that line.
// corpus-rules: GM001 GM006
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <gpumem.h>
#include <memory>
#include <vector>

void consume(const float *p);
void destroyDeviceBuffer(void *p);
void release_buffer(float *p) { CUDA_CHECK(cudaFree(p)); }

// case: plain cudaMalloc, never released
void gm001_plain(size_t n) {
    float *d = nullptr;
    CUDA_CHECK(cudaMalloc(&d, n * sizeof(float)));  // expect: GM001
    consume(d);
}

// case: managed memory, never released
void gm001_managed(size_t n) {
    float *m;
    CUDA_CHECK(cudaMallocManaged(&m, n));  // expect: GM001
    m[0] = 1.0f;
}

// case: pinned memory, never released
void gm001_pinned(size_t n) {
    char *h;
    CUDA_CHECK(cudaMallocHost((void **)&h, n));  // expect: GM001
    h[0] = 0;
}

// case: cudaHostAlloc, never released
void gm001_hostalloc(size_t n) {
    int *h = NULL;
    checkCudaErrors(cudaHostAlloc((void **)&h, n, cudaHostAllocMapped));  // expect: GM001
}

// case: stream-ordered allocation, never released
void gm001_async(size_t n, cudaStream_t s) {
    void *d;
    CUDA_CHECK(cudaMallocAsync(&d, n, s));  // expect: GM001
}

// case: pitched allocation, never released
void gm001_pitch(size_t w, size_t h) {
    float *d;
    size_t pitch;
    CUDA_CHECK(cudaMallocPitch((void **)&d, &pitch, w, h));  // expect: GM001
}

// case: gpumem allocator, never released
void gm001_gpumem(size_t n) {
    float *d = (float *)gpumem_device_alloc(n, sizeof(float));  // expect: GM001
    consume(d);
}

// case: gpumem pinned allocator assigned later, never released
void gm001_gpumem_pinned(size_t n) {
    double *h;
    h = (double *)gpumem_pinned_alloc(n, sizeof *h);  // expect: GM001
    h[0] = 1.0;
}

// case: released on one branch only
void gm001_one_branch(size_t n, int keep) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));  // expect: GM001
    if (!keep)
        CUDA_CHECK(cudaFree(d));
}

// case: reinterpret_cast out-parameter, never released
void gm001_cpp_cast(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&d), n));  // expect: GM001
}

// case: two allocations, only the first released
void gm001_second_forgotten(size_t n) {
    float *a, *b;
    CUDA_CHECK(cudaMalloc(&a, n));
    CUDA_CHECK(cudaMalloc(&b, n));  // expect: GM001
    CUDA_CHECK(cudaFree(a));
}

// case: allocation with an unchecked failure path, leaked at a top-level return
int gm001_return_code(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));  // expect: GM001
    consume(d);
    return 0;
}

// ---- negatives ----

// case: released at the end
void ok_released(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    consume(d);
    CUDA_CHECK(cudaFree(d));
}

// case: pointer returned
float *ok_returned(size_t n) {
    float *d = nullptr;
    CUDA_CHECK(cudaMalloc(&d, n));
    return d;
}

// case: pointer returned through a cast
void *ok_returned_cast(size_t n) {
    float *d = nullptr;
    CUDA_CHECK(cudaMalloc(&d, n));
    return (void *)d;
}

struct buffers { float *dev; float *host; size_t n; };

// case: stored in a struct
void ok_stored_in_struct(struct buffers *b, size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    b->dev = d;
}

// case: stored through an out parameter
int ok_out_param(float **out, size_t n) {
    float *d;
    if (cudaMalloc(&d, n) != cudaSuccess)
        return -1;
    *out = d;
    return 0;
}

// case: allocated straight into an out parameter
cudaError_t ok_direct_out(float **out, size_t n) {
    return cudaMalloc((void **)out, n);
}

// case: stored in an array slot
void ok_stored_in_array(float **slots, int i, size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    slots[i] = d;
}

// case: released by a wrapper defined in this file
void ok_wrapper(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    release_buffer(d);
}

// case: released by a wrapper from elsewhere, named as one
void ok_named_wrapper(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    destroyDeviceBuffer(d);
}

// case: handed to a gpumem scope
void ok_adopted(gpumem_scope *s, size_t n) {
    float *d = (float *)gpumem_device_alloc(n, 4);
    gpumem_adopt(s, d);
}

// case: adopted at the allocation
void ok_adopted_inline(gpumem_scope *s, size_t n) {
    float *d = (float *)gpumem_adopt(s, gpumem_device_alloc(n, 4));
    consume(d);
}

// case: GPUMEM_AUTO variable
void ok_auto(size_t n) {
    GPUMEM_AUTO float *d = (float *)gpumem_device_alloc(n, 4);
    consume(d);
}

// case: pushed into a container that owns it
void ok_vector(std::vector<float *> &all, size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    all.push_back(d);
}

static float *g_scratch;
// case: allocated into a global
void ok_global(size_t n) {
    CUDA_CHECK(cudaMalloc(&g_scratch, n));
}

// case: allocated into a struct field
void ok_field(struct buffers *b) {
    CUDA_CHECK(cudaMallocHost(&b->host, b->n));
}

// case: released through an alias
void ok_alias(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    float *alias = d;
    CUDA_CHECK(cudaFree(alias));
}

struct CudaDeleter { void operator()(float *p) const { cudaFree(p); } };
// case: owned by a smart pointer
void ok_unique_ptr(size_t n) {
    float *raw;
    CUDA_CHECK(cudaMalloc(&raw, n));
    std::unique_ptr<float, CudaDeleter> owner(raw);
}

// case: released by a scope guard lambda
void ok_lambda_guard(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    auto guard = [&]() { cudaFree(d); };
    guard();
}

// case: released behind a null test
void ok_null_test(size_t n, int use) {
    float *d = nullptr;
    if (use)
        CUDA_CHECK(cudaMalloc(&d, n));
    if (d)
        CUDA_CHECK(cudaFree(d));
}

// case: the process exits with a failure status (the error branch of a check)
void ok_exit(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    consume(d);
    exit(1);
}

// case: the process ends with exit(0), as a return from main ends it
void exits_successfully(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));  // expect: GM001
    consume(d);
    exit(0);
}

// case: the failed allocation owns nothing
int ok_failure_checked(size_t n) {
    float *d;
    if (cudaMalloc(&d, n) != cudaSuccess)
        return -1;
    consume(d);
    CUDA_CHECK(cudaFree(d));
    return 0;
}

// case: host malloc memory is not the leak rules' business
void ok_malloc_not_tracked(size_t n) {
    float *h = (float *)malloc(n);
    h[0] = 1.0f;
    char *copy = new char[n];
    copy[0] = 0;
}

// case: allocated into a reference parameter: the caller owns it
void ok_reference_out(float *&out, size_t n) {
    CUDA_CHECK(cudaMalloc(&out, n));
}

// Corpus for GM008 (memory released twice): the finding is at the second release.
// corpus-rules: GM008
#include <cuda_runtime.h>
#include <gpumem.h>
#include "corpus_checks.h"

void use(const void *p);

// case: cudaFree twice
void gm008_twice(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaFree(d));  // expect: GM008
}

// case: a cleanup label after a release on the error path
int gm008_cleanup(size_t n, int fail) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    if (fail) {
        CUDA_CHECK(cudaFreeHost(h));
        goto out;
    }
    use(h);
out:
    CUDA_CHECK(cudaFreeHost(h));  // expect: GM008
    return fail;
}

// case: gpumem_free twice through an alias
void gm008_alias(size_t n) {
    float *a = (float *)gpumem_device_alloc(n, 4);
    float *b = a;
    gpumem_free(a);
    gpumem_free(b);  // expect: GM008
}

// case: released in a loop that runs more than once
void gm008_loop(int k, size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    for (int i = 0; i < k; i++)
        CUDA_CHECK(cudaFree(d));  // expect: GM008
}

// ---- negatives ----

// case: the pointer is reset after the release
void ok_reset(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    d = nullptr;
    CUDA_CHECK(cudaFree(d));
}

// case: released once on each branch
void ok_each_branch(size_t n, int early) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (early) {
        CUDA_CHECK(cudaFree(d));
        return;
    }
    use(d);
    CUDA_CHECK(cudaFree(d));
}

// case: reallocated between releases
void ok_realloc(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    CUDA_CHECK(cudaMalloc(&d, 2 * n));
    CUDA_CHECK(cudaFree(d));
}

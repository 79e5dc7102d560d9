// Corpus for GM010 (release of a pointer into the middle of an allocation).
// corpus-rules: GM010
#include <cuda_runtime.h>
#include <gpumem.h>
#include "corpus_checks.h"

void use(const void *p);

// case: the pointer was advanced past a header
void gm010_advanced(size_t n) {
    char *d;
    CUDA_CHECK(cudaMalloc(&d, n + 256));
    char *payload = d + 256;
    use(payload);
    CUDA_CHECK(cudaFree(payload));  // expect: GM010
}

// case: an element address
void gm010_element(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n * sizeof(float)));
    CUDA_CHECK(cudaFreeHost(&h[4]));  // expect: GM010
}

// case: gpumem memory at an offset
void gm010_gpumem(size_t n) {
    float *d = (float *)gpumem_device_alloc(n, sizeof(float));
    gpumem_free(d + 1);  // expect: GM010
}

// case: free of an advanced malloc pointer
void gm010_malloc(size_t n) {
    int *p = (int *)malloc(n * sizeof(int));
    p++;
    free(p);  // expect: GM010
}

// ---- negatives ----

// case: the base pointer kept and released
void ok_base_kept(size_t n) {
    char *d;
    CUDA_CHECK(cudaMalloc(&d, n + 256));
    char *payload = d + 256;
    use(payload);
    CUDA_CHECK(cudaFree(d));
}

// case: an offset of zero
void ok_zero_offset(size_t n) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    CUDA_CHECK(cudaFreeHost(&h[0]));
}

// case: advanced and moved back
void ok_moved_back(size_t n) {
    int *p = (int *)malloc(n * sizeof(int));
    p += 2;
    p -= 2;
    free(p);
}

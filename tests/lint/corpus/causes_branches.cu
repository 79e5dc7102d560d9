// Corpus: the false-positive causes of a syntax-tree lint that a path-sensitive analysis must
// get right: correlated branches, switch pairs, struct fields of different objects, code the
// preprocessor leaves out, template branches an instantiation does not take.
// corpus-rules: GM001 GM002 GM003 GM006
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <stdexcept>
#include <typeinfo>

void use(const void *p);

// case: the branch that allocates decides the release too
void ok_correlated(int pageable, size_t n) {
    float *p;
    if (pageable)
        p = (float *)malloc(n);
    else
        CUDA_CHECK(cudaMallocManaged(&p, n));
    p[0] = 1.0f;
    if (pageable)
        free(p);
    else
        CUDA_CHECK(cudaFree(p));
}

enum alloc_type { ALLOC_PAGEABLE, ALLOC_PINNED, ALLOC_DEVICE };

// case: switch pairs on the allocation type
void ok_switch_pairs(enum alloc_type t, size_t n) {
    void *p = NULL;
    switch (t) {
    case ALLOC_PAGEABLE:
        p = malloc(n);
        break;
    case ALLOC_PINNED:
        CUDA_CHECK(cudaMallocHost(&p, n));
        break;
    case ALLOC_DEVICE:
        CUDA_CHECK(cudaMalloc(&p, n));
        break;
    }
    use(p);
    switch (t) {
    case ALLOC_PAGEABLE:
        free(p);
        break;
    case ALLOC_PINNED:
        CUDA_CHECK(cudaFreeHost(p));
        break;
    case ALLOC_DEVICE:
        CUDA_CHECK(cudaFree(p));
        break;
    }
}

// case: a switch pair with one wrong release is still found
void gm002_switch_wrong(enum alloc_type t, size_t n) {
    void *p = NULL;
    if (t == ALLOC_PINNED)
        CUDA_CHECK(cudaMallocHost(&p, n));
    else
        CUDA_CHECK(cudaMalloc(&p, n));
    switch (t) {
    case ALLOC_PINNED:
        CUDA_CHECK(cudaFree(p));  // expect: GM002
        break;
    default:
        CUDA_CHECK(cudaFree(p));
        break;
    }
}

// case: a correlated flag that releases only one way leaks the other
void gm001_correlated_leak(int pinned, size_t n) {
    float *p;
    if (pinned)
        CUDA_CHECK(cudaMallocHost(&p, n));
    else
        CUDA_CHECK(cudaMalloc(&p, n));  // expect: GM001
    use(p);
    if (pinned)
        CUDA_CHECK(cudaFreeHost(p));
}

struct buffer { float *data; size_t n; };

// case: the same field name in two objects of one type, two kinds
void ok_fields_of_two_objects(size_t n) {
    struct buffer host, dev;
    CUDA_CHECK(cudaMallocHost(&host.data, n));
    CUDA_CHECK(cudaMalloc(&dev.data, n));
    CUDA_CHECK(cudaFreeHost(host.data));
    CUDA_CHECK(cudaFree(dev.data));
}

// case: fields swapped by mistake
void gm002_fields_swapped(size_t n) {
    struct buffer host, dev;
    CUDA_CHECK(cudaMallocHost(&host.data, n));
    CUDA_CHECK(cudaMalloc(&dev.data, n));
    CUDA_CHECK(cudaFree(host.data));  // expect: GM002
    CUDA_CHECK(cudaFreeHost(dev.data));  // expect: GM002
}

// case: code under #if 0 is never compiled
void ok_if0(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
#if 0
    free(d);
    return;
#else
    use(d);
#endif
    CUDA_CHECK(cudaFree(d));
}

// case: #ifdef alternatives with their own releases
void ok_ifdef(size_t n) {
    float *h;
#ifdef USE_PAGEABLE
    h = (float *)malloc(n);
#else
    CUDA_CHECK(cudaMallocHost(&h, n));
#endif
    use(h);
#ifdef USE_PAGEABLE
    free(h);
#else
    CUDA_CHECK(cudaFreeHost(h));
#endif
}

// case: a template branch the instantiation does not take
template <typename Real>
void ok_template_branch(Real *d) {
    if (typeid(Real) == typeid(double)) {
        double2 *v = reinterpret_cast<double2 *>(d + 2);
        use(v);
    } else if (typeid(Real) == typeid(float)) {
        float4 *v = reinterpret_cast<float4 *>(d + 4);
        use(v);
    } else {
        throw std::runtime_error("unsupported type");
    }
}
template void ok_template_branch<float>(float *);
template void ok_template_branch<double>(double *);

// case: an early exit in a function that releases on its normal path
int gm006_correlated_exit(int pinned, size_t n) {
    float *p;
    if (pinned)
        CUDA_CHECK(cudaMallocHost(&p, n));
    else
        CUDA_CHECK(cudaMalloc(&p, n));
    if (n > 1024)
        return -1;  // expect: GM006
    if (pinned)
        CUDA_CHECK(cudaFreeHost(p));
    else
        CUDA_CHECK(cudaFree(p));
    return 0;
}

// Corpus for GM006 (early exit leaks): the finding is at the exit.
// corpus-rules: GM006 GM001
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <gpumem.h>
#include <stdexcept>

int prepare(const float *p);
void work(const float *p);

// case: early return after the allocation
int gm006_return(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (prepare(d) != 0)
        return -1;  // expect: GM006
    CUDA_CHECK(cudaFree(d));
    return 0;
}

// case: return inside a nested block
int gm006_nested(size_t n, int a, int b) {
    float *h;
    CUDA_CHECK(cudaMallocHost(&h, n));
    if (a) {
        if (b) {
            return 2;  // expect: GM006
        }
    }
    CUDA_CHECK(cudaFreeHost(h));
    return 0;
}

// case: goto to a label past the release
int gm006_goto(size_t n) {
    int rc = 0;
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (prepare(d)) {
        rc = -1;
        goto out;  // expect: GM006
    }
    CUDA_CHECK(cudaFree(d));
out:
    return rc;
}

// case: break skips the release
void gm006_break(int k, size_t n) {
    for (int i = 0; i < k; i++) {
        float *t;
        CUDA_CHECK(cudaMalloc(&t, n));
        if (prepare(t))
            break;  // expect: GM006
        CUDA_CHECK(cudaFree(t));
    }
}

// case: continue skips the release
void gm006_continue(int k, size_t n) {
    for (int i = 0; i < k; i++) {
        float *t = (float *)gpumem_device_alloc(n, 4);
        if (prepare(t))
            continue;  // expect: GM006
        work(t);
        gpumem_free(t);
    }
}

// case: throw after the allocation
void gm006_throw(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (prepare(d))
        throw std::runtime_error("prepare failed");  // expect: GM006
    CUDA_CHECK(cudaFree(d));
}

// case: return in a switch case
int gm006_switch(int mode, size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    switch (mode) {
    case 0:
        work(d);
        break;
    case 1:
        return -1;  // expect: GM006
    default:
        break;
    }
    CUDA_CHECK(cudaFree(d));
    return 0;
}

// case: the first allocation leaks when the second fails
int gm006_second_fails(float **out, size_t n) {
    float *a, *b;
    if (cudaMalloc(&a, n) != cudaSuccess)
        return -1;
    if (cudaMalloc(&b, n) != cudaSuccess)
        return -1;  // expect: GM006
    CUDA_CHECK(cudaFree(b));
    *out = a;
    return 0;
}

// case: return in an else branch
int gm006_else(size_t n, int ok) {
    float *d = (float *)gpumem_managed_alloc(n, 4, 0);
    if (ok) {
        work(d);
    } else {
        return 1;  // expect: GM006
    }
    gpumem_free(d);
    return 0;
}

// case: return inside a while loop
int gm006_while(size_t n, int k) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    while (k--) {
        if (prepare(d) < 0)
            return -1;  // expect: GM006
    }
    CUDA_CHECK(cudaFree(d));
    return 0;
}

// ---- negatives ----

// case: goto cleanup label that releases (the C idiom)
int ok_cleanup_label(size_t n) {
    int rc = -1;
    float *a = NULL, *b = NULL;
    if (cudaMalloc(&a, n) != cudaSuccess)
        goto fail;
    if (cudaMalloc(&b, n) != cudaSuccess)
        goto fail;
    if (prepare(a))
        goto fail;
    rc = 0;
fail:
    cudaFree(b);
    cudaFree(a);
    return rc;
}

// case: released before the early return
int ok_release_then_return(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (prepare(d)) {
        CUDA_CHECK(cudaFree(d));
        return -1;
    }
    CUDA_CHECK(cudaFree(d));
    return 0;
}

// case: return before the allocation
int ok_return_before(size_t n) {
    if (n == 0)
        return 0;
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    CUDA_CHECK(cudaFree(d));
    return 1;
}

// case: failure of the allocation itself (status variable)
int ok_status_var(size_t n) {
    float *d;
    cudaError_t err = cudaMalloc(&d, n);
    if (err != cudaSuccess)
        return -1;
    work(d);
    CUDA_CHECK(cudaFree(d));
    return 0;
}

// case: null test of a gpumem allocation
int ok_null_test(size_t n) {
    float *a = (float *)gpumem_device_alloc(n, 4);
    if (!a)
        return -1;
    float *b = (float *)gpumem_device_alloc(n, 4);
    if (b == NULL) {
        gpumem_free(a);
        return -1;
    }
    gpumem_free(b);
    gpumem_free(a);
    return 0;
}

// case: the early exit ends the process
void ok_exit(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (prepare(d)) {
        fprintf(stderr, "failed\n");
        exit(1);
    }
    CUDA_CHECK(cudaFree(d));
}

// case: returning the pointer hands it over
float *ok_return_pointer(size_t n, int early) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    if (early)
        return d;
    work(d);
    return d;
}

// case: break from a loop around a buffer released after it
void ok_break_outer(size_t n, int k) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    for (int i = 0; i < k; i++)
        if (prepare(d))
            break;
    CUDA_CHECK(cudaFree(d));
}

// case: the catch handler releases
void ok_try_catch(size_t n) {
    float *d;
    CUDA_CHECK(cudaMalloc(&d, n));
    try {
        if (prepare(d))
            throw std::runtime_error("x");
        work(d);
    } catch (...) {
        CUDA_CHECK(cudaFree(d));
        throw;
    }
    CUDA_CHECK(cudaFree(d));
}

// case: GPUMEM_AUTO releases on every exit
int ok_auto(size_t n) {
    GPUMEM_AUTO float *d = (float *)gpumem_device_alloc(n, 4);
    if (prepare(d))
        return -1;
    return 0;
}

// case: gpumem scope releases on every exit
int ok_scope(size_t n) {
    GPUMEM_SCOPE(s);
    float *d = (float *)gpumem_adopt(s, gpumem_device_alloc(n, 4));
    if (!d)
        return -1;
    if (prepare(d))
        return -2;
    return 0;
}

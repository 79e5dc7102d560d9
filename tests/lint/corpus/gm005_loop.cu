// Corpus for GM005 (allocation in a loop not released in the same iteration).
// corpus-rules: GM005 GM001 GM006
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <gpumem.h>
#include <vector>

void work(const float *p);

// case: temporary allocated every iteration, never released
void gm005_for(int iters, size_t n) {
    for (int i = 0; i < iters; i++) {
        float *tmp;
        CUDA_CHECK(cudaMalloc(&tmp, n));  // expect: GM005
        work(tmp);
    }
}

// case: while loop with a gpumem allocation
void gm005_while(int *left, size_t n) {
    while (*left > 0) {
        float *t = (float *)gpumem_device_alloc(n, 4);  // expect: GM005
        work(t);
        --*left;
    }
}

// case: do-while loop with pinned memory
void gm005_do(int k, size_t n) {
    do {
        float *h;
        CUDA_CHECK(cudaMallocHost(&h, n));  // expect: GM005
        work(h);
    } while (--k);
}

// case: released only after the loop: all but the last leak
void gm005_after_loop(int k, size_t n) {
    float *buf = nullptr;
    for (int i = 0; i < k; i++) {
        CUDA_CHECK(cudaMalloc(&buf, n));  // expect: GM005
        work(buf);
    }
    CUDA_CHECK(cudaFree(buf));
}

// case: range-for loop with managed memory
void gm005_range(const std::vector<int> &sizes) {
    for (int s : sizes) {
        float *m;
        CUDA_CHECK(cudaMallocManaged(&m, s));  // expect: GM005
        work(m);
    }
}

// case: inner loop allocation released only by the outer loop
void gm005_nested(int a, int b, size_t n) {
    for (int i = 0; i < a; i++) {
        float *p = nullptr;
        for (int j = 0; j < b; j++) {
            CUDA_CHECK(cudaMalloc(&p, n));  // expect: GM005
            work(p);
        }
        CUDA_CHECK(cudaFree(p));
    }
}

// case: released on one branch of the iteration only
void gm005_branch(int k, size_t n) {
    for (int i = 0; i < k; i++) {
        float *t;
        CUDA_CHECK(cudaMalloc(&t, n));  // expect: GM005
        if (i % 2)
            CUDA_CHECK(cudaFree(t));
    }
}

// case: async allocation in a stream loop
void gm005_async(cudaStream_t s, int k, size_t n) {
    for (int i = 0; i < k; ++i) {
        void *scratch;
        CUDA_CHECK(cudaMallocAsync(&scratch, n, s));  // expect: GM005
    }
}

// ---- negatives ----

// case: released in the same iteration
void ok_same_iteration(int k, size_t n) {
    for (int i = 0; i < k; i++) {
        float *tmp;
        CUDA_CHECK(cudaMalloc(&tmp, n));
        work(tmp);
        CUDA_CHECK(cudaFree(tmp));
    }
}

// case: hoisted out of the loop
void ok_hoisted(int k, size_t n) {
    float *tmp;
    CUDA_CHECK(cudaMalloc(&tmp, n));
    for (int i = 0; i < k; i++)
        work(tmp);
    CUDA_CHECK(cudaFree(tmp));
}

// case: one buffer per slot, released elsewhere
void ok_slots(float **slots, int k, size_t n) {
    for (int i = 0; i < k; i++)
        CUDA_CHECK(cudaMalloc(&slots[i], n));
}

// case: collected in a vector that owns them
void ok_collected(std::vector<float *> &out, int k, size_t n) {
    for (int i = 0; i < k; i++) {
        float *p;
        CUDA_CHECK(cudaMalloc(&p, n));
        out.push_back(p);
    }
}

// case: lazy allocation the first time round
void ok_lazy(int k, size_t n) {
    float *cache = nullptr;
    for (int i = 0; i < k; i++) {
        if (!cache)
            CUDA_CHECK(cudaMalloc(&cache, n));
        work(cache);
    }
    CUDA_CHECK(cudaFree(cache));
}

// case: a growing buffer replaced each iteration
void ok_grow(int k, size_t n) {
    float *buf = nullptr;
    for (int i = 1; i <= k; i++) {
        CUDA_CHECK(cudaFree(buf));
        CUDA_CHECK(cudaMalloc(&buf, n * i));
        work(buf);
    }
    CUDA_CHECK(cudaFree(buf));
}

// case: do { } while (0) is a block, not a loop
void ok_do_once(size_t n) {
    float *p;
    do {
        CUDA_CHECK(cudaMalloc(&p, n));
    } while (0);
    work(p);
    CUDA_CHECK(cudaFree(p));
}

// case: retry loop allocates in the condition
void ok_retry(size_t n) {
    float *p;
    while (cudaMalloc(&p, n) != cudaSuccess)
        n /= 2;
    work(p);
    CUDA_CHECK(cudaFree(p));
}

// case: allocate, break out when done, release after the loop
void ok_break_then_release(size_t n) {
    float *p;
    for (;;) {
        CUDA_CHECK(cudaMalloc(&p, n));
        if (n > 16)
            break;
        CUDA_CHECK(cudaFree(p));
        n *= 2;
    }
    work(p);
    CUDA_CHECK(cudaFree(p));
}

// case: GPUMEM_AUTO inside the loop
void ok_auto_loop(int k, size_t n) {
    for (int i = 0; i < k; i++) {
        GPUMEM_AUTO float *t = (float *)gpumem_device_alloc(n, 4);
        work(t);
    }
}

/* A device pool used with a new stream for every request, 100 000 times: the pool's per-stream
 * caches must stay bounded (host memory does not grow with the streams) and the allocation
 * cost must not grow with them either (they were searched linearly). On a GPU the streams are
 * real ones, made and destroyed; the simulated device takes any handle. gpumem_pool_trim
 * frees the caches left. */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "backend_arg.h"
#include "gpumem.h"
#include "harness.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds for 2 000 allocate-release pairs on one stream. */
static double steady(gpumem_pool *pool, cudaStream_t s)
{
    double t = now_s();
    for (int i = 0; i < 2000; i++)
        gpumem_free(gpumem_pool_alloc(pool, 1, 4096, s));
    return now_s() - t;
}

int main(int argc, char **argv)
{
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    int real = strcmp(gpumem_backend(), "cuda") == 0;
    int streams = argc > 2 ? atoi(argv[2]) : 100000;
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    if (!pool) {
        fprintf(stderr, "FAIL: cannot make a device pool\n");
        return 1;
    }
    cudaStream_t fixed = NULL;
    double before = steady(pool, fixed);
    size_t heap_before = mallinfo2().uordblks;
    double t = now_s();
    for (int i = 0; i < streams; i++) {
        cudaStream_t s = (cudaStream_t)(uintptr_t)(0x100000 + (uintptr_t)i * 64);
        if (real && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
            fprintf(stderr, "FAIL: cudaStreamCreate at stream %d\n", i);
            return 1;
        }
        void *p = gpumem_pool_alloc(pool, 1, 4096 + (size_t)(i % 4) * 4096, s);
        EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
        if (real && (cudaStreamSynchronize(s) != cudaSuccess || cudaStreamDestroy(s) != cudaSuccess)) {
            fprintf(stderr, "FAIL: cudaStreamSynchronize or cudaStreamDestroy at stream %d\n", i);
            return 1;
        }
    }
    double per_stream = (now_s() - t) / streams;
    size_t heap_after = mallinfo2().uordblks;
    double after = steady(pool, fixed);
    long growth = (long)heap_after - (long)heap_before;
    fprintf(stderr, "%d streams: %.2f us a stream; host heap grew %ld KiB; 2000 allocations on "
            "one stream took %.2f ms before and %.2f ms after\n",
            streams, per_stream * 1e6, growth / 1024, before * 1e3, after * 1e3);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    /* A sanitizer's allocator does not answer mallinfo2, and its overhead grows with the
     * memory a program has touched: the bounds hold in ordinary builds. */
    (void)growth;
#else
    EXPECT_LE(growth, 2 << 20); /* 64 caches of 3.5 KiB and their blocks' descriptors */
    EXPECT_LE(after * 1000, before * 1000 * 3 + 5);
#endif
    gpumem_pool_stats_t st;
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_stats(pool, &st), GPUMEM_OK);
    EXPECT_EQ(st.blocks_cached, 0);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    return harness_exit();
}

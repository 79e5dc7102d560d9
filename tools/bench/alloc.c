/* `gpumem bench`: what one allocate + release pair costs, per kind, raw and pooled.
 *
 * Allocating in a loop is what is measured here, so the lint rule against it (GM005) is off
 * for the file. Each sample times `inner` pairs and divides: one pair for the slow raw calls,
 * many for the pools, whose pairs are too short for the clock alone. */
// gpumem-lint: ignore-file[GM005] measuring allocation in a loop is the point
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "gpumem.h"

enum alloc_kind {
    K_MALLOC,
    K_MALLOC_ASYNC,
    K_MANAGED,
    K_HOST,
    K_HOST_WC,
    K_HOST_MAPPED,
    K_GPUMEM_DEVICE,
    K_GPUMEM_PINNED,
    K_POOL_DEVICE,
    K_POOL_PINNED
};

static const struct {
    int kind;
    int inner; /* pairs a sample times */
    const char *key;
    const char *label;
} cases[] = {
    {K_MALLOC, 1, "cuda_malloc", "cudaMalloc + cudaFree"},
    {K_MALLOC_ASYNC, 100, "cuda_malloc_async", "cudaMallocAsync + cudaFreeAsync"},
    {K_MANAGED, 1, "cuda_malloc_managed", "cudaMallocManaged + cudaFree"},
    {K_HOST, 1, "cuda_malloc_host", "cudaMallocHost + cudaFreeHost"},
    {K_HOST_WC, 1, "cuda_host_alloc_wc", "cudaHostAlloc write-combined"},
    {K_HOST_MAPPED, 1, "cuda_host_alloc_mapped", "cudaHostAlloc mapped"},
    {K_GPUMEM_DEVICE, 1, "gpumem_device_alloc", "gpumem_device_alloc + gpumem_free"},
    {K_GPUMEM_PINNED, 1, "gpumem_pinned_alloc", "gpumem_pinned_alloc + gpumem_free"},
    {K_POOL_DEVICE, 1000, "pool_device", "gpumem device pool"},
    {K_POOL_PINNED, 1000, "pool_pinned", "gpumem pinned pool"},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

int bench_alloc_steps(const bench_ctx *c)
{
    (void)c;
    return NCASES;
}

/* One raw pair of each kind: the CUDA runtime's calls, nothing else. */
static cudaError_t pair_device(size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    return e != cudaSuccess ? e : cudaFree(p);
}

static cudaError_t pair_async(size_t bytes, cudaStream_t stream)
{
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, bytes, stream);
    return e != cudaSuccess ? e : cudaFreeAsync(p, stream);
}

static cudaError_t pair_managed(size_t bytes)
{
    void *p = NULL;
    cudaError_t e = cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    return e != cudaSuccess ? e : cudaFree(p);
}

/* @flags 0: cudaMallocHost; else cudaHostAlloc with them. */
static cudaError_t pair_host(size_t bytes, unsigned flags)
{
    void *p = NULL;
    cudaError_t e = flags ? cudaHostAlloc(&p, bytes, flags) : cudaMallocHost(&p, bytes);
    return e != cudaSuccess ? e : cudaFreeHost(p);
}

/* One gpumem pair: tracked, or from @pool. Returns a gpumem status. */
static int pair_gpumem(int kind, gpumem_pool *pool, size_t bytes, cudaStream_t stream)
{
    void *p = kind == K_GPUMEM_DEVICE   ? gpumem_device_alloc(1, bytes)
              : kind == K_GPUMEM_PINNED ? gpumem_pinned_alloc(1, bytes)
                                        : gpumem_pool_alloc(pool, 1, bytes, stream);
    if (!p)
        return gpumem_last_error()->code;
    /* The device pool caches a block for the stream it is released on. */
    return kind == K_POOL_DEVICE ? gpumem_free_async(p, stream) : gpumem_free(p);
}

/* @n allocate + release pairs of @bytes. Returns 0, or -1 with the row's note set. */
static int pairs(bench_ctx *c, bench_row *row, int kind, gpumem_pool *pool, size_t bytes, int n)
{
    for (int i = 0; i < n; i++) {
        cudaError_t e = cudaSuccess;
        int st = GPUMEM_OK;
        if (kind == K_MALLOC)
            e = pair_device(bytes);
        else if (kind == K_MALLOC_ASYNC)
            e = pair_async(bytes, c->stream);
        else if (kind == K_MANAGED)
            e = pair_managed(bytes);
        else if (kind == K_HOST)
            e = pair_host(bytes, 0);
        else if (kind == K_HOST_WC)
            e = pair_host(bytes, cudaHostAllocWriteCombined);
        else if (kind == K_HOST_MAPPED)
            e = pair_host(bytes, cudaHostAllocMapped);
        else
            st = pair_gpumem(kind, pool, bytes, c->stream);
        if (e != cudaSuccess)
            return bench_fail(c, row, "allocate + release", (int)e);
        if (st != GPUMEM_OK)
            return bench_fail(c, row, "allocate + release", st);
    }
    /* Stream-ordered releases are only done once the stream is. */
    if (kind == K_MALLOC_ASYNC || kind == K_POOL_DEVICE) {
        cudaError_t e = cudaStreamSynchronize(c->stream);
        if (e != cudaSuccess)
            return bench_fail(c, row, "cudaStreamSynchronize", (int)e);
    }
    return 0;
}

static void measure(bench_ctx *c, int i, bench_row *row)
{
    gpumem_pool *pool = NULL;
    if (cases[i].kind == K_POOL_DEVICE || cases[i].kind == K_POOL_PINNED) {
        pool = gpumem_pool_create(cases[i].kind == K_POOL_DEVICE ? GPUMEM_KIND_DEVICE
                                                                 : GPUMEM_KIND_PINNED,
                                  c->device, NULL);
        if (!pool) {
            bench_fail(c, row, "gpumem_pool_create", gpumem_last_error()->code);
            return;
        }
    }
    for (int s = 0; s < 2; s++) {
        size_t bytes = c->report->alloc_bytes[s];
        int inner = cases[i].inner;
        double v[64];
        int n = 0;
        /* The first pair pays for first use (and fills a pool's cache): not counted. */
        if (pairs(c, row, cases[i].kind, pool, bytes, 1) != 0)
            break;
        uint64_t t0 = bench_now_ns();
        while (n < (int)(sizeof v / sizeof v[0]) && bench_more(c, n, t0)) {
            uint64_t t = bench_now_ns();
            if (pairs(c, row, cases[i].kind, pool, bytes, inner) != 0)
                break;
            v[n++] = (double)(bench_now_ns() - t) / inner;
        }
        if (row->note[0])
            break;
        row->value[s] = bench_median(v, n);
        row->samples[s] = n;
    }
    if (pool) {
        cudaError_t e = cudaStreamSynchronize(c->stream);
        if (e != cudaSuccess)
            bench_fail(c, row, "cudaStreamSynchronize", (int)e);
        int st = gpumem_pool_destroy(pool);
        if (st != GPUMEM_OK)
            bench_fail(c, row, "gpumem_pool_destroy", st);
    }
}

void bench_alloc_run(bench_ctx *c)
{
    for (int i = 0; i < NCASES; i++) {
        char what[128], a[32], b[32];
        snprintf(what, sizeof what, "%s, %s and %s", cases[i].label,
                 gpumem_format_bytes(c->report->alloc_bytes[0], a, sizeof a),
                 gpumem_format_bytes(c->report->alloc_bytes[1], b, sizeof b));
        bench_progress(c, what);
        bench_row *row = bench_row_add(c->report, BENCH_ALLOC, cases[i].key, cases[i].label);
        if (row)
            measure(c, i, row);
    }
}

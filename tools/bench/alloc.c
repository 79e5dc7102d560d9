/* `gpumem bench`: what one allocate + release pair costs, per kind, raw and pooled, next to
 * the peers a program would use instead. The device pool's first peers are CUDA's
 * stream-ordered allocator, as programs use it: cudaMallocAsync on the device's default pool
 * as it comes (release threshold 0) and with the release threshold users set (UINT64_MAX, so
 * that it keeps what is released); then CUB's CachingDeviceAllocator, which CCCL deprecates
 * in favour of those pools (its row says so); the CUDA host memory pool for the pinned pool;
 * and the raw calls. A peer's row names the gpumem row it is compared with
 * (bench_row.vs): the table and the JSON give the ratio. The pools and their peers are also
 * measured on 16 threads at once (one shared pool or allocator, a stream each): a sample is
 * then the wall time of all 16 threads' pairs divided by all pairs.
 *
 * Allocating in a loop is what is measured here, so the lint rule against it (GM005) is off
 * for the file. Each sample times `inner` pairs and divides: one pair for the slow raw calls,
 * many for the pools, whose pairs are too short for the clock alone. */
// gpumem-lint: ignore-file[GM005] measuring allocation in a loop is the point
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "gpumem.h"
#ifdef GPUMEM_BENCH_HAVE_CUB
#include "cub.h"
#endif

#define THREADS 16

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
    K_POOL_PINNED,
    K_KEEP_POOL, /* cudaMallocAsync, the default pool's release threshold UINT64_MAX */
    K_HOST_POOL, /* cudaMallocFromPoolAsync, host (pinned) pool keeping its memory */
    K_CUB
};

#define CUB_DEPRECATED                                                                           \
    "CCCL deprecates CachingDeviceAllocator in favour of memory pools over cudaMallocAsync, "   \
    "the stream-ordered rows"

static const struct {
    int kind;
    int inner;   /* pairs a sample times (a thread's, on 16 threads) */
    int threads; /* 1, or THREADS at once */
    const char *key;
    const char *label;
    const char *vs;         /* the gpumem row it is compared with */
    const char *deprecated; /* why the peer is deprecated, for its note */
} cases[] = {
    {K_MALLOC, 1, 1, "cuda_malloc", "cudaMalloc + cudaFree", "gpumem_device_alloc", NULL},
    {K_MANAGED, 1, 1, "cuda_malloc_managed", "cudaMallocManaged + cudaFree", NULL, NULL},
    {K_HOST, 1, 1, "cuda_malloc_host", "cudaMallocHost + cudaFreeHost", "gpumem_pinned_alloc",
     NULL},
    {K_HOST_WC, 1, 1, "cuda_host_alloc_wc", "cudaHostAlloc write-combined", NULL, NULL},
    {K_HOST_MAPPED, 1, 1, "cuda_host_alloc_mapped", "cudaHostAlloc mapped", NULL, NULL},
    {K_GPUMEM_DEVICE, 1, 1, "gpumem_device_alloc", "gpumem_device_alloc + gpumem_free", NULL,
     NULL},
    {K_GPUMEM_PINNED, 1, 1, "gpumem_pinned_alloc", "gpumem_pinned_alloc + gpumem_free", NULL,
     NULL},
    {K_POOL_DEVICE, 1000, 1, "pool_device", "gpumem device pool", NULL, NULL},
    {K_MALLOC_ASYNC, 100, 1, "cuda_malloc_async", "cudaMallocAsync, default pool, threshold 0",
     "pool_device", NULL},
    {K_KEEP_POOL, 100, 1, "cuda_malloc_async_keep", "cudaMallocAsync, threshold UINT64_MAX",
     "pool_device", NULL},
    {K_CUB, 100, 1, "cub_caching_allocator", "CUB CachingDeviceAllocator", "pool_device",
     CUB_DEPRECATED},
    {K_POOL_PINNED, 1000, 1, "pool_pinned", "gpumem pinned pool", NULL, NULL},
    {K_HOST_POOL, 100, 1, "cuda_host_mempool", "CUDA host memory pool, keeps all", "pool_pinned",
     NULL},
    {K_POOL_DEVICE, 1000, THREADS, "pool_device_16t", "gpumem device pool, 16 threads", NULL,
     NULL},
    {K_MALLOC_ASYNC, 100, THREADS, "cuda_malloc_async_16t",
     "cudaMallocAsync threshold 0, 16 threads", "pool_device_16t", NULL},
    {K_KEEP_POOL, 100, THREADS, "cuda_malloc_async_keep_16t",
     "cudaMallocAsync UINT64_MAX, 16 threads", "pool_device_16t", NULL},
    {K_CUB, 100, THREADS, "cub_caching_allocator_16t", "CUB CachingDeviceAllocator, 16 threads",
     "pool_device_16t", CUB_DEPRECATED},
    {K_POOL_PINNED, 1000, THREADS, "pool_pinned_16t", "gpumem pinned pool, 16 threads", NULL,
     NULL},
    {K_HOST_POOL, 100, THREADS, "cuda_host_mempool_16t", "CUDA host memory pool, 16 threads",
     "pool_pinned_16t", NULL},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

int bench_alloc_steps(const bench_ctx *c)
{
    (void)c;
    return NCASES;
}

int bench_alloc_row_info(int i, const char **key, const char **vs, const char **deprecated)
{
    if (i < 0 || i >= NCASES)
        return 0;
    *key = cases[i].key;
    *vs = cases[i].vs;
    *deprecated = cases[i].deprecated;
    return 1;
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

/* The CUDA pools of the peers, found or made by bench_alloc_run; NULL when CUDA refused: the
 * device's default pool (the one cudaMallocAsync uses) and a host pool. */
static cudaMemPool_t default_pool, host_pool;

static cudaError_t pair_from_pool(cudaMemPool_t pool, size_t bytes, cudaStream_t stream)
{
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, pool, stream);
    return e != cudaSuccess ? e : cudaFreeAsync(p, stream);
}

/* A CUDA memory pool on the host that keeps what is released. */
static cudaError_t make_host_pool(cudaMemPool_t *pool)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeHost;
    props.location.id = 0;
    cudaError_t e = cudaMemPoolCreate(pool, &props);
    uint64_t keep = UINT64_MAX;
    if (e == cudaSuccess)
        e = cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e != cudaSuccess)
        *pool = NULL;
    return e;
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

/* @n allocate + release pairs of @bytes on @stream. Returns 0, or -1 with the row's note
 * set (when @row is not NULL: a worker thread reports through its own status instead). */
static int pairs_on(bench_ctx *c, bench_row *row, int kind, gpumem_pool *pool, size_t bytes,
                    int n, cudaStream_t stream, int *status)
{
    for (int i = 0; i < n; i++) {
        cudaError_t e = cudaSuccess;
        int st = GPUMEM_OK;
        if (kind == K_MALLOC)
            e = pair_device(bytes);
        else if (kind == K_MALLOC_ASYNC || kind == K_KEEP_POOL)
            e = pair_async(bytes, stream); /* the default pool, its threshold set by measure */
        else if (kind == K_HOST_POOL)
            e = pair_from_pool(host_pool, bytes, stream);
#ifdef GPUMEM_BENCH_HAVE_CUB
        else if (kind == K_CUB)
            e = (cudaError_t)bench_cub_pair(bytes, stream);
#endif
        else if (kind == K_MANAGED)
            e = pair_managed(bytes);
        else if (kind == K_HOST)
            e = pair_host(bytes, 0);
        else if (kind == K_HOST_WC)
            e = pair_host(bytes, cudaHostAllocWriteCombined);
        else if (kind == K_HOST_MAPPED)
            e = pair_host(bytes, cudaHostAllocMapped);
        else
            st = pair_gpumem(kind, pool, bytes, stream);
        if (e != cudaSuccess || st != GPUMEM_OK) {
            int code = e != cudaSuccess ? (int)e : st;
            if (!row) {
                *status = code;
                return -1;
            }
            return bench_fail(c, row, "allocate + release", code);
        }
    }
    /* Stream-ordered releases are only done once the stream is. */
    if (kind == K_MALLOC_ASYNC || kind == K_POOL_DEVICE || kind == K_KEEP_POOL ||
        kind == K_HOST_POOL || kind == K_CUB) {
        cudaError_t e = cudaStreamSynchronize(stream);
        if (e != cudaSuccess) {
            if (!row) {
                *status = (int)e;
                return -1;
            }
            return bench_fail(c, row, "cudaStreamSynchronize", (int)e);
        }
    }
    return 0;
}

static int pairs(bench_ctx *c, bench_row *row, int kind, gpumem_pool *pool, size_t bytes, int n)
{
    return pairs_on(c, row, kind, pool, bytes, n, c->stream, NULL);
}

/* ---- 16 threads at once ---- */

typedef struct {
    bench_ctx *c;
    int kind;
    gpumem_pool *pool;
    size_t bytes;
    int n;
    cudaStream_t stream;
    pthread_barrier_t *start;
    int status; /* 0, or the failed call's cudaError_t / gpumem status */
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    pairs_on(w->c, NULL, w->kind, w->pool, w->bytes, w->n, w->stream, &w->status);
    return NULL;
}

/* THREADS threads, @n pairs each, started together: wall time / all pairs in ns, or -1 with
 * the row's note set. */
static double threaded_sample(bench_ctx *c, bench_row *row, int kind, gpumem_pool *pool,
                              size_t bytes, int n, cudaStream_t *streams)
{
    pthread_t t[THREADS];
    worker w[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){c, kind, pool, bytes, n, streams[i], &start, 0};
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    pthread_barrier_wait(&start);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    double ns = (double)(bench_now_ns() - t0) / ((double)THREADS * n);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        if (w[i].status) {
            bench_fail(c, row, "allocate + release on one of 16 threads", w[i].status);
            return -1.0;
        }
    }
    return ns;
}

/* Sets the release threshold of the device's default pool; 0 puts it back as CUDA made it, and
 * gives back what it kept, so that the next row starts from the pool as it comes. */
static int set_threshold(bench_ctx *c, bench_row *row, uint64_t threshold)
{
    cudaError_t e = cudaMemPoolSetAttribute(default_pool, cudaMemPoolAttrReleaseThreshold,
                                            &threshold);
    if (e == cudaSuccess && threshold == 0)
        e = cudaStreamSynchronize(c->stream);
    if (e == cudaSuccess && threshold == 0)
        e = cudaMemPoolTrimTo(default_pool, 0);
    return e == cudaSuccess ? 0 : bench_fail(c, row, "cudaMemPoolSetAttribute", (int)e);
}

static void measure_rows(bench_ctx *c, int i, bench_row *row);

static void measure(bench_ctx *c, int i, bench_row *row)
{
    int kind = cases[i].kind;
    if ((kind == K_MALLOC_ASYNC || kind == K_KEEP_POOL) && !default_pool) {
        snprintf(row->note, sizeof row->note,
                 "not measured: cudaDeviceGetDefaultMemPool refused it");
        return;
    }
    if (kind == K_HOST_POOL && !host_pool) {
        snprintf(row->note, sizeof row->note, "not measured: cudaMemPoolCreate refused it");
        return;
    }
    if (kind == K_KEEP_POOL && set_threshold(c, row, UINT64_MAX) != 0)
        return;
    measure_rows(c, i, row);
    if (kind == K_KEEP_POOL)
        set_threshold(c, row, 0);
}

static void measure_rows(bench_ctx *c, int i, bench_row *row)
{
    int kind = cases[i].kind;
#ifndef GPUMEM_BENCH_HAVE_CUB
    if (kind == K_CUB) {
        snprintf(row->note, sizeof row->note, "not measured: built without nvcc (CUB is C++)");
        return;
    }
#endif
    cudaStream_t streams[THREADS] = {NULL};
    for (int s = 0; cases[i].threads > 1 && s < THREADS; s++) {
        cudaError_t e = cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking);
        if (e != cudaSuccess) {
            bench_fail(c, row, "cudaStreamCreateWithFlags", (int)e);
            for (int k = 0; k < s; k++)
                (void)cudaStreamDestroy(streams[k]); /* the row failed already */
            return;
        }
    }
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
            if (cases[i].threads > 1) {
                double ns = threaded_sample(c, row, kind, pool, bytes, inner, streams);
                if (ns < 0.0)
                    break;
                v[n++] = ns;
                continue;
            }
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
    for (int s = 0; cases[i].threads > 1 && s < THREADS; s++) {
        cudaError_t e = cudaStreamDestroy(streams[s]);
        if (e != cudaSuccess)
            bench_fail(c, row, "cudaStreamDestroy", (int)e);
    }
}

void bench_alloc_run(bench_ctx *c)
{
    /* A pool that could not be had is NULL, and its rows say so. */
    if (cudaDeviceGetDefaultMemPool(&default_pool, c->device) != cudaSuccess)
        default_pool = NULL;
    (void)make_host_pool(&host_pool);
#ifdef GPUMEM_BENCH_HAVE_CUB
    bench_cub_create();
#endif
    for (int i = 0; i < NCASES; i++) {
        char what[128], a[32], b[32];
        snprintf(what, sizeof what, "%s, %s and %s", cases[i].label,
                 gpumem_format_bytes(c->report->alloc_bytes[0], a, sizeof a),
                 gpumem_format_bytes(c->report->alloc_bytes[1], b, sizeof b));
        bench_progress(c, what);
        bench_row *row = bench_row_add(c->report, BENCH_ALLOC, cases[i].key, cases[i].label);
        if (row) {
            row->vs = cases[i].vs;
            row->deprecated = cases[i].deprecated;
            measure(c, i, row);
        }
    }
#ifdef GPUMEM_BENCH_HAVE_CUB
    bench_cub_destroy();
#endif
    /* Their rows are done: a refusal here changes no figure. The default pool is CUDA's. */
    if (host_pool)
        (void)cudaMemPoolDestroy(host_pool);
    default_pool = host_pool = NULL;
}

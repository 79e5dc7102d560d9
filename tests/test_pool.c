/* Pools: device and pinned pools whose blocks are gpumem allocations. The same
 * scenarios run on the simulated device (`test_pool sim`, label host) and on a GPU
 * (`test_pool cuda`, label gpu, skipped with 77 where there is none). Streams are only
 * compared as handles by the pools, so on the simulated device made-up handles stand for
 * streams; on a GPU the test creates real ones. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include <cuda_runtime_api.h>

#include "gpumem.h"
#include "capture.h"
#include "backend_arg.h"
#include "harness.h"

static int on_sim;
static cudaStream_t s1, s2;
/* The design the device pools get (GPUMEM_POOL_DESIGN, else the default: pages; both
 * backends can map them). */
static enum { VMM, SEGMENTS, CLASSES } design;

static gpumem_pool_stats_t stats_of(gpumem_pool *pool)
{
    gpumem_pool_stats_t st;
    memset(&st, 0, sizeof st);
    gpumem_pool_stats(pool, &st);
    return st;
}

static void test_pinned_reuse_and_free(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    uint64_t before = live_total();
    char *p = gpumem_pool_alloc(pool, 1000, 1, NULL);
    int line = __LINE__ - 1;
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p % GPUMEM_ALIGNMENT, 0);
    memset(p, 0x5a, 1000); /* host memory: writable */
    EXPECT_EQ(live_total(), before + 1);
    gpumem_info info;
    ASSERT_EQ(gpumem_query(p + 10, &info), GPUMEM_OK);
    EXPECT_EQ(info.kind, GPUMEM_KIND_PINNED);
    EXPECT_PTR_EQ(info.base, p);
    EXPECT_EQ(info.bytes, 1000);
    EXPECT_EQ(info.offset, 10);
    EXPECT_EQ(info.line, line);
    EXPECT_CONTAINS(info.file, "test_pool.c");

    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_EQ(live_total(), before);
    EXPECT_EQ(gpumem_query(p, &info), GPUMEM_EFOREIGN); /* no longer live */
    reset_seen();
    EXPECT_EQ(gpumem_free(p), GPUMEM_EDOUBLEFREE);
    EXPECT_CONTAINS(seen.message, "double free of 1000 B pinned memory");
    /* The stream-ordered release is for device memory only, pool or not. */
    char *q = gpumem_pool_alloc(pool, 1000, 1, NULL);
    EXPECT_PTR_EQ(q, p); /* the same block back */
    reset_seen();
    EXPECT_EQ(gpumem_free_async(q, NULL), GPUMEM_EKIND);
    EXPECT_EQ(live_total(), before + 1);
    EXPECT_EQ(gpumem_free(q), GPUMEM_OK);

    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_EQ(st.hits, 1);
    EXPECT_EQ(st.misses, 1);
    EXPECT_EQ(st.in_use, 0);
    EXPECT_EQ(st.blocks_in_use, 0);
    EXPECT_GE(st.blocks_cached, 1);
    EXPECT_EQ(st.peak_in_use, 1024);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_device_streams(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    uint64_t before = live_total();
    void *a = gpumem_pool_alloc(pool, 1, 4096, s1);
    ASSERT_NOT_NULL(a);
    EXPECT_EQ((uintptr_t)a % GPUMEM_ALIGNMENT, 0);
    gpumem_info info;
    ASSERT_EQ(gpumem_query(a, &info), GPUMEM_OK);
    EXPECT_EQ(info.kind, GPUMEM_KIND_DEVICE);
    EXPECT_PTR_EQ(info.stream, s1);
    /* gpumem_free: back to the cache of the stream it was allocated on. */
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
    void *b = gpumem_pool_alloc(pool, 1, 4096, s1);
    EXPECT_PTR_EQ(b, a);
    /* Released on s2: only s2 may reuse it. A request on s1 gets other memory. */
    EXPECT_EQ(gpumem_free_async(b, s2), GPUMEM_OK);
    void *c = gpumem_pool_alloc(pool, 1, 4096, s1);
    ASSERT_NOT_NULL(c);
    EXPECT_PTR_(!=, c, a);
    void *d = gpumem_pool_alloc(pool, 1, 4096, s2);
    EXPECT_PTR_EQ(d, a);
    reset_seen();
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d), GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(gpumem_free_async(c, s1), GPUMEM_OK);
    EXPECT_EQ(live_total(), before);
    gpumem_pool_stats_t st = stats_of(pool);
    if (design == CLASSES) { /* each block its own CUDA allocation */
        EXPECT_EQ(st.misses, 2);
        EXPECT_EQ(st.hits, 2);
        EXPECT_EQ(st.blocks_cached, 2);
        EXPECT_EQ(st.cached, 2 * 4096);
        EXPECT_EQ(st.reserved, 2 * 4096);
    } else { /* c was carved from the page (or segment) a was: one 2 MiB piece in all */
        EXPECT_EQ(st.misses, 1);
        EXPECT_EQ(st.hits, 3);
        EXPECT_GE(st.blocks_cached, 2);
        EXPECT_EQ(st.reserved, (uint64_t)2 << 20);
        EXPECT_EQ(st.cached, st.reserved);
    }
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    st = stats_of(pool);
    EXPECT_EQ(st.cached, 0);
    EXPECT_EQ(st.reserved, 0);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

/* Every size from 1 byte to 64 MiB, on a geometric grid plus odd neighbours: the block (the
 * pool's in_use for one live block) exceeds the request by < 12.5 % from 2 KiB up and by less
 * than the 256-byte alignment below; every block is aligned. */
static void check_waste(int kind)
{
    gpumem_pool *pool = gpumem_pool_create(kind, 0, NULL);
    ASSERT_NOT_NULL(pool);
    size_t worst_n = 0;
    double worst = 0.0;
    for (size_t base = 1; base <= ((size_t)64 << 20); base = base * 9 / 8 + 1) {
        for (size_t n = base; n < base + 3; n++) {
            void *p = gpumem_pool_alloc(pool, n, 1, s1);
            ASSERT_NOT_NULL(p);
            EXPECT_EQ((uintptr_t)p % GPUMEM_ALIGNMENT, 0);
            gpumem_pool_stats_t st = stats_of(pool);
            EXPECT_EQ(st.requested, n);
            EXPECT_GE(st.in_use, n);
            uint64_t extra = st.in_use - n;
            if (n >= 2048) {
                EXPECT_TRUE(extra * 8 < n); /* < 12.5 % */
                double w = (double)extra / (double)n;
                if (w > worst)
                    worst = w, worst_n = n;
            } else {
                EXPECT_LE(extra, 255);
            }
            EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
        }
    }
    fprintf(stderr, "  %s pool: worst waste from 2 KiB up: %.2f %% (at %zu bytes)\n",
            gpumem_kind_name(kind), worst * 100.0, worst_n);
    EXPECT_TRUE(worst > 0.10); /* the grid does reach near the bound: the check has teeth */
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_waste_bound_pinned(void)
{
    check_waste(GPUMEM_KIND_PINNED);
}

static void test_waste_bound_device(void)
{
    check_waste(GPUMEM_KIND_DEVICE);
}

/* A pinned pool at steady state: many blocks of mixed sizes live at once pin at most 12.5 %
 * more than they ask for, plus the unused rest of the last chunk. */
static void test_pinned_steady_state(void)
{
    gpumem_pool_options_t opt = {.chunk_bytes = (uint64_t)4 << 20};
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, &opt);
    ASSERT_NOT_NULL(pool);
    enum { N = 600 };
    void *p[N];
    uint64_t asked = 0;
    unsigned x = 12345;
    for (int i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        size_t n = 2048 + (x >> 8) % (200 * 1024); /* 2 KiB .. 202 KiB */
        p[i] = gpumem_pool_alloc(pool, n, 1, NULL);
        ASSERT_NOT_NULL(p[i]);
        asked += n;
    }
    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_EQ(st.requested, asked);
    EXPECT_TRUE(st.in_use * 8 < asked * 9);
    EXPECT_TRUE(st.reserved <= st.in_use + st.cached + opt.chunk_bytes);
    fprintf(stderr, "  %d blocks: requested %llu, in use %llu (+%.2f %%), reserved %llu, "
                    "fragmentation %.3f\n",
            N, (unsigned long long)asked, (unsigned long long)st.in_use,
            100.0 * (double)(st.in_use - asked) / (double)asked,
            (unsigned long long)st.reserved, st.fragmentation);
    EXPECT_TRUE(st.fragmentation > 0.0 && st.fragmentation < 0.2);
    for (int i = 0; i < N; i++)
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_limit_and_retry(void)
{
    gpumem_pool_options_t opt = {.limit = (uint64_t)1 << 20};
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, &opt);
    ASSERT_NOT_NULL(pool);
    void *a = gpumem_pool_alloc(pool, 600, 1024, s1);
    ASSERT_NOT_NULL(a);
    reset_seen();
    void *b = gpumem_pool_alloc(pool, 600, 1024, s1);
    EXPECT_NULL(b);
    EXPECT_EQ(seen.code, GPUMEM_ENOMEM);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ENOMEM);
    EXPECT_CONTAINS(seen.message, "out of memory: 600.0 KiB device memory requested from a "
                                  "device pool at");
    EXPECT_CONTAINS(seen.message, "test_pool.c");
    EXPECT_CONTAINS(seen.message, "the pool held 640.0 KiB reserved: 0 B cached, 640.0 KiB "
                                  "in use in 1 block; its limit is 1.0 MiB");
    EXPECT_CONTAINS(seen.message, "past its limit");
    /* Once a is cached, a request of another class fits only if the cache is released. */
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
    void *c = gpumem_pool_alloc(pool, 700, 1024, s1);
    ASSERT_NOT_NULL(c);
    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_EQ(st.oom_retries, 2);
    EXPECT_EQ(st.cached, 0);
    EXPECT_LE(st.reserved, opt.limit);
    EXPECT_EQ(gpumem_free(c), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);

    /* The pinned pool's limit caps its chunks too. */
    gpumem_pool *pp = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, &opt);
    ASSERT_NOT_NULL(pp);
    void *x = gpumem_pool_alloc(pp, 100, 1024, NULL);
    ASSERT_NOT_NULL(x);
    st = stats_of(pp);
    EXPECT_LE(st.reserved, opt.limit);
    reset_seen();
    EXPECT_NULL(gpumem_pool_alloc(pp, 2, (size_t)1 << 20, NULL));
    EXPECT_EQ(seen.code, GPUMEM_ENOMEM);
    EXPECT_CONTAINS(seen.message, "pinned memory requested from a pinned pool");
    EXPECT_EQ(gpumem_free(x), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pp), GPUMEM_OK);
}

/* CUDA itself out of memory: cached blocks are given back and the request retried once. */
static void test_cuda_oom_retry(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    if (on_sim) { /* the simulated device has 1 GiB (GPUMEM_SIM_DEVICE_BYTES) */
        void *a = gpumem_pool_alloc(pool, 600, (size_t)1 << 20, s1);
        ASSERT_NOT_NULL(a);
        EXPECT_EQ(gpumem_free(a), GPUMEM_OK); /* cached: still held from the device */
        void *b = gpumem_pool_alloc(pool, 700, (size_t)1 << 20, s1);
        ASSERT_NOT_NULL(b);
        gpumem_pool_stats_t st = stats_of(pool);
        /* Pages move: a's pages serve b where a was, and 50 more are mapped. Segments: a's
         * 600 MiB segment cannot hold 700 MiB, and goes back to CUDA before a new one is
         * asked for. A block per class: the device cannot hold both until a's goes. */
        EXPECT_EQ(st.oom_retries, design == CLASSES ? 1 : 0);
        EXPECT_EQ(st.reserved, (uint64_t)(design == CLASSES ? 704 : 700) << 20); /* its class */
        EXPECT_EQ(st.cached, 0);
        EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
    }
    reset_seen();
    void *huge = gpumem_pool_alloc(pool, (size_t)1 << 30, (size_t)1 << 20, s1); /* 1 PiB */
    EXPECT_NULL(huge);
    EXPECT_EQ(seen.code, GPUMEM_ENOMEM);
    EXPECT_CONTAINS(seen.message, "out of memory: 1.0 PiB device memory requested from a "
                                  "device pool");
    EXPECT_CONTAINS(seen.message, "CUDA said cudaErrorMemoryAllocation");
    EXPECT_CONTAINS(seen.message, "released and the request retried once");
    /* The next request works (the error was consumed). */
    void *ok = gpumem_pool_alloc(pool, 1, 256, s1);
    EXPECT_TRUE(ok != NULL);
    EXPECT_EQ(gpumem_free(ok), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_trim(void)
{
    gpumem_pool_options_t opt = {.chunk_bytes = (uint64_t)1 << 20};
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, &opt);
    ASSERT_NOT_NULL(pool);
    void *keep = gpumem_pool_alloc(pool, 1, 1000, NULL); /* pins the first chunk */
    void *p[20];
    for (int i = 0; i < 20; i++)
        p[i] = gpumem_pool_alloc(pool, 1, 100 * 1024, NULL); /* fills a few chunks */
    void *big = gpumem_pool_alloc(pool, 1, 600 * 1024, NULL); /* its own allocation */
    ASSERT_NOT_NULL(keep);
    ASSERT_NOT_NULL(big);
    for (int i = 0; i < 20; i++)
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(big), GPUMEM_OK);
    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_GE(st.reserved, 3 * opt.chunk_bytes);
    EXPECT_GE(st.cached, 20 * 100 * 1024);
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    st = stats_of(pool);
    /* What stays: the chunk with the live block, and its cached neighbours. */
    EXPECT_EQ(st.reserved, opt.chunk_bytes);
    EXPECT_EQ(st.blocks_in_use, 1);
    EXPECT_LE(st.cached, opt.chunk_bytes);
    EXPECT_EQ(gpumem_free(keep), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    st = stats_of(pool);
    EXPECT_EQ(st.reserved, 0);
    EXPECT_EQ(st.cached, 0);
    EXPECT_EQ(st.blocks_cached, 0);
    EXPECT_TRUE(st.fragmentation == 0.0);
    EXPECT_GE(st.peak_reserved, 3 * opt.chunk_bytes);
    /* A trimmed pool works as a new one. */
    void *again = gpumem_pool_alloc(pool, 1, 1000, NULL);
    EXPECT_TRUE(again != NULL);
    EXPECT_EQ(gpumem_free(again), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_destroy_busy(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    void *a = gpumem_pool_alloc(pool, 3, 1000, s1);
    int line = __LINE__ - 1;
    ASSERT_NOT_NULL(a);
    reset_seen();
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_EBUSY);
    char want[128];
    snprintf(want, sizeof want, "2.9 KiB at %p, allocated at ", a);
    EXPECT_CONTAINS(seen.message, "the device pool still has 1 live block ");
    EXPECT_CONTAINS(seen.message, want);
    snprintf(want, sizeof want, "test_pool.c:%d (test_destroy_busy)", line);
    EXPECT_CONTAINS(seen.message, want);
    /* Nothing changed: the block is live and the pool usable. */
    gpumem_info info;
    EXPECT_EQ(gpumem_query(a, &info), GPUMEM_OK);
    void *b = gpumem_pool_alloc(pool, 1, 256, s1);
    EXPECT_TRUE(b != NULL);
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(NULL), GPUMEM_OK);
}

static void test_bad_input(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    reset_seen();
    EXPECT_NULL(gpumem_pool_alloc(pool, SIZE_MAX / 2, 3, NULL));
    EXPECT_EQ(seen.code, GPUMEM_EOVERFLOW);
    EXPECT_NULL(gpumem_pool_alloc(NULL, 1, 1, NULL));
    EXPECT_EQ(seen.code, GPUMEM_EINVAL);
    reset_seen();
    EXPECT_NULL(gpumem_pool_alloc(pool, 0, 8, NULL));
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_NULL(gpumem_pool_create(GPUMEM_KIND_MANAGED, 0, NULL));
    EXPECT_EQ(seen.code, GPUMEM_EINVAL);
    reset_seen();
    EXPECT_NULL(gpumem_pool_create(GPUMEM_KIND_DEVICE, 999, NULL));
    EXPECT_NE(seen.code, GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_trim(NULL), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_pool_stats(NULL, NULL), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

/* Pool blocks count in gpumem's process statistics like any allocation of their kind. */
static void test_process_stats(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    gpumem_stats_t a, b;
    gpumem_stats(&a);
    void *p = gpumem_pool_alloc(pool, 1, 5000, NULL);
    ASSERT_NOT_NULL(p);
    gpumem_stats(&b);
    EXPECT_EQ(b.bytes[GPUMEM_KIND_PINNED].current, a.bytes[GPUMEM_KIND_PINNED].current + 5000);
    EXPECT_EQ(b.count[GPUMEM_KIND_PINNED].current, a.count[GPUMEM_KIND_PINNED].current + 1);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    gpumem_stats(&b);
    EXPECT_EQ(b.bytes[GPUMEM_KIND_PINNED].current, a.bytes[GPUMEM_KIND_PINNED].current);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

/* Eight threads allocate and free from both pools at once. Each stamps its pinned blocks and
 * checks the stamp before freeing: a block handed to two threads at once would show. */
static gpumem_pool *shared_pinned, *shared_device;
static atomic_int thread_errors;

static void *worker(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg, x = id * 2654435761u + 1;
    cudaStream_t s = (id & 1) ? s1 : s2;
    void *held[8] = {0};
    size_t held_n[8] = {0};
    for (int i = 0; i < 3000; i++) {
        x = x * 1103515245u + 12345u;
        int slot = (int)((x >> 16) % 8);
        if (held[slot]) {
            if (slot < 4) {
                unsigned char *c = held[slot];
                if (c[0] != (unsigned char)id || c[held_n[slot] - 1] != (unsigned char)id)
                    atomic_fetch_add(&thread_errors, 1);
            }
            if (gpumem_free(held[slot]) != GPUMEM_OK)
                atomic_fetch_add(&thread_errors, 1);
            held[slot] = NULL;
            continue;
        }
        size_t n = 1 + (x >> 4) % 70000;
        held_n[slot] = n;
        held[slot] = slot < 4 ? gpumem_pool_alloc(shared_pinned, n, 1, NULL)
                              : gpumem_pool_alloc(shared_device, n, 1, s);
        if (!held[slot]) {
            atomic_fetch_add(&thread_errors, 1);
            continue;
        }
        if (slot < 4)
            memset(held[slot], (int)id, n);
    }
    for (int k = 0; k < 8; k++)
        if (held[k] && gpumem_free(held[k]) != GPUMEM_OK)
            atomic_fetch_add(&thread_errors, 1);
    return NULL;
}

static void test_threads(void)
{
    uint64_t before = live_total();
    shared_pinned = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    shared_device = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(shared_pinned);
    ASSERT_NOT_NULL(shared_device);
    pthread_t t[8];
    unsigned started = 0;
    while (started < 8 &&
           pthread_create(&t[started], NULL, worker, (void *)(uintptr_t)(started + 1)) == 0)
        started++;
    for (unsigned i = 0; i < started; i++) /* never join a handle that was not started */
        pthread_join(t[i], NULL);
    EXPECT_EQ(started, 8);
    EXPECT_EQ(atomic_load(&thread_errors), 0);
    EXPECT_EQ(live_total(), before);
    gpumem_pool_stats_t st = stats_of(shared_pinned);
    EXPECT_EQ(st.in_use, 0);
    EXPECT_EQ(st.requested, 0);
    EXPECT_GE(st.hits, 1000); /* reuse happened */
    st = stats_of(shared_device);
    EXPECT_EQ(st.blocks_in_use, 0);
    EXPECT_GE(st.hits, 1000);
    EXPECT_EQ(gpumem_pool_destroy(shared_pinned), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(shared_device), GPUMEM_OK);
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    on_sim = strcmp(gpumem_backend(), "sim") == 0;
    const char *want = getenv("GPUMEM_POOL_DESIGN");
    design = want && strcmp(want, "segments") == 0 ? SEGMENTS
             : want && strcmp(want, "classes") == 0 ? CLASSES : VMM;
    if (on_sim) {
        s1 = (cudaStream_t)(uintptr_t)0x1000; /* handles only: the simulation runs nothing */
        s2 = (cudaStream_t)(uintptr_t)0x2000;
    } else if (cudaStreamCreate(&s1) != cudaSuccess || cudaStreamCreate(&s2) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaStreamCreate\n");
        return 1;
    }
    fprintf(stderr, "backend: %s\n", gpumem_backend());
    reset_seen();
    RUN(test_pinned_reuse_and_free);
    RUN(test_device_streams);
    RUN(test_waste_bound_pinned);
    RUN(test_waste_bound_device);
    RUN(test_pinned_steady_state);
    RUN(test_limit_and_retry);
    RUN(test_cuda_oom_retry);
    RUN(test_trim);
    RUN(test_destroy_busy);
    RUN(test_bad_input);
    RUN(test_process_stats);
    RUN(test_threads);
    EXPECT_EQ(live_total(), 0);
    if (!on_sim) {
        EXPECT_EQ(cudaStreamDestroy(s1), cudaSuccess);
        EXPECT_EQ(cudaStreamDestroy(s2), cudaSuccess);
    }
    return harness_exit();
}

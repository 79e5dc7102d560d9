/* Thread caches in front of the pools, per-thread statistics and per-thread sequence blocks,
 * on the simulated device: a block freed on another thread than it was allocated on, a thread
 * that ends with blocks in its cache, trim and destroy while other threads' caches hold
 * blocks, statistics after threads join, and checkpoints with sequence numbers taken in
 * blocks. GPUMEM_POOL_THREAD_CACHE=0 runs the same checks without thread caches
 * (tcache_off); where the two differ, the test says which it expects. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "gpumem.h"
#include "capture.h"
#include "harness.h"
#include "internal.h"

#define S1 ((cudaStream_t)(uintptr_t)0x1000) /* handles only: the simulation runs nothing */
#define S2 ((cudaStream_t)(uintptr_t)0x2000)
#define FLUSH_BYTES ((uint64_t)4 << 20) /* the statistics' flush rule (docs/pools.md) */

static int tcache_on;

static gpumem_pool_stats_t stats_of(gpumem_pool *pool)
{
    gpumem_pool_stats_t st;
    memset(&st, 0, sizeof st);
    EXPECT_EQ(gpumem_pool_stats(pool, &st), GPUMEM_OK);
    return st;
}

static uint64_t live_count(void)
{
    gpumem_live l;
    gpumem_live_get(&l);
    return l.count[0];
}

/* ---- a thread that runs one step at a time, told by the main thread ---- */

typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    void (*step)(void *);
    void *arg;
    int pending, quit;
} helper;

static void *helper_main(void *arg)
{
    helper *h = arg;
    pthread_mutex_lock(&h->m);
    for (;;) {
        while (!h->pending && !h->quit)
            pthread_cond_wait(&h->c, &h->m);
        if (h->pending) {
            h->step(h->arg);
            h->pending = 0;
            pthread_cond_broadcast(&h->c);
        } else {
            break;
        }
    }
    pthread_mutex_unlock(&h->m);
    return NULL;
}

static void helper_start(helper *h, pthread_t *t)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->m, NULL);
    pthread_cond_init(&h->c, NULL);
    pthread_create(t, NULL, helper_main, h);
}

/* Runs step(arg) on the helper thread and waits for it. */
static void helper_run(helper *h, void (*step)(void *), void *arg)
{
    pthread_mutex_lock(&h->m);
    h->step = step;
    h->arg = arg;
    h->pending = 1;
    pthread_cond_broadcast(&h->c);
    while (h->pending)
        pthread_cond_wait(&h->c, &h->m);
    pthread_mutex_unlock(&h->m);
}

static void helper_stop(helper *h, pthread_t t)
{
    pthread_mutex_lock(&h->m);
    h->quit = 1;
    pthread_cond_broadcast(&h->c);
    pthread_mutex_unlock(&h->m);
    pthread_join(t, NULL);
}

typedef struct {
    gpumem_pool *pool;
    cudaStream_t stream;
    size_t bytes;
    int n;
    void *p[64];
    int rc[64];
} batch;

static void alloc_batch(void *arg)
{
    batch *b = arg;
    for (int i = 0; i < b->n; i++)
        b->p[i] = gpumem_pool_alloc(b->pool, 1, b->bytes, b->stream);
}

static void free_batch(void *arg)
{
    batch *b = arg;
    for (int i = 0; i < b->n; i++)
        b->rc[i] = gpumem_free(b->p[i]);
}

/* ---- the tests ---- */

/* Blocks allocated on one thread and freed on another: the release is exact (registry,
 * double free, statistics), the block goes to the releasing thread's cache for its stream,
 * and the releasing thread's next request on that stream gets it back. */
static void test_cross_thread_free(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    helper h;
    pthread_t t;
    helper_start(&h, &t);
    batch b = {pool, S1, 4096, 8, {0}, {0}};
    helper_run(&h, alloc_batch, &b);
    for (int i = 0; i < b.n; i++)
        ASSERT_NOT_NULL(b.p[i]);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(b.p[3], &info), GPUMEM_OK);
    EXPECT_EQ(info.bytes, 4096);
    uint64_t live = live_count();
    for (int i = 0; i < b.n; i++) /* freed here, on the main thread */
        EXPECT_EQ(gpumem_free(b.p[i]), GPUMEM_OK);
    EXPECT_EQ(live_count(), live - (uint64_t)b.n);
    EXPECT_NE(gpumem_query(b.p[3], &info), GPUMEM_OK);
    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_EQ(st.blocks_in_use, 0);
    EXPECT_EQ(st.in_use, 0);
    EXPECT_EQ(st.requested, 0);
    EXPECT_EQ(st.blocks_cached, b.n);
    EXPECT_EQ(st.cached, (uint64_t)b.n * 4096);
    EXPECT_EQ(st.misses, b.n);

    /* A second release of a block freed on the other thread is a double free, from either. */
    reset_seen();
    EXPECT_EQ(gpumem_free(b.p[0]), GPUMEM_EDOUBLEFREE);
    batch again = {pool, S1, 4096, 1, {b.p[1]}, {0}};
    helper_run(&h, free_batch, &again);
    EXPECT_EQ(again.rc[0], GPUMEM_EDOUBLEFREE);

    /* The releasing thread's request on the same stream takes the last block it released;
     * a request on another stream does not take it. */
    void *q = gpumem_pool_alloc(pool, 1, 4096, S1);
    EXPECT_PTR_EQ(q, b.p[b.n - 1]);
    void *other = gpumem_pool_alloc(pool, 1, 4096, S2);
    ASSERT_NOT_NULL(other);
    for (int i = 0; i < b.n; i++)
        EXPECT_NE((uintptr_t)other, (uintptr_t)b.p[i]);
    st = stats_of(pool);
    EXPECT_EQ(st.hits, 1);
    EXPECT_EQ(st.blocks_in_use, 2);
    EXPECT_EQ(st.requested, 2 * 4096);

    /* The allocating thread did not get the blocks back: they are in the releaser's cache
     * (with thread caches), or in the pool's cache for S1 (without). */
    batch one = {pool, S1, 4096, 1, {0}, {0}};
    helper_run(&h, alloc_batch, &one);
    ASSERT_NOT_NULL(one.p[0]);
    int reused = 0;
    for (int i = 0; i < b.n; i++)
        reused |= one.p[0] == b.p[i];
    EXPECT_EQ(reused, !tcache_on);
    helper_run(&h, free_batch, &one);
    EXPECT_EQ(one.rc[0], GPUMEM_OK);
    EXPECT_EQ(gpumem_free(q), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(other), GPUMEM_OK);
    helper_stop(&h, t);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static gpumem_pool *exit_pool;

static void *alloc_free_exit(void *arg)
{
    (void)arg;
    void *p[16];
    for (int i = 0; i < 16; i++)
        p[i] = gpumem_pool_alloc(exit_pool, 1, 8192, NULL);
    for (int i = 0; i < 16; i++)
        gpumem_free(p[i]);
    return NULL;
}

/* A thread that ends with blocks in its cache gives them back to the pool: the next requests
 * of another thread are hits, not new blocks. */
static void test_thread_exit_returns_blocks(void)
{
    exit_pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(exit_pool);
    pthread_t t;
    pthread_create(&t, NULL, alloc_free_exit, NULL);
    pthread_join(t, NULL);
    /* Pinned blocks are carved from a chunk: one miss, and the blocks merge back into it. */
    gpumem_pool_stats_t st = stats_of(exit_pool);
    EXPECT_EQ(st.misses, 1);
    EXPECT_EQ(st.hits, 15);
    EXPECT_EQ(st.blocks_cached, 1);
    EXPECT_EQ(st.cached, st.reserved);
    EXPECT_EQ(st.blocks_in_use, 0);
    void *p[16];
    for (int i = 0; i < 16; i++) {
        p[i] = gpumem_pool_alloc(exit_pool, 1, 8192, NULL);
        ASSERT_NOT_NULL(p[i]);
    }
    st = stats_of(exit_pool);
    EXPECT_EQ(st.misses, 1); /* every one came from the ended thread's memory */
    EXPECT_EQ(st.hits, 15 + 16);
    EXPECT_EQ(st.blocks_in_use, 16);
    EXPECT_EQ(st.requested, 16 * 8192);
    for (int i = 0; i < 16; i++)
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(exit_pool), GPUMEM_OK);
}

/* Trim and destroy while another (live, idle) thread's cache holds blocks of the pool: trim
 * gives them back to CUDA, destroy succeeds, and the thread carries on with another pool. */
static void test_trim_destroy_with_cached_blocks(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    helper h;
    pthread_t t;
    helper_start(&h, &t);
    batch b = {pool, S1, (size_t)1 << 20, 6, {0}, {0}};
    helper_run(&h, alloc_batch, &b);
    helper_run(&h, free_batch, &b);
    for (int i = 0; i < b.n; i++)
        EXPECT_EQ(b.rc[i], GPUMEM_OK);
    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_EQ(st.blocks_cached, 6);
    EXPECT_EQ(st.reserved, 6u << 20);
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    st = stats_of(pool);
    EXPECT_EQ(st.blocks_cached, 0);
    EXPECT_EQ(st.cached, 0);
    EXPECT_EQ(st.reserved, 0);
    EXPECT_EQ(st.misses, 6);

    /* Again, then destroy with the blocks still in the helper's cache; a block still live is
     * refused first (GPUMEM_EBUSY) and nothing is lost by the refusal. */
    helper_run(&h, alloc_batch, &b);
    void *live = b.p[5];
    b.n = 5;
    helper_run(&h, free_batch, &b);
    reset_seen();
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_EBUSY);
    EXPECT_CONTAINS(seen.message, "still has 1 live block (1.0 MiB requested)");
    st = stats_of(pool);
    EXPECT_EQ(st.blocks_in_use, 1);
    EXPECT_EQ(st.blocks_cached, 5);
    EXPECT_EQ(gpumem_free(live), GPUMEM_OK);
    helper_run(&h, alloc_batch, &b); /* back into the helper's cache, then released there */
    helper_run(&h, free_batch, &b);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);

    /* The helper's cache forgot the destroyed pool: a new pool (perhaps at the same address)
     * starts empty, and the helper's pairs work on it. */
    gpumem_pool *next = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(next);
    batch c = {next, S1, (size_t)1 << 20, 2, {0}, {0}};
    helper_run(&h, alloc_batch, &c);
    ASSERT_NOT_NULL(c.p[0]);
    ASSERT_NOT_NULL(c.p[1]);
    st = stats_of(next);
    EXPECT_EQ(st.hits, 0);
    EXPECT_EQ(st.misses, 2);
    helper_run(&h, free_batch, &c);
    helper_stop(&h, t); /* ends with next's blocks in its cache */
    st = stats_of(next);
    EXPECT_EQ(st.blocks_cached, 2);
    EXPECT_EQ(gpumem_pool_destroy(next), GPUMEM_OK);
}

static void alloc_mixed(void *arg)
{
    batch *b = arg;
    for (int i = 0; i < b->n; i++)
        b->p[i] = gpumem_pool_alloc(b->pool, 1, b->bytes + (size_t)(i % 16) * (128u << 10),
                                    b->stream);
}

/* A thread's caches hold at most 32 MiB: of 64 released blocks of 1 to 2.9 MiB (124 MiB),
 * the rest went to the pool, where another thread finds them. */
static void test_thread_cache_bound(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    helper h;
    pthread_t t;
    helper_start(&h, &t);
    batch b = {pool, S1, (size_t)1 << 20, 64, {0}, {0}};
    helper_run(&h, alloc_mixed, &b);
    uint64_t total = 0;
    for (int i = 0; i < b.n; i++) {
        ASSERT_NOT_NULL(b.p[i]);
        size_t n = ((size_t)1 << 20) + (size_t)(i % 16) * (128u << 10);
        total += n <= (2u << 20) ? n : (n + (256u << 10) - 1) & ~(size_t)((256u << 10) - 1);
    }
    helper_run(&h, free_batch, &b);
    gpumem_pool_stats_t st = stats_of(pool);
    EXPECT_EQ(st.blocks_cached, 64);
    EXPECT_EQ(st.cached, total); /* class sizes: 128 KiB apart to 2 MiB, then 256 KiB */
    batch c = {pool, S1, (size_t)1 << 20, 64, {0}, {0}};
    alloc_mixed(&c); /* on this thread: hits are blocks the helper's cache did not keep */
    gpumem_pool_stats_t after = stats_of(pool);
    uint64_t kept = (after.misses - st.misses) * ((size_t)1 << 20); /* at least, per miss */
    EXPECT_LE(kept, (uint64_t)32 << 20);
    if (tcache_on)
        EXPECT_GE(after.misses - st.misses, 1);
    else
        EXPECT_EQ(after.misses, st.misses);
    free_batch(&c);
    helper_stop(&h, t);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

#define VISIT_THREADS 8
static gpumem_pool *visit_pool;
static atomic_int visit_stop, visit_errors, visit_pairs;

static void *visit_worker(void *arg)
{
    cudaStream_t s = (cudaStream_t)(uintptr_t)(0x1000 * (1 + (uintptr_t)arg % 2));
    size_t bytes = 4096u << ((uintptr_t)arg % 3);
    while (!atomic_load(&visit_stop)) {
        void *p = gpumem_pool_alloc(visit_pool, 1, bytes, s);
        if (!p || gpumem_free(p) != GPUMEM_OK)
            atomic_fetch_add(&visit_errors, 1);
        atomic_fetch_add(&visit_pairs, 1);
    }
    return NULL;
}

/* Statistics and trims from one thread while others run pairs on the pool: every reading is
 * one instant's (reserved = in use + cached, at most one block in use a thread), and nothing
 * is lost or counted twice. */
static void test_concurrent_visits(void)
{
    visit_pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(visit_pool);
    pthread_t t[VISIT_THREADS];
    for (uintptr_t i = 0; i < VISIT_THREADS; i++)
        pthread_create(&t[i], NULL, visit_worker, (void *)i);
    int bad = 0;
    for (int round = 0; round < 300 || atomic_load(&visit_pairs) < 20000; round++) {
        gpumem_pool_stats_t st = stats_of(visit_pool);
        bad += st.reserved != st.in_use + st.cached;
        bad += st.blocks_in_use > VISIT_THREADS;
        bad += st.requested > st.in_use;
        if (round % 10 == 0)
            EXPECT_EQ(gpumem_pool_trim(visit_pool), GPUMEM_OK);
    }
    EXPECT_EQ(bad, 0);
    atomic_store(&visit_stop, 1);
    for (int i = 0; i < VISIT_THREADS; i++)
        pthread_join(t[i], NULL);
    EXPECT_EQ(atomic_load(&visit_errors), 0);
    gpumem_pool_stats_t st = stats_of(visit_pool);
    EXPECT_EQ(st.blocks_in_use, 0);
    EXPECT_EQ(st.in_use, 0);
    EXPECT_EQ(st.requested, 0);
    EXPECT_EQ(st.reserved, st.cached);
    EXPECT_GE(st.hits, 1);
    EXPECT_EQ(gpumem_pool_destroy(visit_pool), GPUMEM_OK);
}

/* Interior lookups of large pool blocks (above 64 KiB), which stay in the registry's table of
 * large spans while the pool owns them: exact while live, nothing once released or trimmed. */
static void test_large_block_lookups(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    char *p = gpumem_pool_alloc(pool, 1, 300000, NULL);
    ASSERT_NOT_NULL(p);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(p + 299999, &info), GPUMEM_OK);
    EXPECT_PTR_EQ(info.base, p);
    EXPECT_EQ(info.bytes, 300000);
    EXPECT_NE(gpumem_query(p + 300000, &info), GPUMEM_OK); /* past the request, inside the class */
    reset_seen();
    EXPECT_EQ(gpumem_free(p + 4096), GPUMEM_EINTERIOR);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_NE(gpumem_query(p + 100, &info), GPUMEM_OK);
    char *q = gpumem_pool_alloc(pool, 1, 296000, NULL); /* same class: the same block */
    EXPECT_PTR_EQ(q, p);
    EXPECT_EQ(gpumem_query(q + 295999, &info), GPUMEM_OK);
    EXPECT_EQ(info.bytes, 296000);
    EXPECT_EQ(gpumem_free(q), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    EXPECT_NE(gpumem_query(p + 100, &info), GPUMEM_OK);
}

#define STAT_THREADS 16
#define STAT_ROUNDS 400

static gpumem_pool *stat_pool[2];
static pthread_barrier_t stat_barrier;
static void *stat_keep[STAT_THREADS][STAT_THREADS];
static atomic_int stat_errors;

static size_t stat_size(unsigned t, int i)
{
    static const size_t sizes[] = {256, 4096, 5000, 65536, 100000, (size_t)1 << 20};
    return sizes[(t + (unsigned)i) % 6];
}

/* Pairs on both pools and plain allocations, each thread keeping t + 1 blocks live at the
 * end; every thread holds 1 MiB at the barrier at once. */
static void *stat_worker(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < STAT_ROUNDS; i++) {
        gpumem_pool *pool = stat_pool[i % 2];
        void *p = gpumem_pool_alloc(pool, 1, stat_size(t, i), i % 2 ? NULL : S1);
        if (!p || gpumem_free(p) != GPUMEM_OK)
            atomic_fetch_add(&stat_errors, 1);
    }
    void *big = gpumem_device_alloc(1, (size_t)1 << 20);
    pthread_barrier_wait(&stat_barrier); /* all STAT_THREADS MiB live at once */
    pthread_barrier_wait(&stat_barrier);
    if (!big || gpumem_free(big) != GPUMEM_OK)
        atomic_fetch_add(&stat_errors, 1);
    for (unsigned k = 0; k <= t; k++) {
        stat_keep[t][k] = gpumem_pool_alloc(stat_pool[k % 2], 1, 4096, k % 2 ? NULL : S1);
        if (!stat_keep[t][k])
            atomic_fetch_add(&stat_errors, 1);
    }
    return NULL;
}

/* After the threads join: counts, current and total bytes, pool figures are exact; the peak
 * is within the flush rule's bound of the true one. */
static void test_stats_exact_after_join(void)
{
    stat_pool[0] = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    stat_pool[1] = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(stat_pool[0]);
    ASSERT_NOT_NULL(stat_pool[1]);
    gpumem_stats_t before;
    gpumem_stats(&before);
    gpumem_stats_reset_peak();
    pthread_barrier_init(&stat_barrier, NULL, STAT_THREADS + 1);
    pthread_t t[STAT_THREADS];
    for (unsigned i = 0; i < STAT_THREADS; i++)
        pthread_create(&t[i], NULL, stat_worker, (void *)(uintptr_t)i);
    pthread_barrier_wait(&stat_barrier);
    gpumem_stats_t during;
    gpumem_stats(&during);
    EXPECT_EQ(during.count[GPUMEM_KIND_DEVICE].current,
              before.count[GPUMEM_KIND_DEVICE].current + STAT_THREADS);
    pthread_barrier_wait(&stat_barrier);
    for (int i = 0; i < STAT_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&stat_barrier);
    EXPECT_EQ(atomic_load(&stat_errors), 0);

    uint64_t live_blocks = STAT_THREADS * (STAT_THREADS + 1) / 2; /* 1 + 2 + ... + 16 */
    uint64_t dev_blocks = 0;
    for (unsigned i = 0; i < STAT_THREADS; i++)
        dev_blocks += (i + 2) / 2; /* k = 0, 2, 4, ... <= i */
    gpumem_stats_t s;
    gpumem_stats(&s);
    EXPECT_EQ(s.count[0].current, before.count[0].current + live_blocks);
    EXPECT_EQ(s.bytes[0].current, before.bytes[0].current + live_blocks * 4096);
    EXPECT_EQ(s.count[0].total, before.count[0].total + live_blocks +
                                    STAT_THREADS * (STAT_ROUNDS + 1));
    EXPECT_EQ(s.count[GPUMEM_KIND_DEVICE].current,
              before.count[GPUMEM_KIND_DEVICE].current + dev_blocks);
    /* Peak: the threads held 16 MiB at once (plus their pool blocks); every thread flushed at
     * exit, and the flush rule bounds what an unflushed thread could hide: 4 MiB each. */
    uint64_t held = before.bytes[0].current + STAT_THREADS * ((uint64_t)1 << 20);
    EXPECT_GE(s.bytes[0].peak + STAT_THREADS * FLUSH_BYTES, held);
    EXPECT_LE(s.bytes[0].peak, held + STAT_THREADS * ((uint64_t)1 << 20) +
                                   STAT_THREADS * FLUSH_BYTES);
    EXPECT_GE(s.bytes[0].peak, s.bytes[0].current);

    gpumem_pool_stats_t d = stats_of(stat_pool[0]), p = stats_of(stat_pool[1]);
    EXPECT_EQ(d.blocks_in_use, dev_blocks);
    EXPECT_EQ(p.blocks_in_use, live_blocks - dev_blocks);
    EXPECT_EQ(d.requested, dev_blocks * 4096);
    EXPECT_EQ(p.requested, (live_blocks - dev_blocks) * 4096);
    EXPECT_EQ(d.hits + d.misses, STAT_THREADS * STAT_ROUNDS / 2 + dev_blocks);
    EXPECT_EQ(p.hits + p.misses, STAT_THREADS * STAT_ROUNDS / 2 + live_blocks - dev_blocks);
    EXPECT_EQ(d.reserved, d.in_use + d.cached);

    /* Leak report view: every live block is in the registry with its pool kind. */
    gpumem_live l;
    gpumem_live_get(&l);
    EXPECT_EQ(l.count[GPUMEM_KIND_PINNED], before.count[GPUMEM_KIND_PINNED].current +
                                               live_blocks - dev_blocks);
    EXPECT_EQ(gpumem_pool_destroy(stat_pool[0]), GPUMEM_EBUSY);
    for (unsigned i = 0; i < STAT_THREADS; i++)
        for (unsigned k = 0; k <= i; k++)
            EXPECT_EQ(gpumem_free(stat_keep[i][k]), GPUMEM_OK);
    gpumem_stats(&s);
    EXPECT_EQ(s.count[0].current, before.count[0].current);
    EXPECT_EQ(gpumem_pool_destroy(stat_pool[0]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(stat_pool[1]), GPUMEM_OK);
}

/* With one thread the peak is exact whatever the flush rule: it flushes itself when read. */
static void test_single_thread_peak_exact(void)
{
    gpumem_stats_t s0;
    gpumem_stats(&s0);
    gpumem_stats_reset_peak();
    void *a = gpumem_device_alloc(3, 1000000);
    ASSERT_NOT_NULL(a);
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
    void *b = gpumem_device_alloc(1, 1000000);
    ASSERT_NOT_NULL(b);
    gpumem_stats_t s;
    gpumem_stats(&s);
    EXPECT_EQ(s.bytes[0].peak, s0.bytes[0].current + 3000000);
    EXPECT_EQ(s.bytes[GPUMEM_KIND_DEVICE].peak, s0.bytes[GPUMEM_KIND_DEVICE].current + 3000000);
    EXPECT_EQ(s.bytes[0].current, s0.bytes[0].current + 1000000);
    EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
}

static void alloc_one_device(void *arg)
{
    void **p = arg;
    *p = gpumem_device_alloc(1, 4096);
}

/* A checkpoint sees exactly what was allocated after it, also on a thread that took its
 * block of sequence numbers before the checkpoint (the epoch makes it take a new one). */
static void test_checkpoint_epoch(void)
{
    helper h;
    pthread_t t;
    helper_start(&h, &t);
    void *before = NULL, *after = NULL;
    helper_run(&h, alloc_one_device, &before); /* the helper's sequence block starts here */
    ASSERT_NOT_NULL(before);
    void *mine = gpumem_device_alloc(1, 4096);
    gpumem_checkpoint_t cp = gpumem_checkpoint();
    helper_run(&h, alloc_one_device, &after);
    ASSERT_NOT_NULL(after);
    void *mine_after = gpumem_device_alloc(1, 8192);
    gpumem_checkpoint_diff_t d;
    EXPECT_EQ(gpumem_checkpoint_diff(&cp, NULL, &d), GPUMEM_OK);
    EXPECT_EQ(d.count, 2);
    EXPECT_EQ(d.bytes, 4096 + 8192);
    gpumem_info ib, ia;
    EXPECT_EQ(gpumem_query(before, &ib), GPUMEM_OK);
    EXPECT_EQ(gpumem_query(after, &ia), GPUMEM_OK);
    EXPECT_TRUE(ia.seq > cp.seq);
    EXPECT_TRUE(ib.seq <= cp.seq);
    EXPECT_EQ(gpumem_free(before), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(after), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(mine), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(mine_after), GPUMEM_OK);
    helper_stop(&h, t);
}

typedef struct {
    gpumem_pool *pool;
    cudaStream_t stream;
    const void *cache, *stack;
} line_probe;

static void pair_and_probe(void *arg)
{
    line_probe *lp = arg;
    void *p = gpumem_pool_alloc(lp->pool, 1, 4096, lp->stream);
    if (p)
        (void)gpumem_free(p);
    lp->cache = gpumem__tc_probe(lp->pool, lp->stream, &lp->stack);
}

/* A thread's cache and its stacks start on 128-byte boundaries (they take whole lines of their
 * own: their owner writes them on every pair), on the main thread and on a new one. */
static void test_cache_lines_own(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    line_probe here = {pool, (cudaStream_t)(uintptr_t)0x7100, NULL, NULL};
    line_probe there = here;
    pair_and_probe(&here);
    helper h;
    pthread_t t;
    helper_start(&h, &t);
    helper_run(&h, pair_and_probe, &there);
    if (tcache_on) {
        ASSERT_NOT_NULL(here.cache);
        ASSERT_NOT_NULL(there.cache);
        EXPECT_TRUE(here.cache != there.cache);
        EXPECT_EQ((uintptr_t)here.cache % 128, 0);
        EXPECT_EQ((uintptr_t)there.cache % 128, 0);
        ASSERT_NOT_NULL(here.stack);
        ASSERT_NOT_NULL(there.stack);
        EXPECT_EQ((uintptr_t)here.stack % 128, 0);
        EXPECT_EQ((uintptr_t)there.stack % 128, 0);
    } else {
        EXPECT_TRUE(here.stack == NULL);
        EXPECT_TRUE(there.stack == NULL);
    }
    helper_stop(&h, t);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

int main(void)
{
    gpumem_set_error_handler(capture, NULL);
    if (gpumem_backend_select("sim") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        fprintf(stderr, "FAIL: the simulated device did not start\n");
        return 1;
    }
    const char *opt = getenv("GPUMEM_POOL_THREAD_CACHE");
    tcache_on = !opt || strcmp(opt, "0") != 0;
    fprintf(stderr, "thread caches: %s\n", tcache_on ? "on" : "off");
    RUN(test_cross_thread_free);
    RUN(test_thread_exit_returns_blocks);
    RUN(test_trim_destroy_with_cached_blocks);
    RUN(test_thread_cache_bound);
    RUN(test_concurrent_visits);
    RUN(test_large_block_lookups);
    RUN(test_single_thread_peak_exact);
    RUN(test_checkpoint_epoch);
    RUN(test_cache_lines_own);
    RUN(test_stats_exact_after_join);
    EXPECT_EQ(live_count(), 0);
    return harness_exit();
}

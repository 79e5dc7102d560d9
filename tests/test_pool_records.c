/* Pool blocks' registry records, which stay while a block is cached (docs/pools.md, "Records
 * and statistics"), on the simulated device: a block freed by another thread than the one that
 * allocated it; statistics exact after many threads that allocated and released pool blocks
 * have ended; a second release of a block in a thread cache, in the pool's cache and after
 * the pool gave it back to CUDA, each reported with both sites; a double free raced by two
 * threads; leak reports that list live pool blocks and not cached ones. Runs with thread caches
 * (pool_records) and without (pool_records_tcache_off), and on a GPU (pool_records_gpu:
 * `test_pool_records cuda`). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "gpumem.h"
#include "backend_arg.h"
#include "capture.h"
#include "harness.h"

#define S1 ((cudaStream_t)0) /* the default stream: a real one on a GPU too */

static gpumem_stats_t stats_now(void)
{
    gpumem_stats_t s;
    EXPECT_EQ(gpumem_stats(&s), GPUMEM_OK);
    return s;
}

/* ---- a block freed by another thread ---- */

typedef struct {
    void *p;
    int rc;
} one_free;

static void *free_there(void *arg)
{
    one_free *f = arg;
    f->rc = gpumem_free(f->p);
    return NULL;
}

static void test_freed_by_another_thread(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    gpumem_stats_t s0 = stats_now();
    void *p = gpumem_pool_alloc(pool, 1, 5000, S1);
    ASSERT_NOT_NULL(p);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(p, &info), GPUMEM_OK);
    EXPECT_EQ(info.bytes, 5000);
    EXPECT_EQ(info.kind, GPUMEM_KIND_DEVICE);
    one_free f = {p, -1};
    pthread_t t;
    pthread_create(&t, NULL, free_there, &f);
    pthread_join(t, NULL); /* the releasing thread has ended, its counters folded in */
    EXPECT_EQ(f.rc, GPUMEM_OK);
    reset_seen();
    EXPECT_NE(gpumem_query(p, &info), GPUMEM_OK);
    gpumem_stats_t s = stats_now();
    EXPECT_EQ(s.count[GPUMEM_KIND_DEVICE].current, s0.count[GPUMEM_KIND_DEVICE].current);
    EXPECT_EQ(s.count[GPUMEM_KIND_DEVICE].total, s0.count[GPUMEM_KIND_DEVICE].total + 1);
    EXPECT_EQ(s.bytes[GPUMEM_KIND_DEVICE].current, s0.bytes[GPUMEM_KIND_DEVICE].current);
    EXPECT_EQ(s.bytes[GPUMEM_KIND_DEVICE].total, s0.bytes[GPUMEM_KIND_DEVICE].total + 5000);
    EXPECT_EQ(s.device_count[0].current, s0.device_count[0].current);
    /* Released on the other thread, released again here: a double free. */
    reset_seen();
    EXPECT_EQ(gpumem_free(p), GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

/* ---- statistics after many threads end ---- */

#define WORKERS 24
#define ROUNDS 500

static gpumem_pool *work_pool[2];
static void *kept[WORKERS][4];
static atomic_int work_errors;

/* Allocates and releases ROUNDS pairs from both pools, keeps (i % 4) + 1 blocks of the
 * device pool, and releases the blocks the worker before it kept (a block freed by another
 * thread than its own, and the thread that allocated it may have ended). */
static void *worker(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;
    for (int r = 0; r < ROUNDS; r++) {
        void *p = gpumem_pool_alloc(work_pool[r & 1], 1, 1024u * (1 + (unsigned)r % 8), S1);
        if (!p || gpumem_free(p) != GPUMEM_OK)
            atomic_fetch_add(&work_errors, 1);
    }
    for (unsigned k = 0; k <= i % 4; k++)
        if (!(kept[i][k] = gpumem_pool_alloc(work_pool[0], 1, 4096, S1)))
            atomic_fetch_add(&work_errors, 1);
    return NULL;
}

static void test_stats_after_threads_end(void)
{
    work_pool[0] = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    work_pool[1] = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(work_pool[0]);
    ASSERT_NOT_NULL(work_pool[1]);
    gpumem_stats_t s0 = stats_now();
    pthread_t t[WORKERS];
    for (unsigned i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    for (unsigned i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    EXPECT_EQ(atomic_load(&work_errors), 0);
    uint64_t keep = 0;
    for (unsigned i = 0; i < WORKERS; i++)
        keep += i % 4 + 1;
    uint64_t pairs_bytes = 0; /* per thread: sizes 1..8 KiB in turn */
    for (int r = 0; r < ROUNDS; r++)
        pairs_bytes += 1024u * (1 + (unsigned)r % 8);
    gpumem_stats_t s = stats_now();
    EXPECT_EQ(s.count[0].current, s0.count[0].current + keep);
    EXPECT_EQ(s.bytes[0].current, s0.bytes[0].current + keep * 4096);
    EXPECT_EQ(s.count[0].total, s0.count[0].total + WORKERS * (ROUNDS + 0u) + keep);
    EXPECT_EQ(s.bytes[0].total, s0.bytes[0].total + WORKERS * pairs_bytes + keep * 4096);
    EXPECT_EQ(s.count[GPUMEM_KIND_PINNED].total,
              s0.count[GPUMEM_KIND_PINNED].total + WORKERS * (ROUNDS / 2u));
    EXPECT_EQ(s.count[GPUMEM_KIND_PINNED].current, s0.count[GPUMEM_KIND_PINNED].current);
    EXPECT_EQ(s.count[GPUMEM_KIND_DEVICE].current, s0.count[GPUMEM_KIND_DEVICE].current + keep);
    EXPECT_EQ(s.device_count[0].current, s0.device_count[0].current + keep);
    gpumem_live l;
    gpumem_live_get(&l);
    EXPECT_EQ(l.count[GPUMEM_KIND_DEVICE], s.count[GPUMEM_KIND_DEVICE].current);
    EXPECT_EQ(l.bytes[0], s.bytes[0].current);

    /* Released by other threads, which end too. */
    pthread_t f[WORKERS];
    one_free frees[WORKERS][4];
    for (unsigned i = 0; i < WORKERS; i++) {
        for (unsigned k = 0; k < 4; k++)
            frees[i][k] = (one_free){k <= i % 4 ? kept[i][k] : NULL, 0};
    }
    for (unsigned k = 0; k < 4; k++) {
        for (unsigned i = 0; i < WORKERS; i++)
            pthread_create(&f[i], NULL, free_there, &frees[(i + 1) % WORKERS][k]);
        for (unsigned i = 0; i < WORKERS; i++)
            pthread_join(f[i], NULL);
    }
    for (unsigned i = 0; i < WORKERS; i++)
        for (unsigned k = 0; k < 4; k++)
            EXPECT_EQ(frees[i][k].rc, GPUMEM_OK);
    s = stats_now();
    EXPECT_EQ(s.count[0].current, s0.count[0].current);
    EXPECT_EQ(s.bytes[0].current, s0.bytes[0].current);
    EXPECT_EQ(s.count[0].total, s0.count[0].total + WORKERS * (ROUNDS + 0u) + keep);
    EXPECT_EQ(gpumem_pool_destroy(work_pool[0]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(work_pool[1]), GPUMEM_OK);
}

/* ---- double free of a cached block, with both sites ---- */

static const gpumem_site alloc_site = {"alloc_here.c", "make", 11};
static const gpumem_site first_site = {"first_free.c", "drop", 22};
static const gpumem_site again_site = {"again_free.c", "drop_again", 33};

/* The record of a second release names the allocation and both releases. */
static void expect_both_sites(void *p)
{
    reset_seen();
    EXPECT_EQ(gpumem_free_at(p, again_site), GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(seen.code, GPUMEM_EDOUBLEFREE);
    EXPECT_CONTAINS(seen.message, "double free of 4.0 KiB device memory");
    EXPECT_CONTAINS(seen.message, "released again at  again_free.c:33 (drop_again)");
    EXPECT_CONTAINS(seen.message, "first released at  first_free.c:22 (drop)");
    EXPECT_CONTAINS(seen.message, "allocated at       alloc_here.c:11 (make)");
}

static void test_double_free_of_cached_block(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    gpumem_stats_t s0 = stats_now();
    /* In this thread's cache (or, without thread caches, the pool's). */
    void *p = gpumem_pool_alloc_at(pool, 1, 4096, S1, alloc_site);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(gpumem_free_at(p, first_site), GPUMEM_OK);
    expect_both_sites(p);
    /* Nothing changed: the block is still cached once, the counts are the same. */
    gpumem_stats_t s = stats_now();
    EXPECT_EQ(s.count[0].current, s0.count[0].current);
    EXPECT_EQ(s.count[0].total, s0.count[0].total + 1);
    gpumem_pool_stats_t ps;
    EXPECT_EQ(gpumem_pool_stats(pool, &ps), GPUMEM_OK);
    EXPECT_GE(ps.blocks_cached, 1); /* with the free rest of its page or segment, 2 */
    EXPECT_EQ(ps.blocks_in_use, 0);
    EXPECT_EQ(ps.cached, ps.reserved);
    /* In the pool's own cache: trim drains the thread caches into the pool first... */
    void *q = gpumem_pool_alloc_at(pool, 1, 4096, S1, alloc_site);
    EXPECT_PTR_EQ(q, p);
    EXPECT_EQ(gpumem_free_at(q, first_site), GPUMEM_OK);
    /* ...and after the pool gave the block back to CUDA, the quarantine remembers it. */
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_stats(pool, &ps), GPUMEM_OK);
    EXPECT_EQ(ps.reserved, 0);
    expect_both_sites(p);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

/* A block moved from a thread's cache to the pool's (the thread ended) keeps its record. */
static void *alloc_free_end(void *arg)
{
    void **p = arg;
    *p = gpumem_pool_alloc_at(work_pool[0], 1, 4096, S1, alloc_site);
    gpumem_free_at(*p, first_site);
    return NULL;
}

static void test_double_free_in_pool_cache(void)
{
    work_pool[0] = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(work_pool[0]);
    void *p = NULL;
    pthread_t t;
    pthread_create(&t, NULL, alloc_free_end, &p);
    pthread_join(t, NULL);
    ASSERT_NOT_NULL(p);
    gpumem_pool_stats_t ps;
    EXPECT_EQ(gpumem_pool_stats(work_pool[0], &ps), GPUMEM_OK);
    EXPECT_EQ(ps.blocks_cached, 1);
    expect_both_sites(p);
    EXPECT_EQ(gpumem_pool_destroy(work_pool[0]), GPUMEM_OK);
}

/* Two threads release the same block at once: exactly one succeeds, the other is told it is a
 * double free, every round. */
typedef struct {
    void *p;
    pthread_barrier_t *go;
    int rc;
} race_arg;

static void *race_free(void *arg)
{
    race_arg *a = arg;
    pthread_barrier_wait(a->go);
    a->rc = gpumem_free(a->p);
    return NULL;
}

static void test_double_free_race(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    gpumem_stats_t s0 = stats_now();
    int bad = 0;
    for (int round = 0; round < 200; round++) {
        void *p = gpumem_pool_alloc(pool, 1, 4096, NULL);
        ASSERT_NOT_NULL(p);
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, 2);
        race_arg a = {p, &go, -1}, b = {p, &go, -1};
        pthread_t ta, tb;
        pthread_create(&ta, NULL, race_free, &a);
        pthread_create(&tb, NULL, race_free, &b);
        pthread_join(ta, NULL);
        pthread_join(tb, NULL);
        pthread_barrier_destroy(&go);
        int ok = (a.rc == GPUMEM_OK) + (b.rc == GPUMEM_OK);
        int twice = (a.rc == GPUMEM_EDOUBLEFREE) + (b.rc == GPUMEM_EDOUBLEFREE);
        bad += ok != 1 || twice != 1;
    }
    EXPECT_EQ(bad, 0);
    gpumem_stats_t s = stats_now();
    EXPECT_EQ(s.count[0].current, s0.count[0].current);
    EXPECT_EQ(s.count[0].total, s0.count[0].total + 200);
    gpumem_pool_stats_t ps;
    EXPECT_EQ(gpumem_pool_stats(pool, &ps), GPUMEM_OK);
    EXPECT_EQ(ps.blocks_in_use, 0);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

/* ---- leak reports ---- */

static const gpumem_site kept_site = {"kept_blocks.c", "hold", 44};
static const gpumem_site cached_site = {"cached_blocks.c", "churn", 55};

static void test_leak_report_lists_live_not_cached(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    FILE *null = fopen("/dev/null", "w");
    ASSERT_NOT_NULL(null);
    int before = gpumem_report(null, GPUMEM_REPORT_SUMMARY);
    fclose(null);
    void *keep[3], *drop[5];
    for (int i = 0; i < 3; i++)
        ASSERT_NOT_NULL(keep[i] = gpumem_pool_alloc_at(pool, 1, 4096, S1, kept_site));
    for (int i = 0; i < 5; i++)
        ASSERT_NOT_NULL(drop[i] = gpumem_pool_alloc_at(pool, 1, 4096, S1, cached_site));
    for (int i = 0; i < 5; i++)
        EXPECT_EQ(gpumem_free(drop[i]), GPUMEM_OK);
    FILE *out = tmpfile();
    ASSERT_NOT_NULL(out);
    EXPECT_EQ(gpumem_report(out, GPUMEM_REPORT_FULL), before + 3);
    char text[8192] = {0};
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    fclose(out);
    text[n] = 0;
    EXPECT_CONTAINS(text, "kept_blocks.c:44 (hold)");
    EXPECT_TRUE(strstr(text, "cached_blocks.c") == NULL);
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(gpumem_free(keep[i]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    RUN(test_freed_by_another_thread);
    RUN(test_stats_after_threads_end);
    RUN(test_double_free_of_cached_block);
    RUN(test_double_free_in_pool_cache);
    RUN(test_double_free_race);
    RUN(test_leak_report_lists_live_not_cached);
    EXPECT_EQ(live_total(), 0);
    return harness_exit();
}

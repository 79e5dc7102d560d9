/* Copies: gpumem_copy and gpumem_copy_async. The same scenarios run on the simulated
 * device (`test_copy sim`, label host, also with options that send every copy between pageable
 * and device memory through a tiny staging ring, and with staging off) and on a GPU
 * (`test_copy cuda`, label gpu, skipped with 77 where there is none).
 *
 * Every copy is checked byte by byte, with guard bytes around the destination range. Device
 * memory is read and written through the backend's own copy (cuMemcpyAsync on a GPU), which
 * is the reference the staged path must agree with. The fault-injection tests run on the
 * simulated device only. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include <cuda_runtime_api.h>

#include "backend_arg.h"
#include "capture.h"
#include "harness.h"
#include "internal.h"

static int on_sim;
static cudaStream_t s1;

enum { PAGEABLE, PINNED, MAPPED, DEVICE, MANAGED, DEVICE_ASYNC, POOL_DEVICE, POOL_PINNED,
       NKINDS };
static const char *const kind_names[NKINDS] = {"pageable", "pinned", "mapped", "device",
                                               "managed", "device-async", "pool-device",
                                               "pool-pinned"};
static gpumem_pool *dev_pool, *pin_pool;

static int host_visible(int k)
{
    return k == PAGEABLE || k == PINNED || k == MAPPED || k == MANAGED || k == POOL_PINNED;
}

static void *make(int k, size_t n)
{
    switch (k) {
    case PAGEABLE:
        return malloc(n);
    case PINNED:
        return gpumem_pinned_alloc(n, 1);
    case MAPPED:
        return gpumem_host_alloc(n, 1, GPUMEM_HOST_MAPPED);
    case DEVICE:
        return gpumem_device_alloc(n, 1);
    case MANAGED:
        return gpumem_managed_alloc(n, 1, GPUMEM_ATTACH_GLOBAL);
    case DEVICE_ASYNC:
        return gpumem_device_alloc_async(n, 1, s1);
    case POOL_DEVICE:
        return gpumem_pool_alloc(dev_pool, n, 1, s1);
    default:
        return gpumem_pool_alloc(pin_pool, n, 1, NULL);
    }
}

static void drop(int k, void *p)
{
    if (k == PAGEABLE)
        free(p);
    else
        EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
}

/* The reference path: one backend copy, then the device is idle. */
static void ref_copy(void *dst, const void *src, size_t n)
{
    EXPECT_EQ(gpumem__be->stream_sync(s1), 0);
    EXPECT_EQ(gpumem__be->memcpy_async(dst, src, n, NULL), 0);
    EXPECT_EQ(gpumem__be->stream_sync(NULL), 0);
}

/* memcpy for memory the host can touch (once the stream is idle), else the reference path. */
static void move(int k, void *dst, const void *src, size_t n)
{
    if (host_visible(k)) {
        EXPECT_EQ(gpumem__be->stream_sync(s1), 0);
        memcpy(dst, src, n);
    } else {
        ref_copy(dst, src, n);
    }
}

/* Byte i of pattern seed: no period a copy at an offset could hide behind. */
static unsigned char pat(unsigned seed, size_t i)
{
    uint64_t x = ((uint64_t)i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)seed << 40);
    return (unsigned char)(x >> 56 ^ x >> 29);
}

static void fill(unsigned char *buf, size_t n, unsigned seed, size_t from)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = pat(seed, from + i);
}

/* Counts the bytes of window[0, len) that differ from: src pattern in [doff, doff + n), guard
 * pattern elsewhere; reports the first. */
static size_t mismatches(const unsigned char *window, size_t len, size_t doff, size_t n,
                         unsigned src_seed, size_t soff, unsigned guard_seed)
{
    size_t bad = 0;
    for (size_t i = 0; i < len; i++) {
        int inside = i >= doff && i - doff < n;
        unsigned char want = inside ? pat(src_seed, soff + (i - doff)) : pat(guard_seed, i);
        if (window[i] != want && bad++ == 0)
            fprintf(stderr, "  byte %zu (%s the copy): %u, want %u\n", i,
                    inside ? "inside" : "outside", window[i], want);
    }
    return bad;
}

static const size_t sizes[] = {1, 3, 255, 4097, ((size_t)3 << 20) + 7};
static const size_t offsets[][2] = {{0, 0}, {1, 13}, {13, 1}}; /* {source, destination} */
#define BUF (((size_t)3 << 20) + 64)

/* One source and one destination kind: every size at every offset pair, sync and async. */
static void check_pair(int sk, int dk, unsigned char *scratch)
{
    unsigned char *src = make(sk, BUF), *dst = make(dk, BUF);
    if (!src || !dst) {
        fprintf(stderr, "FAIL: allocating %s and %s: %s\n", kind_names[sk], kind_names[dk],
                gpumem_last_error()->message);
        harness_failures++;
        if (src)
            drop(sk, src); // gpumem-lint: ignore[GM002] drop() picks the release by kind
        if (dst)
            drop(dk, dst); // gpumem-lint: ignore[GM002] drop() picks the release by kind
        return;
    }
    unsigned src_seed = (unsigned)(sk * 16 + dk + 1), guard_seed = src_seed + 1000;
    fill(scratch, BUF, src_seed, 0);
    move(sk, src, scratch, BUF);
    int round = 0;
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
        for (size_t o = 0; o < sizeof offsets / sizeof *offsets; o++, round++) {
            size_t n = sizes[z], soff = offsets[o][0], doff = offsets[o][1];
            size_t window = doff + n + 32 < BUF ? doff + n + 32 : BUF;
            fill(scratch, window, guard_seed, 0);
            move(dk, dst, scratch, window);
            int rc;
            if (round % 2) {
                rc = gpumem_copy_async(dst + doff, src + soff, n, s1);
                EXPECT_EQ(gpumem__be->stream_sync(s1), 0);
            } else {
                rc = gpumem_copy(dst + doff, src + soff, n);
            }
            EXPECT_EQ(rc, GPUMEM_OK);
            EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
            memset(scratch, 0, window);
            move(dk, scratch, dst, window);
            size_t bad = mismatches(scratch, window, doff, n, src_seed, soff, guard_seed);
            if (bad)
                fprintf(stderr, "  %s -> %s, %zu bytes, offsets %zu -> %zu, %s: %zu bytes wrong\n",
                        kind_names[sk], kind_names[dk], n, soff, doff,
                        round % 2 ? "async" : "sync", bad);
            EXPECT_EQ(bad, 0);
        }
    }
    drop(sk, src);
    drop(dk, dst);
}

static void test_every_pair(void)
{
    unsigned char *scratch = malloc(BUF);
    ASSERT_NOT_NULL(scratch);
    gpumem__copy_counts before, after;
    gpumem__copy_counts_get(&before);
    for (int sk = 0; sk < NKINDS; sk++)
        for (int dk = 0; dk < NKINDS; dk++)
            check_pair(sk, dk, scratch);
    free(scratch);
    gpumem__copy_counts_get(&after);
    uint64_t stage_min = gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN);
    fprintf(stderr, "  %llu copies direct, %llu staged (%llu slot fills or drains), %llu through "
            "the registration cache\n",
            (unsigned long long)(after.direct - before.direct),
            (unsigned long long)(after.staged - before.staged),
            (unsigned long long)(after.chunks - before.chunks),
            (unsigned long long)(after.registered - before.registered));
    /* Pageable <-> device pairs: 2 directions x 3 device kinds x 3 offsets, at each size at
     * or above the threshold, staged or (with the registration cache on) registered. */
    uint64_t want = 0;
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++)
        if (stage_min && sizes[z] >= stage_min)
            want += 2 * 3 * 3;
    EXPECT_EQ(after.staged - before.staged + after.registered - before.registered, want);
    EXPECT_EQ(after.fallbacks, before.fallbacks);
}

/* Large copies both ways, each wrapping around the ring several times, with the source
 * overwritten right after an async copy to the device returns (it may be reused then), and an
 * async copy to pageable memory checked without synchronizing (complete on return). */
static void test_ring_wraps(void)
{
    gpumem__regcache_set_enabled(0); /* the staging ring itself (test_regcache has the cache) */
    size_t n = ((size_t)200 << 20) + 3;
    unsigned char *a = malloc(n), *b = malloc(n);
    unsigned char *d = gpumem_device_alloc(n + 1, 1);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    ASSERT_NOT_NULL(d);
    gpumem__copy_counts before, after;
    gpumem__copy_counts_get(&before);
    fill(a, n, 77, 0);
    EXPECT_EQ(gpumem_copy_async(d + 1, a, n, s1), GPUMEM_OK);
    memset(a, 0xee, n); /* the copy must have taken the data already */
    EXPECT_EQ(gpumem__be->stream_sync(s1), 0);
    memset(b, 0, n);
    EXPECT_EQ(gpumem_copy_async(b, d + 1, n, s1), GPUMEM_OK); /* no sync: complete on return */
    EXPECT_EQ(mismatches(b, n, 0, n, 77, 0, 0), 0);
    fill(a, n, 78, 0);
    EXPECT_EQ(gpumem_copy(d, a, n), GPUMEM_OK);
    memset(b, 0, n);
    EXPECT_EQ(gpumem_copy(b, d, n), GPUMEM_OK);
    EXPECT_EQ(memcmp(a, b, n), 0);
    gpumem__copy_counts_get(&after);
    uint64_t stage_min = gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN);
    uint64_t slots = gpumem__opt_u64(GPUMEM__OPT_COPY_SLOTS);
    uint64_t slot_bytes = gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES);
    if (stage_min) {
        EXPECT_EQ(after.staged - before.staged, 4);
        /* Each copy takes at least n / slot_bytes slots: several laps of the ring. */
        EXPECT_GE(after.chunks - before.chunks, 4 * (n / slot_bytes));
        EXPECT_TRUE(n / slot_bytes >= 3 * slots);
        EXPECT_GE(after.slot_waits - before.slot_waits, 1);
    } else {
        EXPECT_EQ(after.staged, before.staged);
    }
    free(a);
    free(b);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    gpumem__regcache_set_enabled(1);
}

/* The threshold: one byte below it goes straight to CUDA, at it through the ring; only
 * pageable <-> device copies are staged. */
static void test_threshold(void)
{
    gpumem__regcache_set_enabled(0);
    uint64_t stage_min = gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN);
    size_t n = stage_min ? (size_t)stage_min : (size_t)4 << 20;
    unsigned char *h = malloc(n), *back = malloc(n);
    unsigned char *d = gpumem_device_alloc(n, 1), *pin = gpumem_pinned_alloc(n, 1);
    ASSERT_NOT_NULL(h);
    ASSERT_NOT_NULL(back);
    ASSERT_NOT_NULL(d);
    ASSERT_NOT_NULL(pin);
    fill(h, n, 5, 0);
    gpumem__copy_counts a, b;
    gpumem__copy_counts_get(&a);
    if (n > 1) {
        EXPECT_EQ(gpumem_copy(d, h, n - 1), GPUMEM_OK);
        gpumem__copy_counts_get(&b);
        EXPECT_EQ(b.staged, a.staged);
        EXPECT_EQ(b.direct, a.direct + 1);
        a = b;
    }
    EXPECT_EQ(gpumem_copy(d, h, n), GPUMEM_OK);
    gpumem__copy_counts_get(&b);
    EXPECT_EQ(b.staged, a.staged + (stage_min ? 1 : 0));
    EXPECT_EQ(gpumem_copy(back, d, n), GPUMEM_OK);
    EXPECT_EQ(memcmp(back, h, n), 0);
    /* Pinned memory needs no staging, whatever the size. */
    gpumem__copy_counts_get(&a);
    EXPECT_EQ(gpumem_copy(pin, d, n), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(d, pin, n), GPUMEM_OK);
    gpumem__copy_counts_get(&b);
    EXPECT_EQ(b.staged, a.staged);
    EXPECT_EQ(b.direct, a.direct + 2);
    EXPECT_EQ(memcmp(pin, h, n), 0);
    free(h);
    free(back);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(pin), GPUMEM_OK);
    gpumem__regcache_set_enabled(1);
}

/* Several threads copy at once, both directions, staged and direct sizes, each with its own
 * data: a slot or a worker's part handed to two copies at once would show as wrong bytes. */
#define THREADS 6
static atomic_int thread_bad;

static void *copier(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg;
    size_t cap = ((size_t)5 << 20) + 99;
    unsigned char *h = malloc(cap), *back = malloc(cap), *d = gpumem_device_alloc(cap, 1);
    cudaStream_t s = NULL;
    if (!on_sim && cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        atomic_fetch_add(&thread_bad, 1);
    if (on_sim)
        s = (cudaStream_t)(uintptr_t)(0x10000 + id);
    if (!h || !back || !d) {
        atomic_fetch_add(&thread_bad, 1);
    } else {
        unsigned x = id * 2654435761u + 7;
        for (int i = 0; i < 24; i++) {
            x = x * 1103515245u + 12345u;
            size_t n = (x >> 4) % 3 == 0 ? 1 + (x >> 8) % 70000 : cap - (x >> 8) % 4096;
            fill(h, n, id * 100 + (unsigned)i, 0);
            int async = i % 2;
            if ((async ? gpumem_copy_async(d, h, n, s) : gpumem_copy(d, h, n)) != GPUMEM_OK)
                atomic_fetch_add(&thread_bad, 1);
            memset(back, 0, n);
            if ((async ? gpumem_copy_async(back, d, n, s) : gpumem_copy(back, d, n)) != GPUMEM_OK ||
                memcmp(back, h, n) != 0)
                atomic_fetch_add(&thread_bad, 1);
        }
    }
    free(h);
    free(back);
    if (d && gpumem_free(d) != GPUMEM_OK)
        atomic_fetch_add(&thread_bad, 1);
    if (!on_sim && s && cudaStreamDestroy(s) != cudaSuccess)
        atomic_fetch_add(&thread_bad, 1);
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[THREADS];
    unsigned started = 0;
    while (started < THREADS &&
           pthread_create(&t[started], NULL, copier, (void *)(uintptr_t)(started + 1)) == 0)
        started++;
    EXPECT_EQ(started, THREADS);
    for (unsigned i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    EXPECT_EQ(atomic_load(&thread_bad), 0);
}

static void test_bad_arguments(void)
{
    unsigned char *d = gpumem_device_alloc(4096, 1);
    int line = __LINE__ - 1;
    unsigned char *h = malloc(8192);
    ASSERT_NOT_NULL(d);
    ASSERT_NOT_NULL(h);
    memset(h, 1, 8192);

    reset_seen();
    EXPECT_EQ(gpumem_copy(NULL, NULL, 0), GPUMEM_OK); /* nothing to copy: no error */
    EXPECT_EQ(gpumem_copy_async(d, NULL, 0, s1), GPUMEM_OK);
    EXPECT_EQ(seen.calls, 0);

    EXPECT_EQ(gpumem_copy(NULL, h, 16), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem: error: gpumem_copy of 16 B: the destination is NULL");
    EXPECT_CONTAINS(seen.message, "test_copy.c");
    EXPECT_CONTAINS(seen.message, "hint: nothing was copied; a NULL pointer here is often an "
                                  "allocation whose failure went unchecked");
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_copy_async(d, NULL, 16, s1), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_copy_async of 16 B: the source is NULL");
    EXPECT_EQ(gpumem_copy(NULL, NULL, 1), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "the destination and the source are NULL");

    /* Past the end of a device allocation: refused before anything is copied. */
    ASSERT_EQ(gpumem_copy(d, h, 4096), GPUMEM_OK);
    reset_seen();
    memset(h, 2, 8192);
    EXPECT_EQ(gpumem_copy(d, h, 4097), GPUMEM_EINVAL);
    EXPECT_EQ(seen.calls, 1);
    EXPECT_CONTAINS(seen.message, "gpumem_copy of 4.0 KiB: the destination runs past the end of "
                                  "its allocation by 1 byte:");
    EXPECT_CONTAINS(seen.message, "is 0 bytes into a 4.0 KiB device allocation, which has 4096 "
                                  "bytes from there");
    char want[128];
    snprintf(want, sizeof want, "allocated at       %s:%d (test_bad_arguments)", __FILE__, line);
    EXPECT_CONTAINS(seen.message, "test_copy.c");
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_EQ(seen.last.alloc_kind, GPUMEM_KIND_DEVICE);
    EXPECT_EQ(seen.last.alloc_bytes, 4096);
    EXPECT_EQ(seen.last.alloc_site.line, line);
    EXPECT_EQ(seen.last.requested, 4097);
    unsigned char back[4096];
    ref_copy(back, d, sizeof back);
    EXPECT_EQ(back[0], 1); /* untouched */
    EXPECT_EQ(back[4095], 1);

    /* An interior pointer: the room left is counted from it. */
    EXPECT_EQ(gpumem_copy_async(h, d + 100, 4000, s1), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "the source runs past the end of its allocation by 4 bytes");
    EXPECT_CONTAINS(seen.message, "is 100 bytes into a 4.0 KiB device allocation, which has "
                                  "3996 bytes from there");
    EXPECT_EQ(seen.last.alloc_offset, 100);
    EXPECT_EQ(h[0], 2);
    EXPECT_EQ(gpumem_copy_async(h, d + 100, 3996, s1), GPUMEM_OK);
    EXPECT_EQ(h[0], 1);

    /* At or just past the end, in no allocation: an index one too far, refused and named.
     * 1000 bytes: the padding up to 1024 can hold no other allocation, on any device. */
    unsigned char *e = gpumem_device_alloc(1000, 1);
    int eline = __LINE__ - 1;
    ASSERT_NOT_NULL(e);
    EXPECT_EQ(gpumem_copy(e + 1000, h, 16), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_copy of 16 B: the destination ");
    EXPECT_CONTAINS(seen.message, "is 0 bytes past the end of a 1000 B device allocation, in no "
                                  "allocation");
    snprintf(want, sizeof want, "allocated at       %s:%d (test_bad_arguments)", __FILE__, eline);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_EQ(seen.last.alloc_offset, 1000);
    EXPECT_EQ(gpumem_copy_async(h, e + 1004, 16, s1), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "the source ");
    EXPECT_CONTAINS(seen.message, "is 4 bytes past the end of a 1000 B device allocation");
    EXPECT_EQ(h[0], 1);
    EXPECT_EQ(gpumem_free(e), GPUMEM_OK);

    /* A pinned pool block: bounded by the bytes asked for, not by its size class. */
    unsigned char *blk = gpumem_pool_alloc(pin_pool, 1000, 1, NULL);
    ASSERT_NOT_NULL(blk);
    EXPECT_EQ(gpumem_copy(blk, h, 1001), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "a 1000 B pinned allocation");
    EXPECT_EQ(gpumem_free(blk), GPUMEM_OK);

    /* Overlapping ranges. */
    EXPECT_EQ(gpumem_copy(h + 10, h, 100), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "overlap (10 bytes apart)");
    EXPECT_CONTAINS(seen.message, "hint: nothing was copied; copy through a separate buffer");
    EXPECT_EQ(gpumem_copy(h + 100, h, 100), GPUMEM_OK);

    free(h);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
}

/* CUDA refusing a copy, through the simulated device's fault injection: a direct copy, a
 * staged copy in each direction failing part-way, and a sticky error. Afterwards everything
 * works again: the ring is not left with a slot that can never be used. */
static void test_cuda_failures(void)
{
    if (!on_sim) {
        fprintf(stderr, "  not run: fault injection needs the simulated device (test_copy sim)\n");
        return;
    }
    gpumem__regcache_set_enabled(0); /* the ring's and the direct path's failures */
    size_t n = ((size_t)5 << 20) + 1;
    unsigned char *h = malloc(n), *back = malloc(n);
    unsigned char *d = gpumem_device_alloc(n, 1), *pin = gpumem_pinned_alloc(4096, 1);
    ASSERT_NOT_NULL(h);
    ASSERT_NOT_NULL(back);
    ASSERT_NOT_NULL(d);
    ASSERT_NOT_NULL(pin);
    fill(h, n, 9, 0);
    int staged = gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN) != 0 &&
                 n >= gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN);

    reset_seen();
    gpumem__sim_fail_copy(0, cudaErrorInvalidValue);
    EXPECT_EQ(gpumem_copy(d, pin, 4096), GPUMEM_ECUDA);
    EXPECT_CONTAINS(seen.message, "gpumem_copy of 4.0 KiB from pinned host memory at");
    EXPECT_CONTAINS(seen.message, "to device memory at");
    EXPECT_CONTAINS(seen.message, ": cuMemcpyAsync failed with cudaErrorInvalidValue: invalid "
                                  "argument");
    EXPECT_CONTAINS(seen.message, "the destination may hold part of the data");
    EXPECT_EQ(seen.last.cuda_error, cudaErrorInvalidValue);
    EXPECT_EQ(gpumem_copy(d, pin, 4096), GPUMEM_OK); /* once only */

    for (int dir = 0; dir < 2; dir++) {
        reset_seen();
        gpumem__sim_fail_copy(staged ? 2 : 0, cudaErrorInvalidValue); /* the third slot */
        int rc = dir == 0 ? gpumem_copy_async(d, h, n, s1) : gpumem_copy(back, d, n);
        EXPECT_EQ(rc, GPUMEM_ECUDA);
        EXPECT_CONTAINS(seen.message, staged ? "cuMemcpyAsync (through the pinned staging ring) "
                                               "failed with cudaErrorInvalidValue"
                                             : "cuMemcpyAsync failed with cudaErrorInvalidValue");
        gpumem__sim_fail_copy(0, 0);
    }
    /* Both rings still work. */
    memset(back, 0, n);
    EXPECT_EQ(gpumem_copy(d, h, n), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(back, d, n), GPUMEM_OK);
    EXPECT_EQ(memcmp(back, h, n), 0);

    /* A sticky error: every later CUDA call fails too. */
    gpumem__sim_poison(cudaErrorMisalignedAddress);
    reset_seen();
    EXPECT_EQ(gpumem_copy(d, pin, 16), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "cudaErrorMisalignedAddress");
    EXPECT_CONTAINS(seen.message, "this error is sticky");
    /* A pageable pointer: CUDA cannot even say what it is. */
    EXPECT_EQ(gpumem_copy(d, h, 16), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "cuPointerGetAttribute (what the source is) failed with "
                                  "cudaErrorMisalignedAddress");
    gpumem__sim_poison(0);
    EXPECT_EQ(gpumem_copy(d, h, 16), GPUMEM_OK);

    free(h);
    free(back);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(pin), GPUMEM_OK);
    gpumem__regcache_set_enabled(1);
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    on_sim = strcmp(gpumem_backend(), "sim") == 0;
    if (on_sim)
        s1 = (cudaStream_t)(uintptr_t)0x1000; /* a handle only: the simulation runs nothing */
    else if (cudaStreamCreate(&s1) != cudaSuccess) {
        fprintf(stderr, "FAIL: cudaStreamCreate\n");
        return 1;
    }
    dev_pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    pin_pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    if (!dev_pool || !pin_pool) {
        fprintf(stderr, "FAIL: gpumem_pool_create: %s\n", gpumem_last_error()->message);
        return 1;
    }
    fprintf(stderr, "staging: COPY_STAGE_MIN=%llu, %llu slots of %llu bytes, COPY_THREADS=%llu\n",
            (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN),
            (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOTS),
            (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES),
            (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_THREADS));
    reset_seen();
    RUN(test_every_pair);
    RUN(test_ring_wraps);
    RUN(test_threshold);
    RUN(test_threads);
    RUN(test_bad_arguments);
    RUN(test_cuda_failures);
    EXPECT_EQ(gpumem_pool_destroy(dev_pool), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pin_pool), GPUMEM_OK);
    EXPECT_EQ(live_total(), 0);
    if (!on_sim)
        EXPECT_EQ(cudaStreamDestroy(s1), cudaSuccess);
    return harness_exit();
}

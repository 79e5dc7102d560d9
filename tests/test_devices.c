/* Several devices: the current device per thread, allocations, pools, statistics, checkpoints,
 * leak and out-of-memory reports per device, and copies between devices.
 *
 * Written for any number of devices: it reads the count and runs what that many allow. On the
 * simulated device it runs with GPUMEM_SIM_DEVICES=1, 2 and 4 (and with peer access off); on
 * a GPU ("cuda") the same checks run on the devices there are. Usage:
 *   test_devices [sim|cuda] [all|multi]
 * "multi" runs only the checks that need two devices or more, and exits 77 (skipped) when there
 * are fewer: on a machine with one GPU that is the part that did not run. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_arg.h"
#include "capture.h"
#include "harness.h"
#include "internal.h"
#include "peer.h"

static int ndev;
static int sim;
static int multi_only;
static int parts_skipped;

/* A check that needs `need` devices: skipped (and said so) with fewer. */
static int have(int need, const char *what)
{
    if (ndev >= need)
        return 1;
    fprintf(stderr, "skip: %s needs %d devices, %d here\n", what, need, ndev);
    parts_skipped++;
    return 0;
}

/* What gpumem_stats_print and gpumem_report write, as text (free() it). */
static char *capture_stats(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    gpumem_stats_print(out);
    fclose(out);
    return text;
}

static char *capture_report(unsigned flags)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    gpumem_report(out, flags);
    fclose(out);
    return text;
}

static size_t free_on(int dev)
{
    gpumem_device_info d;
    return gpumem_device_get(dev, &d) == GPUMEM_OK ? d.free_bytes : 0;
}

static int current(void)
{
    int d = -99;
    EXPECT_EQ(gpumem_device_current(&d), GPUMEM_OK);
    return d;
}

/* ---- the current device ---- */

static void test_current_device(void)
{
    ASSERT_EQ(current(), 0);
    for (int d = ndev - 1; d >= 0; d--) {
        EXPECT_EQ(gpumem_device_set(d), GPUMEM_OK);
        EXPECT_EQ(current(), d);
    }
    /* A device that does not exist: refused, the current device unchanged. */
    EXPECT_EQ(gpumem_device_set(ndev), GPUMEM_EINVAL);
    EXPECT_CONTAINS(gpumem_last_error()->message, "does not exist");
    EXPECT_EQ(gpumem_device_set(-1), GPUMEM_EINVAL);
    EXPECT_EQ(current(), 0);
    EXPECT_EQ(gpumem_device_current(NULL), GPUMEM_EINVAL);
    int can = -1;
    EXPECT_EQ(gpumem_device_can_access_peer(0, 0, &can), GPUMEM_OK);
    EXPECT_EQ(can, 0);
    EXPECT_EQ(gpumem_device_can_access_peer(0, ndev, &can), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_device_can_access_peer(0, 0, NULL), GPUMEM_EINVAL);
}

static void *set_last_device(void *arg)
{
    /* No EXPECT here: the harness's counters belong to the main thread. */
    int *got = arg;
    if (gpumem_device_current(&got[0]) != GPUMEM_OK) /* a new thread starts on device 0 */
        got[0] = -2;
    if (gpumem_device_set(ndev - 1) != GPUMEM_OK || gpumem_device_current(&got[1]) != GPUMEM_OK)
        got[1] = -2;
    return NULL;
}

static void test_current_device_per_thread(void)
{
    if (!have(2, "a current device per thread"))
        return;
    int got[2] = {-1, -1};
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, set_last_device, got), 0);
    pthread_join(t, NULL);
    EXPECT_EQ(got[0], 0);
    EXPECT_EQ(got[1], ndev - 1);
    EXPECT_EQ(current(), 0); /* the other thread's choice is its own */
}

/* ---- allocations, statistics and reports per device ---- */

static void test_alloc_per_device(void)
{
    const size_t mib = (size_t)1 << 20;
    gpumem_stats_t before, after;
    ASSERT_EQ(gpumem_stats(&before), GPUMEM_OK);
    void *p[64] = {0};
    int n = ndev < 64 ? ndev : 64;
    for (int d = 0; d < n; d++) {
        ASSERT_EQ(gpumem_device_set(d), GPUMEM_OK);
        size_t free_before = free_on(d);
        p[d] = gpumem_device_alloc((size_t)(d + 1), mib);
        ASSERT_NOT_NULL(p[d]);
        gpumem_info info;
        EXPECT_EQ(gpumem_query(p[d], &info), GPUMEM_OK);
        EXPECT_EQ(info.device, d);
        if (sim) /* exact on the simulated device; CUDA reserves in 2 MiB steps */
            EXPECT_EQ(free_before - free_on(d), (d + 1) * mib);
        for (int o = 0; sim && o < n; o++)
            if (o != d && p[o])
                EXPECT_TRUE(p[o] != p[d]);
    }
    /* Every device's own memory: no two ranges overlap. */
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b) {
                uintptr_t x = (uintptr_t)p[a], y = (uintptr_t)p[b];
                EXPECT_TRUE(x + (size_t)(a + 1) * mib <= y || y + (size_t)(b + 1) * mib <= x);
            }
    ASSERT_EQ(gpumem_stats(&after), GPUMEM_OK);
    for (int d = 0; d < n && d < GPUMEM_STATS_DEVICES - 1; d++) {
        EXPECT_EQ(after.device_bytes[d].current - before.device_bytes[d].current, (d + 1) * mib);
        EXPECT_EQ(after.device_count[d].current - before.device_count[d].current, 1);
    }
    /* Devices from GPUMEM_STATS_DEVICES - 1 up share the last entry. */
    if (n >= GPUMEM_STATS_DEVICES) {
        uint64_t shared = 0, count = 0;
        for (int d = GPUMEM_STATS_DEVICES - 1; d < n; d++)
            shared += (uint64_t)(d + 1) * mib, count++;
        int last = GPUMEM_STATS_DEVICES - 1;
        EXPECT_EQ(after.device_bytes[last].current - before.device_bytes[last].current, shared);
        EXPECT_EQ(after.device_count[last].current - before.device_count[last].current, count);
    }
    /* The statistics table has a row per device used. */
    char *text = capture_stats();
    for (int d = 0; d < n && d < GPUMEM_STATS_DEVICES - 1; d++) {
        char row[32];
        snprintf(row, sizeof row, "device %d ", d);
        EXPECT_CONTAINS(text, row);
    }
    if (n >= GPUMEM_STATS_DEVICES)
        EXPECT_CONTAINS(text, "device 63+");
    /* 17 devices (an 8-GPU node with two MIG instances each, and one more): each its own. */
    if (n == 17) {
        EXPECT_CONTAINS(text, "device 16 ");
        if (strstr(text, "device 15+"))
            EXPECT_STR_EQ(text, "(a row of its own for each of the 17 devices)");
    }
    free(text);
    /* The leak report groups by device: with several devices each line names its own. */
    char *report = capture_report(GPUMEM_REPORT_FULL);
    if (n > 1) {
        for (int d = 0; d < n; d++) {
            char line[64];
            snprintf(line, sizeof line, "1 device allocation on device %d at", d);
            EXPECT_CONTAINS(report, line);
        }
    } else {
        EXPECT_TRUE(report && !strstr(report, "on device"));
    }
    free(report);
    char *json = capture_report(GPUMEM_REPORT_FULL | GPUMEM_REPORT_JSON);
    char key[32];
    snprintf(key, sizeof key, "\"device\": %d", n - 1);
    EXPECT_CONTAINS(json, key);
    free(json);
    /* Released from device 0, whichever device made it. */
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    for (int d = 0; d < n; d++) {
        size_t free_before = free_on(d);
        EXPECT_EQ(gpumem_free(p[d]), GPUMEM_OK);
        if (sim)
            EXPECT_EQ(free_on(d) - free_before, (d + 1) * mib);
    }
    EXPECT_EQ(current(), 0);
}

static void test_checkpoint_per_device(void)
{
    const size_t mib = (size_t)1 << 20;
    int last = ndev - 1;
    gpumem_checkpoint_t cp[2] = {gpumem_checkpoint_device(0), gpumem_checkpoint_device(last)};
    EXPECT_EQ(cp[0].device, 0);
    EXPECT_EQ(cp[1].device, last);
    gpumem_checkpoint_t none = gpumem_checkpoint_device(ndev);
    EXPECT_EQ(none.device, -1);
    /* 4 MiB from gpumem and 64 MiB raw (CUDA's own, unattributed) on the last device, made
     * while device 0 stays current on this thread for the gpumem part. */
    ASSERT_EQ(gpumem_device_set(last), GPUMEM_OK);
    void *mine = gpumem_device_alloc(4, mib);
    void *raw = NULL;
    EXPECT_EQ(gpumem__be->malloc_device(&raw, 64 * mib), 0);
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    ASSERT_NOT_NULL(mine);
    ASSERT_NOT_NULL(raw);
    gpumem_checkpoint_diff_t d0, dl;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    EXPECT_EQ(gpumem_checkpoint_diff(&cp[1], out, &dl), GPUMEM_OK);
    fclose(out);
    EXPECT_EQ(gpumem_checkpoint_diff(&cp[0], NULL, &d0), GPUMEM_OK);
    EXPECT_EQ(dl.device_known, 1);
    EXPECT_EQ(dl.gpumem_device, 4 * (int64_t)mib);
    if (sim) {
        EXPECT_EQ(dl.device_used, 68 * (int64_t)mib);
        EXPECT_EQ(dl.unattributed, 64 * (int64_t)mib);
    } else {
        EXPECT_GE(dl.unattributed, 62 * (int64_t)mib);
        EXPECT_LE(dl.unattributed, 72 * (int64_t)mib);
    }
    char want[64];
    snprintf(want, sizeof want, "device %d: used memory +", last);
    EXPECT_CONTAINS(text, want);
    EXPECT_CONTAINS(text, "4.0 MiB in 1 device allocation at"); /* one device: no device named */
    free(text);
    /* Allocations since the checkpoint on two devices: each line names its device. */
    if (last > 0) {
        void *zero = gpumem_device_alloc(1, mib); /* device 0 is current */
        ASSERT_NOT_NULL(zero);
        text = NULL;
        out = open_memstream(&text, &len);
        EXPECT_EQ(gpumem_checkpoint_diff(&cp[0], out, NULL), GPUMEM_OK);
        fclose(out);
        snprintf(want, sizeof want, "4.0 MiB in 1 device allocation on device %d at", last);
        EXPECT_CONTAINS(text, want);
        EXPECT_CONTAINS(text, "1.0 MiB in 1 device allocation on device 0 at");
        free(text);
        EXPECT_EQ(gpumem_free(zero), GPUMEM_OK);
    }
    if (last != 0) { /* device 0 saw none of it */
        EXPECT_EQ(d0.gpumem_device, 0);
        if (sim)
            EXPECT_EQ(d0.device_used, 0);
    }
    EXPECT_EQ(gpumem_free(mine), GPUMEM_OK);
    ASSERT_EQ(gpumem_device_set(last), GPUMEM_OK);
    EXPECT_EQ(gpumem__be->free(raw), 0);
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
}

static void test_oom_per_device(void)
{
    if (!sim) /* a GPU's whole memory is too much to fill in a test */
        return;
    const size_t mib = (size_t)1 << 20;
    int last = ndev - 1;
    void *held = gpumem_device_alloc(3, mib); /* on device 0 */
    ASSERT_NOT_NULL(held);
    ASSERT_EQ(gpumem_device_set(last), GPUMEM_OK);
    void *other = gpumem_device_alloc(5, mib);
    ASSERT_NOT_NULL(other);
    size_t cap = free_on(last) + 5 * mib;
    void *big = gpumem_device_alloc(cap, 1);
    EXPECT_NULL(big);
    const gpumem_error *e = gpumem_last_error();
    EXPECT_EQ(e->code, GPUMEM_ENOMEM);
    char want[128];
    snprintf(want, sizeof want, "device %d: ", last);
    EXPECT_CONTAINS(e->message, want);
    if (last > 0) {
        /* Devices from GPUMEM_STATS_DEVICES - 1 up are counted together, as "63+". */
        int slot = last < GPUMEM_STATS_DEVICES - 1 ? last : GPUMEM_STATS_DEVICES - 1;
        snprintf(want, sizeof want, "gpumem's device memory by device: device 0 3.0 MiB, device %d%s "
                 "5.0 MiB", slot, slot == GPUMEM_STATS_DEVICES - 1 ? "+" : "");
        EXPECT_CONTAINS(e->message, want);
    }
    /* A pool of the last device, used from device 0: its out-of-memory names its device. */
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, last, NULL);
    ASSERT_NOT_NULL(pool);
    void *pb = gpumem_pool_alloc(pool, cap, 1, NULL);
    EXPECT_NULL(pb);
    snprintf(want, sizeof want, "device %d: ", last);
    EXPECT_CONTAINS(gpumem_last_error()->message, want);
    EXPECT_EQ(current(), 0);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(held), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(other), GPUMEM_OK);
}

/* ---- pools per device ---- */

static void test_pool_per_device(void)
{
    const size_t mib = (size_t)1 << 20;
    for (int d = 0; d < ndev && d < 8; d++) {
        int caller = (d + 1) % ndev; /* another device when there is one */
        ASSERT_EQ(gpumem_device_set(caller), GPUMEM_OK);
        gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, d, NULL);
        ASSERT_NOT_NULL(pool);
        EXPECT_EQ(current(), caller);
        size_t free_d = free_on(d), free_caller = free_on(caller);
        void *a = gpumem_pool_alloc(pool, 2, mib, NULL);
        ASSERT_NOT_NULL(a);
        EXPECT_EQ(current(), caller); /* restored */
        gpumem_info info;
        EXPECT_EQ(gpumem_query(a, &info), GPUMEM_OK);
        EXPECT_EQ(info.device, d);
        if (sim) {
            int owner = -1;
            EXPECT_EQ(gpumem__be->pointer_device(a, &owner), 0);
            EXPECT_EQ(owner, d);
            EXPECT_GE(free_d - free_on(d), 2 * mib);
            if (caller != d)
                EXPECT_EQ(free_on(caller), free_caller);
        }
        EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
        EXPECT_EQ(current(), caller);
        /* A cached block comes back for the next request; trimming gives it to its device. */
        void *b = gpumem_pool_alloc(pool, 2, mib, NULL);
        EXPECT_PTR_EQ(b, a);
        EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
        EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
        EXPECT_EQ(current(), caller);
        if (sim)
            EXPECT_EQ(free_on(d), free_d);
        EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
        EXPECT_EQ(current(), caller);
    }
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    /* A pool of a device that does not exist. */
    EXPECT_NULL(gpumem_pool_create(GPUMEM_KIND_DEVICE, ndev, NULL));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ECUDA);
    EXPECT_CONTAINS(gpumem_last_error()->message, "gpumem_pool_create of a device pool (device");
    EXPECT_CONTAINS(gpumem_last_error()->message, "cudaErrorInvalidDevice");
    EXPECT_EQ(current(), 0);
    /* A pinned pool is the current device's, like any pinned memory. */
    ASSERT_EQ(gpumem_device_set(ndev - 1), GPUMEM_OK);
    gpumem_pool *pinned = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pinned);
    void *h = gpumem_pool_alloc(pinned, 1, 4096, NULL);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(h, &info), GPUMEM_OK);
    EXPECT_EQ(info.device, ndev - 1);
    EXPECT_EQ(gpumem_free(h), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pinned), GPUMEM_OK);
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
}

/* ---- copies between devices ---- */

static void fill(unsigned char *h, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 131u + seed);
}

static int same(const unsigned char *a, const unsigned char *b, size_t n)
{
    return memcmp(a, b, n) == 0;
}

/* dst on device `to`, src on device `from`: a copy of n bytes at odd offsets, sync and async,
 * and the path it took (peer or staged) counted. */
static void copy_between(int from, int to, size_t n)
{
    int can = 0;
    EXPECT_EQ(gpumem_device_can_access_peer(to, from, &can), GPUMEM_OK);
    unsigned char *host = malloc(n), *back = malloc(n);
    ASSERT_NOT_NULL(host);
    ASSERT_NOT_NULL(back);
    fill(host, n, (unsigned)(from * 7 + to));
    ASSERT_EQ(gpumem_device_set(from), GPUMEM_OK);
    unsigned char *src = gpumem_device_alloc(n + 512, 1);
    ASSERT_EQ(gpumem_device_set(to), GPUMEM_OK);
    unsigned char *dst = gpumem_device_alloc(n + 512, 1);
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    ASSERT_NOT_NULL(src);
    ASSERT_NOT_NULL(dst);
    EXPECT_EQ(gpumem_copy(src + 3, host, n), GPUMEM_OK);
    gpumem__copy_counts c0, c1;
    gpumem__copy_counts_get(&c0);
    unsigned long long peer0 = sim ? gpumem__sim_peer_copies() : 0;
    EXPECT_EQ(gpumem_copy(dst + 5, src + 3, n), GPUMEM_OK);
    EXPECT_EQ(current(), 0);
    gpumem__copy_counts_get(&c1);
    memset(back, 0, n);
    EXPECT_EQ(gpumem_copy(back, dst + 5, n), GPUMEM_OK);
    EXPECT_TRUE(same(back, host, n));
    if (from != to) {
        EXPECT_EQ(c1.peer - c0.peer, can ? 1 : 0);
        EXPECT_EQ(c1.peer_staged - c0.peer_staged, can ? 0 : 1);
        if (sim)
            EXPECT_EQ(gpumem__sim_peer_copies() - peer0, can ? 1ull : 0ull);
    }
    /* Async, back the other way, on the destination device's default stream. */
    fill(host, n, 99u);
    EXPECT_EQ(gpumem_copy(dst + 5, host, n), GPUMEM_OK);
    ASSERT_EQ(gpumem_device_set(to), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy_async(src + 3, dst + 5, n, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(back, src + 3, n), GPUMEM_OK); /* same stream: after the copy */
    EXPECT_TRUE(same(back, host, n));
    EXPECT_EQ(current(), to);
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(src), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(dst), GPUMEM_OK);
    free(host);
    free(back);
}

static void test_copy_between_devices(void)
{
    if (!have(2, "copies between two devices"))
        return;
    size_t sizes[] = {1, 4093, (size_t)3 << 20};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        for (int a = 0; a < ndev && a < 4; a++)
            for (int b = 0; b < ndev && b < 4; b++)
                if (a != b)
                    copy_between(a, b, sizes[k]);
    /* Larger than one staging buffer (when staged): several laps. */
    copy_between(ndev - 1, 0, (size_t)40 << 20);
}

/* Pinned memory made while one device was current, copied to and from another device's
 * memory, from either device: portable and mapped memory, and plain pinned memory. */
static void test_pinned_from_another_device(void)
{
    if (!have(2, "pinned memory used from another device"))
        return;
    const size_t n = (size_t)2 << 20;
    unsigned flags[] = {GPUMEM_HOST_PORTABLE, GPUMEM_HOST_PORTABLE | GPUMEM_HOST_MAPPED, 0};
    for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) {
        ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
        unsigned char *h = flags[f] ? gpumem_host_alloc(n, 1, flags[f]) : gpumem_pinned_alloc(n, 1);
        unsigned char *back = gpumem_pinned_alloc(n, 1);
        ASSERT_NOT_NULL(h);
        ASSERT_NOT_NULL(back);
        gpumem_info info;
        EXPECT_EQ(gpumem_query(h, &info), GPUMEM_OK);
        EXPECT_EQ(info.device, 0);
        fill(h, n, (unsigned)f);
        int other = ndev - 1;
        ASSERT_EQ(gpumem_device_set(other), GPUMEM_OK);
        unsigned char *d = gpumem_device_alloc(n, 1);
        ASSERT_NOT_NULL(d);
        for (int from = 0; from < 2; from++) {
            ASSERT_EQ(gpumem_device_set(from ? other : 0), GPUMEM_OK);
            EXPECT_EQ(gpumem_copy(d, h, n), GPUMEM_OK);
            memset(back, 0, n);
            EXPECT_EQ(gpumem_copy_async(back, d, n, NULL), GPUMEM_OK);
            EXPECT_EQ(gpumem__be->stream_sync(NULL), 0);
            EXPECT_TRUE(same(back, h, n));
        }
        if (flags[f] & GPUMEM_HOST_MAPPED) {
            /* Its device address, asked for from the other device. */
            EXPECT_NE(gpumem_device_ptr(h), NULL);
        }
        ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
        EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
        EXPECT_EQ(gpumem_free(h), GPUMEM_OK);
        EXPECT_EQ(gpumem_free(back), GPUMEM_OK);
    }
}

/* A copy between devices that CUDA refuses: the failure names both ends and their devices'
 * allocations, and the caller's current device is restored. */
static void test_copy_between_devices_fails(void)
{
    if (!sim || !have(2, "a failed copy between two devices"))
        return;
    const size_t n = 4096;
    unsigned char *a = gpumem_device_alloc(n, 1);
    ASSERT_EQ(gpumem_device_set(1), GPUMEM_OK);
    unsigned char *b = gpumem_device_alloc(n, 1);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    gpumem__sim_fail_copy(0, cudaErrorInvalidValue);
    EXPECT_EQ(gpumem_copy(a, b, n), GPUMEM_ECUDA);
    const char *m = gpumem_last_error()->message;
    EXPECT_CONTAINS(m, "gpumem_copy of 4.0 KiB from device memory at");
    int can = 0;
    EXPECT_EQ(gpumem_device_can_access_peer(0, 1, &can), GPUMEM_OK);
    EXPECT_CONTAINS(m, can ? "cuMemcpyPeerAsync failed with cudaErrorInvalidValue"
                           : "cuMemcpyAsync (device to the staging buffer) (through the pinned "
                             "staging ring) failed with cudaErrorInvalidValue");
    EXPECT_EQ(current(), 1);
    gpumem__sim_fail_copy(0, 0);
    if (!can) { /* the second half of a staged piece fails */
        gpumem__sim_fail_copy(1, cudaErrorInvalidValue);
        EXPECT_EQ(gpumem_copy(a, b, n), GPUMEM_ECUDA);
        EXPECT_CONTAINS(gpumem_last_error()->message,
                        "cuMemcpyAsync (the staging buffer to device) (through the pinned "
                        "staging ring) failed with cudaErrorInvalidValue");
        gpumem__sim_fail_copy(0, 0);
    }
    /* A dead context: the peer question itself fails, nothing is copied. */
    gpumem__sim_poison(cudaErrorIllegalAddress);
    EXPECT_EQ(gpumem_copy(a, b, n), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(gpumem_last_error()->message, "cuDeviceCanAccessPeer failed with "
                                                  "cudaErrorIllegalAddress");
    gpumem__sim_poison(0);
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
}

/* The backend's peer calls that gpumem bench times (peer.h): peer access enabled and disabled
 * per ordered pair with CUDA's answers to doing either twice, and a raw peer copy that works
 * with peer access on and off where the devices can reach each other. */
static void peer_access_pair(int a, int b, unsigned char *da, unsigned char *db,
                             const unsigned char *host, unsigned char *back, size_t n)
{
    int can = 0;
    ASSERT_EQ(gpumem_device_can_access_peer(a, b, &can), GPUMEM_OK);
    (void)gpumem__peer_access(a, b, 0); /* as the process started: off */
    if (!can) {
        EXPECT_EQ(gpumem__peer_access(a, b, 1), cudaErrorPeerAccessUnsupported);
        if (sim) /* the simulated device refuses what CUDA would stage through the host */
            EXPECT_EQ(gpumem__peer_copy(da, a, db, b, n), cudaErrorPeerAccessUnsupported);
        return;
    }
    unsigned long long before = sim ? gpumem__sim_peer_copies_enabled() : 0;
    EXPECT_EQ(gpumem__peer_copy(da, a, db, b, n), 0); /* peer access off */
    EXPECT_EQ(gpumem__peer_access(a, b, 1), 0);
    EXPECT_EQ(gpumem__peer_access(a, b, 1), cudaErrorPeerAccessAlreadyEnabled);
    memset(back, 0, n);
    ASSERT_EQ(gpumem_copy(da, back, n), GPUMEM_OK);
    EXPECT_EQ(gpumem__peer_copy(da, a, db, b, n), 0); /* peer access on */
    ASSERT_EQ(gpumem_copy(back, da, n), GPUMEM_OK);
    EXPECT_TRUE(same(back, host, n));
    if (sim)
        EXPECT_EQ(gpumem__sim_peer_copies_enabled(), before + 1);
    EXPECT_EQ(gpumem__peer_access(a, b, 0), 0);
    EXPECT_EQ(gpumem__peer_access(a, b, 0), cudaErrorPeerAccessNotEnabled);
}

static void test_peer_access(void)
{
    if (!have(2, "peer access between two devices"))
        return;
    const size_t n = (size_t)1 << 20;
    unsigned char *host = malloc(n), *back = malloc(n), *d[2];
    ASSERT_NOT_NULL(host);
    ASSERT_NOT_NULL(back);
    fill(host, n, 7);
    for (int i = 0; i < 2; i++) {
        ASSERT_EQ(gpumem_device_set(i ? ndev - 1 : 0), GPUMEM_OK);
        d[i] = gpumem_device_alloc(n, 1);
        ASSERT_NOT_NULL(d[i]);
    }
    ASSERT_EQ(gpumem_copy(d[1], host, n), GPUMEM_OK);
    peer_access_pair(0, ndev - 1, d[0], d[1], host, back, n);
    ASSERT_EQ(gpumem_copy(d[0], host, n), GPUMEM_OK);
    peer_access_pair(ndev - 1, 0, d[1], d[0], host, back, n);
    if (sim) {
        EXPECT_EQ(gpumem__peer_access(0, 0, 1), cudaErrorInvalidDevice);
        EXPECT_EQ(gpumem__peer_access(0, ndev, 1), cudaErrorInvalidDevice);
    }
    ASSERT_EQ(gpumem_device_set(0), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d[0]), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d[1]), GPUMEM_OK);
    free(host);
    free(back);
}

/* The device calls when CUDA refuses them (a dead context): the status and CUDA's reason, and
 * the current device unchanged. */
static void test_device_calls_fail(void)
{
    if (!sim)
        return;
    int dev = -1, can = -1;
    gpumem__sim_poison(cudaErrorIllegalAddress);
    EXPECT_EQ(gpumem_device_set(0), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(gpumem_last_error()->message,
                    "gpumem_device_set(0): CUDA failed with cudaErrorIllegalAddress");
    EXPECT_EQ(gpumem_device_current(&dev), GPUMEM_ESTICKY);
    EXPECT_EQ(dev, -1); /* written only on success */
    EXPECT_EQ(gpumem_device_can_access_peer(0, 0, &can), GPUMEM_ESTICKY);
    EXPECT_EQ(can, -1);
    /* A pool's device cannot be made current: nothing is allocated, nothing changes. */
    gpumem__sim_poison(0);
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, ndev - 1, NULL);
    ASSERT_NOT_NULL(pool);
    gpumem__sim_poison(cudaErrorIllegalAddress);
    EXPECT_NULL(gpumem_pool_alloc(pool, 1, 4096, NULL));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ESTICKY);
    gpumem__sim_poison(0);
    EXPECT_EQ(current(), 0);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

int main(int argc, char **argv)
{
    if (!test_select_backend(argc, argv))
        return 2;
    multi_only = argc > 2 && strcmp(argv[2], "multi") == 0;
    gpumem_set_error_handler(capture, NULL);
    if (!test_device_ready())
        return harness_exit();
    sim = strcmp(gpumem_backend(), "sim") == 0;
    ndev = gpumem_device_count();
    fprintf(stderr, "devices: %d\n", ndev);
    if (multi_only && ndev < 2) {
        SKIP("these checks need two devices or more");
        return harness_exit();
    }
    if (!multi_only) {
        RUN(test_current_device);
        RUN(test_alloc_per_device);
        RUN(test_checkpoint_per_device);
        RUN(test_pool_per_device);
        RUN(test_oom_per_device);
    }
    RUN(test_current_device_per_thread);
    RUN(test_copy_between_devices);
    RUN(test_pinned_from_another_device);
    RUN(test_copy_between_devices_fails);
    RUN(test_peer_access);
    if (!multi_only)
        RUN(test_device_calls_fail);
    if (parts_skipped)
        fprintf(stderr, "%d part%s skipped for want of devices\n", parts_skipped,
                parts_skipped == 1 ? "" : "s");
    return harness_exit();
}

/* Statistics: current, peak and total bytes and counts, by kind and by device.
 *
 * Counts and totals are kept by the registry's shards, under the locks insertion and release
 * take anyway, so they cost no extra synchronization, and they are exact. A peak, though, is
 * a property of the whole process at one instant, which shard sums cannot give. For bytes,
 * three counters per allocation and release (its kind, every kind, its device) track the
 * current total; shared by every thread, they would cost each pair six atomic operations on
 * lines all threads write, which is what kept 16 threads slower than one.
 *
 * So each thread keeps what it allocated and released since its last flush (pending) and the
 * largest value pending reached since then (high), and adds them to the shared counters only
 * when pending leaves [-limit, limit], when the thread ends, and when the thread itself reads
 * or resets the statistics. A flush raises the shared peak to the shared total before the
 * flush plus high: exact when no other thread moved the total meanwhile, as in a
 * single-threaded program. The limit is FLUSH_BYTES plus 1/SLACK_SHARE of the counter's
 * shared total as the thread's last flush left it: with blocks of megabytes (a training
 * loop's), a flush every operation was three shared cache lines written, a few percent of a
 * cold pool operation's lines (docs/perf/pools-2026-12-07-h100.md). The rule bounds the error:
 * every thread's unflushed bytes lie within its limit of zero, so with T threads allocating at
 * once a peak is off by at most T times (FLUSH_BYTES plus a 32nd of the total) either way
 * (missed increases of threads that have not flushed yet, releases not yet subtracted), and
 * never below the exact current total that is read with it. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define FLUSH_BYTES ((int64_t)4 << 20)
#define SLACK_SHARE 32
#define COUNTERS (GPUMEM_KIND_COUNT_ + GPUMEM_STATS_DEVICES) /* kinds, then devices */

typedef struct {
    _Alignas(64) atomic_uint_fast64_t current;
    atomic_uint_fast64_t peak;
} peak_counter;

static peak_counter counters[COUNTERS]; /* index 0: every kind */

/* One counter's figures side by side: an operation reads and writes all three of each of its
 * three counters (every kind, its kind, its device), so they share lines. */
typedef struct {
    int64_t pending;
    int64_t high;  /* the largest pending since the last flush, at least 0 */
    int64_t limit; /* |pending| past this flushes; 0 until the first flush */
} pending_counter;

typedef struct {
    pending_counter c[COUNTERS];
    int registered; /* the exit-time flush is set up */
} thread_stats;

static _Thread_local thread_stats mine;
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;

static void raise_peak(peak_counter *c, uint64_t v)
{
    uint_fast64_t peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    while (v > peak && !atomic_compare_exchange_weak_explicit(&c->peak, &peak, v,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
}

static void flush_one(thread_stats *t, int i)
{
    if (t->c[i].pending == 0 && t->c[i].high == 0)
        return;
    uint64_t before = atomic_fetch_add_explicit(&counters[i].current, (uint64_t)t->c[i].pending,
                                                memory_order_relaxed);
    raise_peak(&counters[i], before + (uint64_t)t->c[i].high);
    uint64_t after = before + (uint64_t)t->c[i].pending;
    t->c[i].limit = FLUSH_BYTES + (after <= INT64_MAX / 2 ? (int64_t)after / SLACK_SHARE : 0);
    t->c[i].pending = 0;
    t->c[i].high = 0;
}

static void flush_all(thread_stats *t)
{
    for (int i = 0; i < COUNTERS; i++)
        flush_one(t, i);
}

/* A thread's destructor: what it allocated and released since its last flush. */
static void flush_at_exit(void *arg)
{
    (void)arg;
    flush_all(&mine);
    mine.registered = 0; /* an allocation in a later destructor registers (and flushes) again */
}

static void make_key(void)
{
    pthread_key_create(&exit_key, flush_at_exit);
}

static void register_thread(void)
{
    pthread_once(&exit_once, make_key);
    pthread_setspecific(exit_key, &mine); /* non-NULL, so that the destructor runs */
    mine.registered = 1;
}

static inline void add(thread_stats *t, int i, uint64_t bytes)
{
    int64_t p = t->c[i].pending += (int64_t)bytes;
    if (p > t->c[i].high)
        t->c[i].high = p;
    if (GPUMEM__UNLIKELY(p > t->c[i].limit))
        flush_one(t, i);
}

static inline void sub(thread_stats *t, int i, uint64_t bytes)
{
    int64_t p = t->c[i].pending -= (int64_t)bytes;
    if (GPUMEM__UNLIKELY(p < -t->c[i].limit))
        flush_one(t, i);
}

void gpumem__stats_alloc(int kind, int device, uint64_t bytes)
{
    thread_stats *t = &mine;
    if (GPUMEM__UNLIKELY(!t->registered))
        register_thread();
    add(t, 0, bytes);
    add(t, kind, bytes);
    add(t, GPUMEM_KIND_COUNT_ + gpumem__dev_slot(device), bytes);
}

void gpumem__stats_release(int kind, int device, uint64_t bytes)
{
    thread_stats *t = &mine;
    if (GPUMEM__UNLIKELY(!t->registered))
        register_thread();
    sub(t, 0, bytes);
    sub(t, kind, bytes);
    sub(t, GPUMEM_KIND_COUNT_ + gpumem__dev_slot(device), bytes);
}

static gpumem_counter_t bytes_counter(peak_counter *c, uint64_t current, uint64_t total)
{
    gpumem_counter_t r = {current, atomic_load_explicit(&c->peak, memory_order_relaxed), total};
    if (r.peak < r.current) /* other threads' unflushed allocations, or a read mid-allocation */
        r.peak = r.current;
    return r;
}

int gpumem_stats(gpumem_stats_t *out)
{
    if (!out)
        return GPUMEM_EINVAL;
    flush_all(&mine); /* the caller's own allocations are then exact in the peak */
    gpumem__counts c;
    gpumem__reg_counts(&c);
    for (int k = 0; k < GPUMEM_KIND_COUNT_; k++) {
        out->bytes[k] = bytes_counter(&counters[k], c.bytes[k], c.total_bytes[k]);
        out->count[k] = c.count[k];
    }
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
        out->device_bytes[d] = bytes_counter(&counters[GPUMEM_KIND_COUNT_ + d],
                                             c.device_bytes[d], c.device_total_bytes[d]);
        out->device_count[d] = c.device_count[d];
    }
    return GPUMEM_OK;
}

uint64_t gpumem__stats_peak_now(int kind)
{
    if (kind < 0 || kind >= GPUMEM_KIND_COUNT_)
        return 0;
    /* Atomics only: the calling thread's pending bytes, as gpumem_stats would flush them. */
    flush_one(&mine, kind);
    uint64_t peak = atomic_load_explicit(&counters[kind].peak, memory_order_relaxed);
    uint64_t now = atomic_load_explicit(&counters[kind].current, memory_order_relaxed);
    return now > peak ? now : peak;
}

uint64_t gpumem__stats_peak(int kind)
{
    return kind >= 0 && kind < GPUMEM_KIND_COUNT_
               ? (uint64_t)atomic_load_explicit(&counters[kind].peak, memory_order_relaxed)
               : 0;
}

void gpumem_stats_reset_peak(void)
{
    flush_all(&mine);
    for (int i = 0; i < COUNTERS; i++)
        atomic_store_explicit(&counters[i].peak,
                              atomic_load_explicit(&counters[i].current, memory_order_relaxed),
                              memory_order_relaxed);
}
static void print_row(FILE *out, const char *name, gpumem_counter_t b, gpumem_count_t c)
{
    char cur[32], peak[32], total[32];
    fprintf(out, "  %-14s %12s %12s %12s %10llu %10llu   %s\n", name,
            gpumem_format_bytes(b.current, cur, sizeof cur),
            gpumem_format_bytes(b.peak, peak, sizeof peak),
            gpumem_format_bytes(b.total, total, sizeof total), (unsigned long long)c.current,
            (unsigned long long)c.total, c.current ? "not all freed" : "ok");
}

int gpumem_stats_print(FILE *out)
{
    if (!out)
        return GPUMEM_EINVAL;
    gpumem_stats_t s;
    gpumem_stats(&s);
    fprintf(out, "gpumem statistics\n  %-14s %12s %12s %12s %10s %10s\n", "", "current", "peak",
            "total", "live", "allocs");
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        if (s.count[k].total)
            print_row(out, gpumem_kind_name(k), s.bytes[k], s.count[k]);
    print_row(out, "all kinds", s.bytes[0], s.count[0]);
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
        if (!s.device_count[d].total)
            continue;
        char name[32];
        snprintf(name, sizeof name, "device %d%s", d, d == GPUMEM_STATS_DEVICES - 1 ? "+" : "");
        print_row(out, name, s.device_bytes[d], s.device_count[d]);
    }
    return gpumem__err_stream(out, 0, "gpumem_stats_print");
}

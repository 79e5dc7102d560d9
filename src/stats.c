/* Statistics: current, peak and total bytes and counts, by kind and by device.
 *
 * Counts and totals are kept by the registry's shards, under the locks insertion and release
 * take anyway, so they cost no extra synchronization. A peak, though, is a property of the
 * whole process at one instant, which shard sums cannot give: for bytes only, three shared
 * counters per allocation and release (its kind, every kind, its device) track the current
 * total, and a peak is raised by compare-and-swap only when the current value passes it, which
 * is rare once a program reaches its working size. Each counter has its own cache line. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct {
    _Alignas(64) atomic_uint_fast64_t current;
    atomic_uint_fast64_t peak;
} peak_counter;

static peak_counter kind_bytes[GPUMEM_KIND_COUNT_]; /* index 0: every kind */
static peak_counter dev_bytes[GPUMEM_STATS_DEVICES];

static void add(peak_counter *c, uint64_t v)
{
    uint64_t now = atomic_fetch_add_explicit(&c->current, v, memory_order_relaxed) + v;
    uint_fast64_t peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&c->peak, &peak, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
}

void gpumem__stats_alloc(int kind, int device, uint64_t bytes)
{
    add(&kind_bytes[0], bytes);
    add(&kind_bytes[kind], bytes);
    add(&dev_bytes[gpumem__dev_slot(device)], bytes);
}

void gpumem__stats_release(int kind, int device, uint64_t bytes)
{
    atomic_fetch_sub_explicit(&kind_bytes[0].current, bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&kind_bytes[kind].current, bytes, memory_order_relaxed);
    atomic_fetch_sub_explicit(&dev_bytes[gpumem__dev_slot(device)].current, bytes,
                              memory_order_relaxed);
}

static gpumem_counter_t bytes_counter(peak_counter *c, uint64_t current, uint64_t total)
{
    gpumem_counter_t r = {current, atomic_load_explicit(&c->peak, memory_order_relaxed), total};
    if (r.peak < r.current) /* read between an allocation's registry insert and its peak */
        r.peak = r.current;
    return r;
}

int gpumem_stats(gpumem_stats_t *out)
{
    if (!out)
        return GPUMEM_EINVAL;
    gpumem__counts c;
    gpumem__reg_counts(&c);
    for (int k = 0; k < GPUMEM_KIND_COUNT_; k++) {
        out->bytes[k] = bytes_counter(&kind_bytes[k], c.bytes[k], c.total_bytes[k]);
        out->count[k] = c.count[k];
    }
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
        out->device_bytes[d] =
            bytes_counter(&dev_bytes[d], c.device_bytes[d], c.device_total_bytes[d]);
        out->device_count[d] = c.device_count[d];
    }
    return GPUMEM_OK;
}

uint64_t gpumem__stats_peak(int kind)
{
    return kind >= 0 && kind < GPUMEM_KIND_COUNT_
               ? (uint64_t)atomic_load_explicit(&kind_bytes[kind].peak, memory_order_relaxed)
               : 0;
}

void gpumem_stats_reset_peak(void)
{
    for (int k = 0; k < GPUMEM_KIND_COUNT_; k++)
        atomic_store_explicit(&kind_bytes[k].peak,
                              atomic_load_explicit(&kind_bytes[k].current, memory_order_relaxed),
                              memory_order_relaxed);
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++)
        atomic_store_explicit(&dev_bytes[d].peak,
                              atomic_load_explicit(&dev_bytes[d].current, memory_order_relaxed),
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
    return GPUMEM_OK;
}

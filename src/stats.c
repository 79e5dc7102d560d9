/* Statistics: current, peak and total bytes and counts, by kind and by device.
 *
 * Atomic counters, updated after each successful allocation and release. Each measure lives
 * on its own cache line so that threads allocating different kinds do not share lines. A peak
 * is raised by compare-and-swap only when the current value passes it, which is rare once a
 * program reaches its working size. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef struct {
    _Alignas(64) atomic_uint_fast64_t current;
    atomic_uint_fast64_t peak;
    atomic_uint_fast64_t total;
} counter;

static counter kind_bytes[GPUMEM_KIND_COUNT_], kind_count[GPUMEM_KIND_COUNT_];
static counter dev_bytes[GPUMEM_STATS_DEVICES], dev_count[GPUMEM_STATS_DEVICES];

static void raise_peak(counter *c, uint64_t now)
{
    uint_fast64_t peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&c->peak, &peak, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
}

static void add(counter *c, uint64_t v)
{
    uint64_t now = atomic_fetch_add_explicit(&c->current, v, memory_order_relaxed) + v;
    atomic_fetch_add_explicit(&c->total, v, memory_order_relaxed);
    raise_peak(c, now);
}

static void sub(counter *c, uint64_t v)
{
    atomic_fetch_sub_explicit(&c->current, v, memory_order_relaxed);
}

static int dev_slot(int device)
{
    return device < 0 ? 0 : device >= GPUMEM_STATS_DEVICES ? GPUMEM_STATS_DEVICES - 1 : device;
}

void gpumem__stats_alloc(int kind, int device, uint64_t bytes)
{
    int d = dev_slot(device);
    add(&kind_bytes[0], bytes);
    add(&kind_count[0], 1);
    add(&kind_bytes[kind], bytes);
    add(&kind_count[kind], 1);
    add(&dev_bytes[d], bytes);
    add(&dev_count[d], 1);
}

void gpumem__stats_release(int kind, int device, uint64_t bytes)
{
    int d = dev_slot(device);
    sub(&kind_bytes[0], bytes);
    sub(&kind_count[0], 1);
    sub(&kind_bytes[kind], bytes);
    sub(&kind_count[kind], 1);
    sub(&dev_bytes[d], bytes);
    sub(&dev_count[d], 1);
}

uint64_t gpumem__stats_current_bytes(int kind)
{
    return atomic_load_explicit(&kind_bytes[kind].current, memory_order_relaxed);
}

static gpumem_counter_t snap(counter *c)
{
    gpumem_counter_t r;
    r.current = atomic_load_explicit(&c->current, memory_order_relaxed);
    r.peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    r.total = atomic_load_explicit(&c->total, memory_order_relaxed);
    if (r.peak < r.current) /* read between the add and the peak update */
        r.peak = r.current;
    return r;
}

int gpumem_stats(gpumem_stats_t *out)
{
    if (!out)
        return GPUMEM_EINVAL;
    for (int k = 0; k < GPUMEM_KIND_COUNT_; k++) {
        out->bytes[k] = snap(&kind_bytes[k]);
        out->count[k] = snap(&kind_count[k]);
    }
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
        out->device_bytes[d] = snap(&dev_bytes[d]);
        out->device_count[d] = snap(&dev_count[d]);
    }
    return GPUMEM_OK;
}

void gpumem_stats_reset_peak(void)
{
    counter *all[] = {kind_bytes, kind_count, dev_bytes, dev_count};
    int n[] = {GPUMEM_KIND_COUNT_, GPUMEM_KIND_COUNT_, GPUMEM_STATS_DEVICES,
               GPUMEM_STATS_DEVICES};
    for (int a = 0; a < 4; a++)
        for (int i = 0; i < n[a]; i++)
            atomic_store_explicit(&all[a][i].peak,
                                  atomic_load_explicit(&all[a][i].current, memory_order_relaxed),
                                  memory_order_relaxed);
}

static void print_row(FILE *out, const char *name, gpumem_counter_t b, gpumem_counter_t c)
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

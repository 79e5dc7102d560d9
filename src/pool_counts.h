/* Counts of the registry's pool records, kept per thread (pool_counts.c).
 *
 * Allocations and releases of pool records (counts and bytes) by kind (device or pinned, the
 * pools' kinds) and device slot: live figures are allocations less releases. Only the owning
 * thread writes them (a plain add: a relaxed load and store), so a pair writes no line another
 * thread writes, and two counters each way; a read sums every thread's, and a thread that ends
 * adds its own to a sum of ended threads. A release on another thread than the allocation's
 * counts there: the sum is exact. The count itself is inline: it is on a pool pair's path. */
#ifndef GPUMEM_POOL_COUNTS_H
#define GPUMEM_POOL_COUNTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

enum { PC_ALLOCS, PC_ALLOC_BYTES, PC_RELEASES, PC_RELEASE_BYTES, PC_FIELDS };
typedef struct pcounts {
    _Alignas(64) atomic_uint_fast64_t cell[2][GPUMEM_STATS_DEVICES][PC_FIELDS]; /* own lines */
    struct pcounts *prev, *next;
} pcounts;

/* The calling thread's counters; NULL until its first count (and after it ended). */
extern _Thread_local pcounts *gpumem__pc_mine;

static inline void gpumem__pc_add(atomic_uint_fast64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

static inline void gpumem__pc_add_to(pcounts *c, const gpumem__rec *r, int release, int64_t n)
{
    atomic_uint_fast64_t *cell =
        c->cell[r->kind == GPUMEM_KIND_PINNED][gpumem__dev_slot(r->device)];
    gpumem__pc_add(&cell[release ? PC_RELEASES : PC_ALLOCS], (uint64_t)n);
    gpumem__pc_add(&cell[release ? PC_RELEASE_BYTES : PC_ALLOC_BYTES],
                   (uint64_t)(n * (int64_t)r->bytes));
}

/* The thread's first count, and counts out of host memory or after the thread's end. */
void gpumem__pc_count_slow(const gpumem__rec *r, int release, int64_t n);

/* Counts pool record r's allocation (release 0) or release (1), n times (-1: a release
 * undone), on the calling thread's counters. Thread-safe. */
static inline void gpumem__pc_count(const gpumem__rec *r, int release, int64_t n)
{
    pcounts *c = gpumem__pc_mine;
    if (GPUMEM__LIKELY(c != NULL))
        gpumem__pc_add_to(c, r, release, n);
    else
        gpumem__pc_count_slow(r, release, n);
}

/* Adds every thread's counts, the ended threads' included, to out. */
void gpumem__pc_sum(gpumem__counts *out);
/* fork(): phase GPUMEM__FORK_PREPARE takes the counters' lock; the others release it. */
void gpumem__pc_at_fork(int phase);

#endif

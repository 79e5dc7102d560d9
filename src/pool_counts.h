/* Counts of the registry's pool records, kept per thread (pool_counts.c). */
#ifndef GPUMEM_POOL_COUNTS_H
#define GPUMEM_POOL_COUNTS_H

#include <stdint.h>

#include "internal.h"

/* Counts pool record r's allocation (release 0) or release (1), n times (-1: a release
 * undone), on the calling thread's counters. Thread-safe. */
void gpumem__pc_count(const gpumem__rec *r, int release, int64_t n);
/* Adds every thread's counts, the ended threads' included, to out. */
void gpumem__pc_sum(gpumem__counts *out);
/* fork(): phase GPUMEM__FORK_PREPARE takes the counters' lock; the others release it. */
void gpumem__pc_at_fork(int phase);

#endif

/* Where CUDA's host-visible memory lies, to the granule (hostmap.h).
 *
 * Every free(), realloc() and operator delete of a checked program asks first whether the
 * pointer may be CUDA host memory. The answer used to be one address range: the span from the
 * lowest to the highest CUDA host allocation ever made. A program that keeps a pinned buffer
 * in a low mapping and another in a high one (XLA's host allocator does) spans the whole heap,
 * and then every free() took the registry's shard lock: a 200-step JAX training loop ran 28
 * times slower under gpumem check than alone. Here the answer is exact to 64 KiB: a count per
 * granule of the live ranges that touch it, in leaves of 1 GiB (64 KiB of counters each, made
 * on first use and kept), under a table of leaves that covers the 47-bit user address space
 * (1 MiB of bss, of which only the pages for used gigabytes are ever touched). A free() of heap
 * memory then costs two dependent loads while any CUDA host memory is live, and one while none
 * is. Addresses above 2^47 (five-level page tables) are always sent to the registry. */
#define _GNU_SOURCE
#include "hostmap.h"

#include <stdatomic.h>
#include <sys/mman.h>

#include "internal.h"

#define GRANULE_BITS 16
#define LEAF_BITS 30
#define ADDR_BITS 47
#define LEAVES ((size_t)1 << (ADDR_BITS - LEAF_BITS))
#define LEAF_GRANULES ((size_t)1 << (LEAF_BITS - GRANULE_BITS))

typedef atomic_uint leaf_t[LEAF_GRANULES];

static _Atomic(leaf_t *) leaves[LEAVES];
static atomic_long ranges_live; /* ranges added and not yet removed */
static atomic_int degraded;     /* a leaf could not be made: every address may hold some */

static leaf_t *leaf_of(size_t i, int make)
{
    leaf_t *leaf = atomic_load_explicit(&leaves[i], memory_order_acquire);
    if (leaf || !make)
        return leaf;
    void *m = mmap(NULL, sizeof(leaf_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    leaf_t *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&leaves[i], &none, (leaf_t *)m,
                                                memory_order_acq_rel, memory_order_acquire))
        return (leaf_t *)m;
    munmap(m, sizeof(leaf_t)); /* another thread made it first */
    return none;
}

/* Adds delta to the count of every granule of [base, base + bytes) below 2^47. */
static int count(uintptr_t base, size_t bytes, int delta)
{
    uintptr_t limit = (uintptr_t)1 << ADDR_BITS;
    if (base >= limit)
        return 0;
    uintptr_t last = bytes ? base + (bytes - 1) : base;
    if (last < base || last >= limit)
        last = limit - 1;
    int ok = 0;
    for (uintptr_t g = base >> GRANULE_BITS; g <= last >> GRANULE_BITS; g++) {
        leaf_t *leaf = leaf_of(g >> (LEAF_BITS - GRANULE_BITS), delta > 0);
        if (!leaf) {
            ok = -1; /* an add that found no memory; a remove whose add did not count */
            continue;
        }
        atomic_uint *n = &(*leaf)[g & (LEAF_GRANULES - 1)];
        if (delta > 0)
            atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
        else
            atomic_fetch_sub_explicit(n, 1, memory_order_relaxed);
    }
    return ok;
}

int check_hostmap_add(uintptr_t base, size_t bytes)
{
    atomic_fetch_add_explicit(&ranges_live, 1, memory_order_relaxed);
    if (count(base, bytes, +1) == 0)
        return 0;
    atomic_store(&degraded, 1);
    return -1;
}

void check_hostmap_remove(uintptr_t base, size_t bytes)
{
    if (!atomic_load_explicit(&degraded, memory_order_relaxed))
        count(base, bytes, -1);
    atomic_fetch_sub_explicit(&ranges_live, 1, memory_order_relaxed);
}

int check_hostmap_may_hold(uintptr_t p)
{
    if (GPUMEM__LIKELY(atomic_load_explicit(&ranges_live, memory_order_relaxed) == 0))
        return 0;
    if (p >> ADDR_BITS || atomic_load_explicit(&degraded, memory_order_relaxed))
        return 1;
    leaf_t *leaf = atomic_load_explicit(&leaves[p >> LEAF_BITS], memory_order_acquire);
    return leaf && atomic_load_explicit(&(*leaf)[(p >> GRANULE_BITS) & (LEAF_GRANULES - 1)],
                                        memory_order_relaxed) != 0;
}

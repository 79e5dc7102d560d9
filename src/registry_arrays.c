/* Arrays the registry keeps beside its shards, off the pair's path: the memory of a shard's
 * table, and the sorted array of large allocations that interior lookups search. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "registry_arrays.h"

/* A table's arrays. Those of 2 MiB or more are mappings of their own, aligned to 2 MiB and
 * offered to the kernel for transparent huge pages: their slots are reached at random, and
 * with 4 KiB pages nearly every probe of a large table also missed the TLB. Zeroed either
 * way. */
#define HUGE_BYTES ((size_t)2 << 20)

void *gpumem__table_mem(size_t bytes)
{
    if (bytes < HUGE_BYTES)
        return calloc(1, bytes);
    size_t len = (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
    char *m = mmap(NULL, len + HUGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    char *p = (char *)(((uintptr_t)m + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    if (p > m)
        munmap(m, (size_t)(p - m));
    if (p + len < m + len + HUGE_BYTES)
        munmap(p + len, (size_t)(m + len + HUGE_BYTES - (p + len)));
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

/* Releases what gpumem__table_mem gave. Heap arrays are wiped first: stale copies of the addresses in
 * freed heap memory would look like the program's pointers to a scan of the heap. */
void gpumem__table_mem_free(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes >= HUGE_BYTES) {
        munmap(p, (bytes + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1));
        return;
    }
    memset(p, 0, bytes);
    free(p);
}

/* Allocations larger than the registry's small size (64 KiB), sorted by base, for interior lookups. */
static struct {
    pthread_rwlock_t lock;
    uintptr_t *base;
    size_t *bytes;
    size_t len, cap;
} large = {PTHREAD_RWLOCK_INITIALIZER, NULL, NULL, 0, 0};

/* Index of the first large allocation whose base is not below base. Locked. */
static size_t large_lower_bound(uintptr_t base)
{
    size_t lo = 0, hi = large.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (large.base[mid] < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void gpumem__large_add(uintptr_t base, size_t bytes)
{
    pthread_rwlock_wrlock(&large.lock);
    if (large.len == large.cap) {
        size_t n = large.cap ? large.cap * 2 : 64;
        /* Not realloc: the old array is wiped before it is freed (see gpumem__table_mem_free). */
        uintptr_t *nb = malloc(n * sizeof *nb);
        size_t *nz = malloc(n * sizeof *nz);
        if (!nb || !nz) { /* interior lookups of this one will miss; nothing else breaks */
            free(nb);
            free(nz);
            pthread_rwlock_unlock(&large.lock);
            return;
        }
        if (large.cap) {
            memcpy(nb, large.base, large.len * sizeof *nb);
            memcpy(nz, large.bytes, large.len * sizeof *nz);
            memset(large.base, 0, large.cap * sizeof *large.base);
        }
        free(large.base);
        free(large.bytes);
        large.base = nb;
        large.bytes = nz;
        large.cap = n;
    }
    size_t lo = large_lower_bound(base);
    memmove(large.base + lo + 1, large.base + lo, (large.len - lo) * sizeof *large.base);
    memmove(large.bytes + lo + 1, large.bytes + lo, (large.len - lo) * sizeof *large.bytes);
    large.base[lo] = base;
    large.bytes[lo] = bytes;
    large.len++;
    pthread_rwlock_unlock(&large.lock);
}

void gpumem__large_remove(uintptr_t base)
{
    pthread_rwlock_wrlock(&large.lock);
    size_t lo = large_lower_bound(base);
    if (lo < large.len && large.base[lo] == base) {
        memmove(large.base + lo, large.base + lo + 1, (large.len - lo - 1) * sizeof *large.base);
        memmove(large.bytes + lo, large.bytes + lo + 1,
                (large.len - lo - 1) * sizeof *large.bytes);
        large.len--;
    }
    pthread_rwlock_unlock(&large.lock);
}

/* Base of the large allocation containing a, or 0. */
uintptr_t gpumem__large_find(uintptr_t a)
{
    uintptr_t found = 0;
    pthread_rwlock_rdlock(&large.lock);
    size_t lo = 0, hi = large.len; /* first index with base > a */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (large.base[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && a - large.base[lo - 1] < large.bytes[lo - 1])
        found = large.base[lo - 1];
    pthread_rwlock_unlock(&large.lock);
    return found;
}

void gpumem__large_storage(void (*fn)(const void *p, size_t bytes, void *arg), void *arg)
{
    if (large.base)
        fn(large.base, large.cap * sizeof *large.base, arg);
}

/* The child of fork() starts the lock afresh: see gpumem__reg_at_fork. */
void gpumem__large_at_fork_child(void)
{
    pthread_rwlock_init(&large.lock, NULL);
}

/* Where a pool's blocks lie: arenas that carve blocks from the memory the pool holds, split
 * them and merge free neighbours again, so that memory freed by blocks of one size serves
 * blocks of any other (docs/pools.md, "Design").
 *
 * Why. A pool that kept each block as a CUDA allocation of its own, cached by size class,
 * held memory for every size a program ever had live at once: a transformer layer trained on
 * batches of random sequence lengths (16 to 1024 tokens) kept 5.3 GiB for 0.6 GiB it ever had
 * live, because a class whose peak had passed never gave its memory to another.
 *
 * Arenas. Each stream of a device pool has two (a pinned pool has one pair, for everyone):
 * requests up to 1 MiB go to the small one, larger ones to the large one, so that small
 * blocks that live long do not pin pages among large ones. An arena's free blocks sit in bins
 * by size class with a bitmap of bins that hold any; a request takes a block from the lowest
 * bin whose blocks all fit (or a fitting one from the bin below), at its start, and the rest
 * stays free. A released block merges with free neighbours at once.
 *
 * Memory. A device pool maps physical pages (2 MiB on an H200) into an address range of its
 * own for each arena, as many as the device has bytes (CUDA's virtual memory management). A
 * page is mapped when a block needs it and stays mapped after, until another block needs its
 * memory: free blocks beyond the mapped pages hold address space, not memory. A request takes
 * the smallest free block whose bytes are mapped where one is, else the free block, and its
 * start or its end, that needs the fewest pages mapped anew (bin_find_mapped). When a block
 * needs a page and none is spare, a mapped page that no block needs anywhere in the pool
 * moves (pool_pages.c says which, and when new memory is asked for instead): its physical memory is mapped at the new place at once,
 * and stays mapped at the old one until an event recorded on the old arena's stream says its
 * work is done (two mappings of one piece of memory are legal), so moving a page never waits
 * for the device. A request on another stream than the old page's waits for that event on
 * the device (cuStreamWaitEvent), not on the host. New physical memory is asked for only when
 * no mapped page is spare: the pool holds what its live blocks cover, plus the pages freed
 * since, until another size needs them. Where the device cannot map pages (or compute-
 * sanitizer's NVTX heaps are wanted), and for pinned memory, an arena carves segments CUDA
 * gave in one piece instead (PyTorch's caching allocator's way): 2 MiB for small blocks,
 * 20 MiB or the block's size for large ones; pinned, the pool's chunks.
 *
 * Stream order. A block is released into its own stream's arena: work queued on that stream
 * before the release runs before any work of the block's next owner. A block released on
 * another stream (gpumem_free_async) comes back once an event recorded on that stream says
 * its work is done. Thread caches (tcache.c) sit in front and keep their own stream rule.
 *
 * Records. Every block, free or not, has a record in the registry (gpumem__reg_pool_record)
 * from when it is made until it merges into a neighbour, so that a double free of a block
 * that is free or cached is reported with both sites; blocks in use over 64 KiB also join
 * the table of large spans that interior lookups search. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "pool_internal.h"

#define SMALL_SEGMENT ((size_t)2 << 20)
#define LARGE_SEGMENT ((size_t)20 << 20)
#define LARGE_ALONE ((size_t)10 << 20) /* larger blocks get a segment of their own size */

/* ---- size classes ---- */

size_t gpumem__pool_class_of(size_t n, unsigned *cls)
{
    if (n > SIZE_MAX - 255)
        return 0;
    size_t m = (n + 255) & ~(size_t)255;
    if (m <= 2048) {
        *cls = (unsigned)(m / 256 - 1);
        return m;
    }
    unsigned e = 63u - (unsigned)__builtin_clzll((unsigned long long)(m - 1)); /* 2^e < m */
    size_t step = (size_t)1 << (e - 3);
    if (m > SIZE_MAX - (step - 1))
        return 0;
    size_t size = (m + step - 1) & ~(step - 1);
    *cls = 8u + (e - 11u) * 8u + (unsigned)(size / step - 9u);
    return size;
}

size_t gpumem__pool_class_size(unsigned cls)
{
    if (cls < 8)
        return (size_t)(cls + 1) * 256;
    unsigned e = 11u + (cls - 8u) / 8u;
    return (size_t)(9u + (cls - 8u) % 8u) << (e - 3u);
}

size_t gpumem__pool_round(const struct gpumem_pool *pool, size_t n, unsigned *cls)
{
    size_t size = gpumem__pool_class_of(n, cls);
    if (size <= GPUMEM__POOL_CLASS_MAX || pool->design == GPUMEM__DESIGN_CLASSES || !size)
        return size;
    return (n + GPUMEM_ALIGNMENT - 1) & ~(size_t)(GPUMEM_ALIGNMENT - 1);
}

/* The bin of a free block: the largest class not above its size, so that every block of bin
 * k has at least class k's bytes. */
static unsigned bin_of(size_t size)
{
    unsigned cls = 0;
    size_t c = gpumem__pool_class_of(size, &cls);
    return c > size && cls > 0 ? cls - 1 : cls;
}

/* ---- the address table: every block of the pool ---- */

static size_t bucket_of(uintptr_t a, size_t nbuckets)
{
    return (size_t)(((uint64_t)a >> 8) * 0x9E3779B97F4A7C15ull >> 32) & (nbuckets - 1);
}

gpumem__pblk *gpumem__arena_find(const struct gpumem_pool *pool, uintptr_t base)
{
    gpumem__pblk *b = pool->buckets[bucket_of(base, pool->nbuckets)];
    while (b && b->base != base)
        b = b->hnext;
    return b;
}

/* Doubles the table when it is full; if that fails the chains just get longer. */
static void table_add(struct gpumem_pool *pool, gpumem__pblk *b)
{
    if (pool->nblocks >= pool->nbuckets && pool->nbuckets < ((size_t)1 << 30)) {
        size_t n = pool->nbuckets * 2;
        gpumem__pblk **nb = calloc(n, sizeof *nb);
        if (nb) {
            for (size_t i = 0; i < pool->nbuckets; i++) {
                for (gpumem__pblk *x = pool->buckets[i], *next; x; x = next) {
                    next = x->hnext;
                    size_t k = bucket_of(x->base, n);
                    x->hnext = nb[k];
                    nb[k] = x;
                }
            }
            free(pool->buckets);
            pool->buckets = nb;
            pool->nbuckets = n;
        }
    }
    size_t k = bucket_of(b->base, pool->nbuckets);
    b->hnext = pool->buckets[k];
    pool->buckets[k] = b;
    pool->nblocks++;
}

static void table_remove(struct gpumem_pool *pool, gpumem__pblk *b)
{
    gpumem__pblk **pp = &pool->buckets[bucket_of(b->base, pool->nbuckets)];
    while (*pp && *pp != b)
        pp = &(*pp)->hnext;
    if (*pp) {
        *pp = b->hnext;
        pool->nblocks--;
    }
}

/* ---- blocks and bins ---- */

/* Block records come from slabs the pool keeps until it goes, a spare one first: carving and
 * merging make and drop a record on most operations of a variable-size workload, and the
 * bookkeeping of malloc and free for them was about 6 of the 78 cache lines a cold operation
 * touched (docs/perf/pools-2026-12-07-h100.md). */
#define BLK_SLAB 63u
typedef struct gpumem__pblk_slab {
    struct gpumem__pblk_slab *next;
    gpumem__pblk b[BLK_SLAB];
} gpumem__pblk_slab;

static gpumem__pblk *blk_get(struct gpumem_pool *pool)
{
    if (!pool->spare_blks) {
        gpumem__pblk_slab *s = malloc(sizeof *s);
        if (!s)
            return NULL;
        s->next = pool->blk_slabs;
        pool->blk_slabs = s;
        for (unsigned i = 0; i < BLK_SLAB; i++) {
            s->b[i].hnext = pool->spare_blks;
            pool->spare_blks = &s->b[i];
        }
    }
    gpumem__pblk *b = pool->spare_blks;
    pool->spare_blks = b->hnext;
    memset(b, 0, sizeof *b);
    return b;
}

void gpumem__arena_free_tables(struct gpumem_pool *pool)
{
    for (gpumem__pblk_slab *s = pool->blk_slabs, *next; s; s = next) {
        next = s->next;
        free(s);
    }
    pool->blk_slabs = NULL;
    pool->spare_blks = NULL;
    free(pool->buckets);
    pool->buckets = NULL;
}

void gpumem__bin_insert(gpumem__parena *a, gpumem__pblk *b)
{
    unsigned k = bin_of(b->size);
    b->bin = k;
    b->fprev = NULL;
    b->fnext = a->bins[k];
    if (b->fnext)
        b->fnext->fprev = b;
    a->bins[k] = b;
    a->binmap[k / 64] |= (uint64_t)1 << (k % 64);
    a->free_blocks++;
}

void gpumem__bin_remove(gpumem__parena *a, gpumem__pblk *b)
{
    if (b->fprev)
        b->fprev->fnext = b->fnext;
    else
        a->bins[b->bin] = b->fnext;
    if (b->fnext)
        b->fnext->fprev = b->fprev;
    if (!a->bins[b->bin])
        a->binmap[b->bin / 64] &= ~((uint64_t)1 << (b->bin % 64));
    b->fprev = b->fnext = NULL;
    a->free_blocks--;
}

/* The first bin at or above k that holds a block, or GPUMEM__POOL_CLASSES. */
static unsigned bin_next(const gpumem__parena *a, unsigned k)
{
    for (unsigned w = k / 64; w < (GPUMEM__POOL_CLASSES + 63) / 64; w++) {
        uint64_t bits = a->binmap[w];
        if (w == k / 64)
            bits &= ~(uint64_t)0 << (k % 64);
        if (bits)
            return w * 64 + (unsigned)__builtin_ctzll(bits);
    }
    return GPUMEM__POOL_CLASSES;
}

/* A free block of at least n bytes (exact: of n bytes), the smallest such bin first. */
static gpumem__pblk *bin_find(const gpumem__parena *a, size_t n, int exact)
{
    unsigned k = bin_of(n);
    for (gpumem__pblk *b = a->bins[k]; b; b = b->fnext)
        if (exact ? b->size == n : b->size >= n)
            return b;
    if (exact)
        return NULL;
    k = bin_next(a, k + 1);
    return k < GPUMEM__POOL_CLASSES ? a->bins[k] : NULL;
}

/* How many pages of the n bytes at base, in seg, are not mapped (none off VMM). */
static size_t unmapped_in(const struct gpumem_pool *pool, const gpumem__pseg *seg, uintptr_t base,
                          size_t n)
{
    if (!seg->pages)
        return 0;
    size_t lo = (base - seg->base) / pool->granule;
    size_t hi = (base + n - 1 - seg->base) / pool->granule + 1;
    size_t missing = 0;
    for (size_t i = lo; i < hi; i++)
        missing += i >= seg->hwm || seg->pages[i].state != GPUMEM__PAGE_MAPPED;
    return missing;
}

/* Where in free block b the n bytes need fewer pages mapped anew: at its start, or at its end
 * when that needs fewer. Returns the offset from the start; *missing, the pages.
 * A request a little larger than a mapped hole often finds the hole's mapped pages at the end
 * of the free block above a live one: taking the end there, rather than only starting blocks
 * at a free block's start, cut the pages moved by the recorded streams of bench/traces (the
 * simulated device) from 368 to 262 (server loop) and 180 to 66 (CuPy), with 333 to 361 for
 * variable lengths, and peak reserved from 1.06 to 1.03, 1.19 to 1.16 and 1.08 to 1.08 times
 * the peak requested. (A build that also tried every page boundary between moved more pages
 * on the variable-length stream: the middle of a free run cuts it in two;
 * docs/perf/pools-2026-12-06d-h100.md says how it was built.) */
static size_t best_place(const struct gpumem_pool *pool, const gpumem__pblk *b, size_t n,
                         size_t *missing)
{
    const gpumem__pseg *seg = b->seg;
    size_t best = 0;
    *missing = unmapped_in(pool, seg, b->base, n);
    if (*missing == 0 || !seg->pages || b->size == n)
        return 0;
    size_t end = b->size - n;
    size_t m = unmapped_in(pool, seg, b->base + end, n);
    if (m < *missing) {
        *missing = m;
        best = end;
    }
    return best;
}

/* The free block of at least n bytes, and the place in it (*off from its start), that needs
 * the fewest pages mapped anew among the first FIND_MAPPED_MAX free blocks looked at, smallest
 * bin first; the first that needs none at once; the first that fits if none of those does.
 * NULL if no block fits. */
#define FIND_MAPPED_MAX 64
static gpumem__pblk *bin_find_mapped(const struct gpumem_pool *pool, const gpumem__parena *a,
                                     size_t n, size_t *off)
{
    unsigned seen = 0;
    gpumem__pblk *best = NULL;
    size_t best_missing = SIZE_MAX;
    *off = 0;
    for (unsigned k = bin_of(n); k < GPUMEM__POOL_CLASSES; k = bin_next(a, k + 1)) {
        for (gpumem__pblk *b = a->bins[k]; b; b = b->fnext) {
            if (b->size >= n) {
                size_t missing, at = best_place(pool, b, n, &missing);
                if (missing < best_missing) {
                    best = b;
                    *off = at;
                    best_missing = missing;
                }
                if (missing == 0)
                    return best;
            }
            if (++seen == FIND_MAPPED_MAX)
                return best ? best : bin_find(a, n, 0);
        }
    }
    return best;
}

/* A new block of seg, linked after prev (NULL: first), with a registry record. */
static gpumem__pblk *blk_new(struct gpumem_pool *pool, gpumem__pseg *seg, gpumem__pblk *prev,
                             uintptr_t base, size_t size)
{
    gpumem__pblk *b = blk_get(pool);
    if (!b)
        return NULL;
    b->base = base;
    b->size = size;
    b->seg = seg;
    b->prev = prev;
    b->next = prev ? prev->next : seg->first;
    if (b->next)
        b->next->prev = b;
    if (prev)
        prev->next = b;
    else
        seg->first = b;
    table_add(pool, b);
    gpumem__reg_pool_record(base, 1);
    return b;
}

/* Unlinks block b (free, not in a bin) from its segment and frees it; its record goes (its
 * last release, if any, to the quarantine). */
static void blk_drop(struct gpumem_pool *pool, gpumem__pblk *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        b->seg->first = b->next;
    if (b->next)
        b->next->prev = b->prev;
    table_remove(pool, b);
    gpumem__reg_pool_record(b->base, 0);
    b->hnext = pool->spare_blks;
    pool->spare_blks = b;
}

/* Cuts free block b (out of its bin) at n bytes; the rest becomes a free block in the bin.
 * Without host memory for the rest, b stays whole. */
void gpumem__blk_split(struct gpumem_pool *pool, gpumem__pblk *b, size_t n)
{
    gpumem__pblk *rest = blk_new(pool, b->seg, b, b->base + n, b->size - n);
    if (!rest)
        return;
    b->size = n;
    rest->state = GPUMEM__BLK_FREE;
    gpumem__bin_insert(b->seg->arena, rest);
}

/* ---- segments ---- */

static gpumem__pseg *seg_add(struct gpumem_pool *pool, gpumem__parena *a, uintptr_t base,
                             size_t size, size_t npages)
{
    gpumem__pseg *seg = calloc(1, sizeof *seg);
    gpumem__ppage *pages = npages ? calloc(npages, sizeof *pages) : NULL;
    if (!seg || (npages && !pages)) {
        free(seg);
        free(pages);
        return NULL;
    }
    seg->base = base;
    seg->size = size;
    seg->arena = a;
    seg->pages = pages;
    seg->npages = npages;
    gpumem__pblk *b = blk_new(pool, seg, NULL, base, size);
    if (!b) {
        free(pages);
        free(seg);
        return NULL;
    }
    b->state = GPUMEM__BLK_FREE;
    gpumem__bin_insert(a, b);
    seg->next = a->segs;
    a->segs = seg;
    return seg;
}

/* The bytes of a segment CUDA gives in one piece for a block of n bytes: small blocks share
 * segments of 2 MiB (pinned: the pool's chunks), large device blocks share 20 MiB ones
 * under 10 MiB and get one of their own, in whole 2 MiB, above (PyTorch's caching
 * allocator's sizes); large pinned blocks get one of their own. */
static size_t plain_bytes(const struct gpumem_pool *pool, const gpumem__parena *a, size_t n)
{
    if (pool->design == GPUMEM__DESIGN_CLASSES)
        return n;
    if (pool->kind == GPUMEM_KIND_PINNED)
        return a->small && n < pool->chunk_bytes ? pool->chunk_bytes : n;
    if (a->small)
        return n < SMALL_SEGMENT ? SMALL_SEGMENT : n;
    if (n < LARGE_ALONE)
        return LARGE_SEGMENT;
    return n > SIZE_MAX - (SMALL_SEGMENT - 1) ? n : (n + SMALL_SEGMENT - 1) & ~(SMALL_SEGMENT - 1);
}

static int seg_release(struct gpumem_pool *pool, gpumem__pseg *seg, int ordered);

/* Before a device pool of segments asks CUDA for another, the segments of the requesting
 * stream that no block uses go back to CUDA's pool (cuMemFreeAsync on that stream, which CUDA
 * orders after the stream's work, then cuMemPoolTrimTo, which gives the driver what CUDA's
 * pool may release already; the rest it releases or reuses once the stream has run): they
 * could not serve this request, and kept, they hoard memory for sizes no longer asked for.
 * Only the stream's own: another stream may have been destroyed, and its work is not ordered
 * before this one's. With NVTX's heaps the segments are cudaMalloc's, whose cudaFree waits for
 * the device: they stay until a trim. */
static void release_idle(struct gpumem_pool *pool, gpumem__pstream *ps)
{
    if (pool->kind != GPUMEM_KIND_DEVICE || pool->design != GPUMEM__DESIGN_SEGMENTS ||
        GPUMEM__UNLIKELY(gpumem__hot.nvtx_on))
        return;
    int released = 0;
    for (int k = 0; k < 2; k++) {
        for (gpumem__pseg *s = ps->arena[k].segs, *next; s; s = next) {
            next = s->next;
            if (!s->used && seg_release(pool, s, 1) == 0)
                released = 1;
        }
    }
    int token;
    if (released && gpumem__pool_dev_enter(pool, &token) == 0) {
        gpumem__be->mempool_trim(pool->cuda_pool, 0);
        gpumem__pool_dev_leave(token);
    }
}

static int seg_grow_plain(struct gpumem_pool *pool, gpumem__pstream *ps, gpumem__parena *a,
                          size_t n, cudaStream_t stream)
{
    release_idle(pool, ps);
    size_t bytes = plain_bytes(pool, a, n);
    if (gpumem__pool_over_limit(pool, bytes)) {
        if (bytes == n || gpumem__pool_over_limit(pool, n))
            return GPUMEM__POOL_OVER_LIMIT;
        bytes = n; /* a smaller segment within the limit */
    }
    void *p = NULL;
    int token, err = gpumem__pool_dev_enter(pool, &token);
    if (!err) {
        uint64_t t = gpumem__now_ns();
        /* compute-sanitizer refuses an NVTX heap over memory of a CUDA memory pool
         * (nvtxMemHeapRegister: "one or more of the parameters is invalid", seen on an H200
         * with compute-sanitizer 2025.3, also after the stream had run) and takes one over
         * cudaMalloc's: with NVTX on, device segments come from cudaMalloc. */
        err = pool->kind == GPUMEM_KIND_PINNED ? gpumem__be->host_alloc(&p, bytes, 0)
              : GPUMEM__UNLIKELY(gpumem__hot.nvtx_on)
                  ? gpumem__be->malloc_device(&p, bytes)
                  : gpumem__be->mempool_alloc(pool->cuda_pool, &p, bytes, stream);
        gpumem__pool_cuda_end(pool, t);
    }
    gpumem__pool_dev_leave(token);
    if (err || !p)
        return err ? err : cudaErrorMemoryAllocation;
    if (!seg_add(pool, a, (uintptr_t)p, bytes, 0)) {
        gpumem__pool_dev_enter(pool, &token);
        if (pool->kind == GPUMEM_KIND_PINNED)
            gpumem__be->free_host(p);
        else
            gpumem__be->free(p);
        gpumem__pool_dev_leave(token);
        return cudaErrorMemoryAllocation;
    }
    if (GPUMEM__UNLIKELY(gpumem__hot.nvtx_on))
        gpumem__nvtx_heap((uintptr_t)p, bytes, 1);
    pool->st.reserved += bytes;
    return 0;
}

/* A new address range for arena a, for a block of n bytes. A block larger than the device's
 * memory cannot be mapped: out of memory, as cudaMalloc would say, without asking; and when
 * no address range is left, that is out of memory too. */
static int seg_grow_vmm(struct gpumem_pool *pool, gpumem__parena *a, size_t n)
{
    size_t g = pool->granule;
    size_t want = a->small ? pool->va_bytes / 8 : pool->va_bytes;
    if (n > pool->va_bytes)
        return cudaErrorMemoryAllocation;
    if (want < n)
        want = n;
    want = (want + g - 1) / g * g;
    void *va = NULL;
    int token, err = gpumem__pool_dev_enter(pool, &token);
    if (!err && gpumem__be->vmm_reserve(&va, want) != 0)
        err = cudaErrorMemoryAllocation;
    if (!err && !seg_add(pool, a, (uintptr_t)va, want, want / g)) {
        gpumem__be->vmm_unreserve(va, want);
        err = cudaErrorMemoryAllocation;
    }
    gpumem__pool_dev_leave(token);
    return err;
}

/* Gives segment seg back to CUDA; every block of it is free, or retiring and settled. Its
 * pages must be unmapped already. ordered: a device segment from CUDA's pool goes back in
 * the order of its stream's work (cuMemFreeAsync), else with cudaFree, which waits. */
static int seg_release(struct gpumem_pool *pool, gpumem__pseg *seg, int ordered)
{
    int token, err = gpumem__pool_dev_enter(pool, &token);
    if (!err && seg->pages) {
        err = gpumem__be->vmm_unreserve((void *)seg->base, seg->size);
    } else if (!err) {
        if (GPUMEM__UNLIKELY(gpumem__hot.nvtx_on))
            gpumem__nvtx_heap(seg->base, seg->size, 0);
        uint64_t t = gpumem__now_ns();
        err = pool->kind == GPUMEM_KIND_PINNED ? gpumem__be->free_host((void *)seg->base)
              : ordered ? gpumem__be->free_async((void *)seg->base, seg->arena->stream)
                        : gpumem__be->free((void *)seg->base);
        gpumem__pool_cuda_end(pool, t);
        if (GPUMEM__UNLIKELY(err && gpumem__hot.nvtx_on))
            gpumem__nvtx_heap(seg->base, seg->size, 1);
        if (!err)
            pool->st.reserved -= seg->size;
    }
    gpumem__pool_dev_leave(token);
    if (err)
        return err;
    while (seg->first) {
        gpumem__pblk *b = seg->first;
        if (b->state == GPUMEM__BLK_FREE)
            gpumem__bin_remove(seg->arena, b);
        blk_drop(pool, b);
    }
    gpumem__pseg **pp = &seg->arena->segs;
    while (*pp != seg)
        pp = &(*pp)->next;
    *pp = seg->next;
    free(seg->pages);
    free(seg);
    return 0;
}

/* ---- stream arenas ---- */

static size_t slot_of(cudaStream_t s)
{
    return (size_t)(((uint64_t)(uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ull >> 56) &
           (GPUMEM__POOL_ARENAS - 1);
}

static void lru_unlink(struct gpumem_pool *pool, gpumem__pstream *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        pool->mru = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        pool->lru = c->prev;
    c->prev = c->next = NULL;
}

static void lru_front(struct gpumem_pool *pool, gpumem__pstream *c)
{
    c->next = pool->mru;
    c->prev = NULL;
    if (pool->mru)
        pool->mru->prev = c;
    pool->mru = c;
    if (!pool->lru)
        pool->lru = c;
}

/* Takes the arenas of a stream out of the table and frees them; they hold no segment. */
static void stream_forget(struct gpumem_pool *pool, gpumem__pstream *c)
{
    size_t i = slot_of(c->stream);
    while (pool->slots[i] != c)
        i = (i + 1) & (GPUMEM__POOL_ARENAS - 1);
    /* Backward-shift deletion: move up later entries whose probe passed over slot i. */
    for (size_t j = (i + 1) & (GPUMEM__POOL_ARENAS - 1); pool->slots[j];
         j = (j + 1) & (GPUMEM__POOL_ARENAS - 1)) {
        size_t k = slot_of(pool->slots[j]->stream);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        pool->slots[i] = pool->slots[j];
        i = j;
    }
    pool->slots[i] = NULL;
    lru_unlink(pool, c);
    pool->nstreams--;
    if (pool->last == c)
        pool->last = NULL;
    free(c);
}

static int stream_idle(const gpumem__pstream *c)
{
    for (int k = 0; k < 2; k++)
        for (const gpumem__pseg *s = c->arena[k].segs; s; s = s->next)
            if (s->used)
                return 0;
    return 1;
}

static int stream_evict(struct gpumem_pool *pool, gpumem__pstream *c);

/* The arenas of stream s, made when missing (NULL only without host memory, or when every
 * slot holds a stream with blocks in use). */
static gpumem__pstream *stream_of(struct gpumem_pool *pool, cudaStream_t s)
{
    if (GPUMEM__LIKELY(pool->last && pool->last->stream == s))
        return pool->last;
    size_t i = slot_of(s);
    for (; pool->slots[i]; i = (i + 1) & (GPUMEM__POOL_ARENAS - 1)) {
        gpumem__pstream *c = pool->slots[i];
        if (c->stream == s) {
            lru_unlink(pool, c);
            lru_front(pool, c);
            return pool->last = c;
        }
    }
    /* A program that makes a stream per request must not grow without bound: past the
     * streams kept, the least recently used idle one goes back to CUDA. */
    for (gpumem__pstream *c = pool->lru; c && pool->nstreams >= GPUMEM__POOL_KEEP_ARENAS;
         c = c->prev) {
        if (stream_idle(c) && stream_evict(pool, c) == 0) {
            stream_forget(pool, c);
            i = slot_of(s); /* the deletion may have moved entries */
            while (pool->slots[i])
                i = (i + 1) & (GPUMEM__POOL_ARENAS - 1);
            break;
        }
    }
    if (pool->nstreams >= GPUMEM__POOL_ARENAS - 1)
        return NULL;
    gpumem__pstream *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->stream = s;
    for (int k = 0; k < 2; k++) {
        c->arena[k].stream = s;
        c->arena[k].small = k == 0;
    }
    pool->slots[i] = c;
    pool->nstreams++;
    lru_front(pool, c);
    return pool->last = c;
}

/* ---- taking and giving blocks ---- */

int gpumem__arena_take(struct gpumem_pool *pool, size_t n, cudaStream_t stream,
                       gpumem__pblk **out, int *missed)
{
    *missed = 0;
    if (pool->pending)
        gpumem__arena_settle(pool, 0);
    gpumem__pstream *ps = stream_of(pool, pool->kind == GPUMEM_KIND_DEVICE ? stream : NULL);
    if (!ps)
        return cudaErrorMemoryAllocation;
    ps->last_take = ++pool->takes;
    size_t small_max = pool->kind == GPUMEM_KIND_PINNED ? pool->chunk_bytes / 4
                                                        : GPUMEM__POOL_SMALL_MAX;
    gpumem__parena *a = &ps->arena[n > small_max];
    int exact = pool->design == GPUMEM__DESIGN_CLASSES;
    size_t off = 0;
    gpumem__pblk *b = pool->design == GPUMEM__DESIGN_VMM ? bin_find_mapped(pool, a, n, &off)
                                                         : bin_find(a, n, exact);
    if (!b) {
        int err = pool->design == GPUMEM__DESIGN_VMM ? seg_grow_vmm(pool, a, n)
                                                     : seg_grow_plain(pool, ps, a, n, stream);
        if (err)
            return err;
        *missed = pool->design != GPUMEM__DESIGN_VMM;
        b = bin_find(a, n, exact);
        if (!b)
            return cudaErrorMemoryAllocation;
    }
    gpumem__bin_remove(a, b);
    if (off) { /* the bytes from off: the head stays free, in its bin */
        size_t whole = b->size;
        gpumem__blk_split(pool, b, off);
        if (b->size != whole) {
            gpumem__pblk *head = b;
            b = head->next;
            gpumem__bin_remove(a, b);
            gpumem__bin_insert(a, head);
        }
    }
    if (b->size > n)
        gpumem__blk_split(pool, b, n);
    b->state = GPUMEM__BLK_USED;
    if (b->seg->pages) {
        int token, err = gpumem__pool_dev_enter(pool, &token);
        if (!err)
            err = gpumem__pages_need(pool, b, missed);
        gpumem__pool_dev_leave(token);
        if (err) {
            gpumem__blk_merge_free(pool, b);
            return err;
        }
    }
    b->seg->used += b->size;
    if (b->size > (size_t)64 << 10)
        gpumem__reg_pool_span(b->base, b->size, 1);
    *out = b;
    return 0;
}

/* Block b (out of any bin, counted nowhere) becomes free and merges with free neighbours. */
void gpumem__blk_merge_free(struct gpumem_pool *pool, gpumem__pblk *b)
{
    gpumem__parena *a = b->seg->arena;
    b->state = GPUMEM__BLK_FREE;
    if (pool->design != GPUMEM__DESIGN_CLASSES) {
        gpumem__pblk *p = b->prev, *n = b->next;
        if (n && n->state == GPUMEM__BLK_FREE) {
            gpumem__bin_remove(a, n);
            b->size += n->size;
            blk_drop(pool, n);
        }
        if (p && p->state == GPUMEM__BLK_FREE) {
            gpumem__bin_remove(a, p);
            p->size += b->size;
            blk_drop(pool, b);
            b = p;
        }
    }
    gpumem__bin_insert(a, b);
}

/* Block b (in use or deferred) becomes free. */
void gpumem__blk_free(struct gpumem_pool *pool, gpumem__pblk *b)
{
    if (b->state == GPUMEM__BLK_USED || b->state == GPUMEM__BLK_DEFERRED) {
        b->seg->used -= b->size;
        if (b->seg->pages)
            gpumem__pages_unneed(pool, b);
        if (b->size > (size_t)64 << 10)
            gpumem__reg_pool_span(b->base, b->size, 0);
    }
    gpumem__blk_merge_free(pool, b);
}

int gpumem__arena_give(struct gpumem_pool *pool, gpumem__pblk *b, cudaStream_t to)
{
    if (pool->kind == GPUMEM_KIND_DEVICE && to != b->seg->arena->stream) {
        int token, err = gpumem__pool_dev_enter(pool, &token);
        void *ev = err ? NULL : gpumem__pool_event_get(pool);
        if (ev)
            err = gpumem__be->event_record(ev, to);
        gpumem__pool_dev_leave(token);
        if (!ev)
            return err ? err : cudaErrorMemoryAllocation;
        if (err || gpumem__pool_pending_add(pool, b, ev) != 0) {
            gpumem__pool_event_put(pool, ev);
            return err ? err : cudaErrorMemoryAllocation;
        }
        b->state = GPUMEM__BLK_DEFERRED;
        return 0;
    }
    gpumem__blk_free(pool, b);
    return 0;
}

/* ---- giving memory back ---- */

/* Gives back every segment of stream c's arenas that no block uses. */
static int stream_release(struct gpumem_pool *pool, gpumem__pstream *c)
{
    int err = 0;
    for (int k = 0; k < 2; k++) {
        for (gpumem__pseg *s = c->arena[k].segs, *next; s; s = next) {
            next = s->next;
            if (s->used)
                continue;
            int mapped = 0;
            for (size_t i = 0; i < s->hwm; i++)
                mapped |= s->pages[i].state != GPUMEM__PAGE_UNMAPPED;
            int e = mapped ? cudaErrorNotReady : seg_release(pool, s, 0);
            if (e && e != cudaErrorNotReady)
                err = err ? err : e;
        }
    }
    return err;
}

/* Gives back the arenas of idle stream c, which the pool will not keep: after the device is
 * done with them, their pages' memory goes to the pool's spare pages (others may need it),
 * their segments to CUDA. 0 when nothing of c is left. */
static int stream_evict(struct gpumem_pool *pool, gpumem__pstream *c)
{
    int token, err = gpumem__pool_dev_enter(pool, &token);
    if (!err && pool->kind == GPUMEM_KIND_DEVICE)
        err = gpumem__be->device_sync();
    gpumem__pool_dev_leave(token);
    if (err)
        return err;
    gpumem__arena_settle(pool, 1);
    err = gpumem__pages_unmap_stream(pool, c);
    if (!err)
        err = stream_release(pool, c);
    return err || c->arena[0].segs || c->arena[1].segs ? -1 : 0;
}


int gpumem__arena_trim(struct gpumem_pool *pool)
{
    int token, err = gpumem__pool_dev_enter(pool, &token);
    if (!err && pool->kind == GPUMEM_KIND_DEVICE)
        err = gpumem__be->device_sync(); /* no work may still use what is released */
    gpumem__pool_dev_leave(token);
    if (err)
        return err;
    gpumem__arena_settle(pool, 1);
    err = gpumem__pool_dev_enter(pool, &token);
    if (!err)
        err = gpumem__pages_unmap_unneeded(pool);
    gpumem__pool_dev_leave(token);
    for (gpumem__pstream *c = pool->mru, *next; c; c = next) {
        next = c->next;
        int e = stream_release(pool, c);
        err = err ? err : e;
        if (!c->arena[0].segs && !c->arena[1].segs)
            stream_forget(pool, c);
    }
    if (!err && pool->kind == GPUMEM_KIND_DEVICE && pool->design != GPUMEM__DESIGN_VMM) {
        err = gpumem__pool_dev_enter(pool, &token);
        if (!err)
            err = gpumem__be->mempool_trim(pool->cuda_pool, 0);
        gpumem__pool_dev_leave(token);
    }
    return err;
}

int gpumem__arena_destroy(struct gpumem_pool *pool)
{
    int err = gpumem__arena_trim(pool);
    if (err)
        return err;
    if (pool->mru)
        return cudaErrorInvalidValue; /* a segment stayed: the caller says so */
    for (size_t i = 0; i < pool->nevents; i++)
        gpumem__be->event_destroy(pool->events[i]);
    free(pool->events);
    free(pool->handles);
    pool->events = NULL;
    pool->nevents = pool->events_cap = 0;
    pool->handles = NULL;
    pool->handles_cap = 0;
    return 0;
}

int gpumem__arena_setup(struct gpumem_pool *pool)
{
    pool->nbuckets = 256;
    pool->buckets = calloc(pool->nbuckets, sizeof *pool->buckets);
    return pool->buckets ? 0 : cudaErrorMemoryAllocation;
}

/* ---- what the pool holds ---- */

static unsigned size_range(size_t n)
{
    static const size_t limits[GPUMEM_POOL_SIZE_RANGES - 1] = {
        (size_t)64 << 10, (size_t)1 << 20, (size_t)16 << 20, (size_t)256 << 20};
    unsigned r = 0;
    while (r < GPUMEM_POOL_SIZE_RANGES - 1 && n >= limits[r])
        r++;
    return r;
}

void gpumem__arena_stats(const struct gpumem_pool *pool, gpumem_pool_stats_t *st)
{
    for (const gpumem__pstream *ps = pool->mru; ps; ps = ps->next) {
        for (int k = 0; k < 2; k++) {
            for (const gpumem__pseg *s = ps->arena[k].segs; s; s = s->next) {
                for (const gpumem__pblk *b = s->first; b; b = b->next) {
                    size_t run = 0, bytes;
                    if (b->state == GPUMEM__BLK_DEFERRED) {
                        st->blocks_cached++;
                        st->cached_by_size[size_range(b->size)] += b->size;
                    }
                    if (b->state != GPUMEM__BLK_FREE || !(bytes = gpumem__pages_mapped_in(pool, b, &run)))
                        continue;
                    st->blocks_cached++;
                    st->cached_by_size[size_range(b->size)] += bytes;
                    if (run > st->largest_free)
                        st->largest_free = run;
                }
            }
        }
    }
    if (pool->nhandles)
        st->cached_by_size[size_range(pool->granule)] += pool->nhandles * pool->granule;
    st->remaps = pool->remaps;
    st->cuda_calls = pool->cuda_calls;
    st->cuda_ns = pool->cuda_ns;
}

int gpumem__arena_holds(const struct gpumem_pool *pool, uintptr_t p)
{
    for (const gpumem__pstream *ps = pool->mru; ps; ps = ps->next) {
        for (int k = 0; k < 2; k++) {
            for (const gpumem__pseg *s = ps->arena[k].segs; s; s = s->next) {
                if (p - s->base >= s->size)
                    continue;
                const gpumem__pblk *b = s->first;
                while (b && p - b->base >= b->size)
                    b = b->next;
                return b && b->state != GPUMEM__BLK_USED;
            }
        }
    }
    return 0;
}

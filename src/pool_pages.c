/* The pages of a device pool's address ranges (pool_arena.c's VMM segments): a page is
 * mapped while a block that is not free lies on it; physical memory no block needs moves to
 * where a block needs it, and its old mapping goes once the work that may still use it is done
 * (events); what no block needs goes back to CUDA on trim. docs/pools.md has the design and
 * why a page moves without waiting for the device. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "pool_internal.h"

/* The four CUDA calls of a page, counted and timed (gpumem_pool_stats_t's cuda_calls and
 * cuda_ns). */
static int page_create(struct gpumem_pool *pool, unsigned long long *h)
{
    uint64_t t = gpumem__now_ns();
    int err = gpumem__be->vmm_create(h, pool->granule, pool->device);
    gpumem__pool_cuda_end(pool, t);
    return err;
}

static int page_map(struct gpumem_pool *pool, uintptr_t va, unsigned long long h)
{
    uint64_t t = gpumem__now_ns();
    int err = gpumem__be->vmm_map((void *)va, pool->granule, h, pool->device);
    gpumem__pool_cuda_end(pool, t);
    return err;
}

static int page_unmap(struct gpumem_pool *pool, uintptr_t va)
{
    uint64_t t = gpumem__now_ns();
    int err = gpumem__be->vmm_unmap((void *)va, pool->granule);
    gpumem__pool_cuda_end(pool, t);
    return err;
}

static int page_release(struct gpumem_pool *pool, unsigned long long h)
{
    uint64_t t = gpumem__now_ns();
    int err = gpumem__be->vmm_release(h);
    gpumem__pool_cuda_end(pool, t);
    return err;
}

void gpumem__pages_span(const struct gpumem_pool *pool, const gpumem__pblk *b, size_t *lo,
                      size_t *hi)
{
    *lo = (b->base - b->seg->base) / pool->granule;
    *hi = (b->base + b->size - 1 - b->seg->base) / pool->granule + 1;
}

void *gpumem__pool_event_get(struct gpumem_pool *pool)
{
    if (pool->nevents)
        return pool->events[--pool->nevents];
    void *ev = NULL;
    return gpumem__be->event_create(&ev) == 0 ? ev : NULL;
}

void gpumem__pool_event_put(struct gpumem_pool *pool, void *ev)
{
    if (pool->nevents == pool->events_cap) {
        size_t cap = pool->events_cap ? pool->events_cap * 2 : 16;
        void **n = realloc(pool->events, cap * sizeof *n);
        if (!n) {
            gpumem__be->event_destroy(ev);
            return;
        }
        pool->events = n;
        pool->events_cap = cap;
    }
    pool->events[pool->nevents++] = ev;
}

int gpumem__pool_pending_add(struct gpumem_pool *pool, gpumem__pblk *b, void *ev)
{
    gpumem__pending *p = malloc(sizeof *p);
    if (!p)
        return -1;
    p->block = b;
    p->event = ev;
    gpumem__pool_pending_push(pool, p);
    return 0;
}

/* Pending work is kept in the order it was recorded: a poll stops at the first that is not
 * done, as what was recorded after it on the same stream is not done either, so that a pool
 * with work in flight pays one event query a request, not one per entry. */
void gpumem__pool_pending_push(struct gpumem_pool *pool, gpumem__pending *p)
{
    p->next = NULL;
    if (pool->pending_tail)
        pool->pending_tail->next = p;
    else
        pool->pending = p;
    pool->pending_tail = p;
}

int gpumem__pages_handle_put(struct gpumem_pool *pool, unsigned long long h)
{
    if (pool->nhandles == pool->handles_cap) {
        size_t cap = pool->handles_cap ? pool->handles_cap * 2 : 64;
        unsigned long long *n = realloc(pool->handles, cap * sizeof *n);
        if (!n)
            return -1;
        pool->handles = n;
        pool->handles_cap = cap;
    }
    pool->handles[pool->nhandles++] = h;
    return 0;
}

/* The free block of seg that holds page i (no block needs the page, so one does). */
static gpumem__pblk *block_over(const struct gpumem_pool *pool, gpumem__pseg *seg, size_t i)
{
    uintptr_t a = seg->base + i * pool->granule;
    gpumem__pblk *b = seg->first;
    while (b && !(a - b->base < b->size))
        b = b->next;
    return b;
}

/* Moves mapped page i of seg, which no block needs, to the caller: its memory is the
 * caller's to map elsewhere now, and its old address range becomes a retiring block until the
 * work queued on its stream so far is done; a request on another stream waits for that on
 * the device. Returns 0 and the handle, or -1 (nothing changed). */
static int steal(struct gpumem_pool *pool, gpumem__pseg *seg, size_t i, cudaStream_t to,
                 unsigned long long *h)
{
    gpumem__pblk *f = block_over(pool, seg, i);
    uintptr_t a = seg->base + i * pool->granule;
    if (!f || f->state != GPUMEM__BLK_FREE || f->base > a || f->base + f->size < a + pool->granule)
        return -1;
    void *ev = gpumem__pool_event_get(pool);
    if (!ev)
        return -1;
    int err = gpumem__be->event_record(ev, seg->arena->stream);
    if (!err && to != seg->arena->stream)
        err = gpumem__be->stream_wait_event(to, ev);
    gpumem__pending *p = err ? NULL : malloc(sizeof *p);
    if (!p) {
        gpumem__pool_event_put(pool, ev);
        return -1;
    }
    gpumem__parena *ar = seg->arena;
    gpumem__bin_remove(ar, f);
    if (f->base < a) { /* the part below stays free */
        gpumem__blk_split(pool, f, a - f->base);
        gpumem__pblk *r = f->next;
        gpumem__bin_insert(ar, f);
        if (!r || r->base != a) /* no host memory to split: f is whole, and back */
            goto undo;
        gpumem__bin_remove(ar, r);
        f = r;
    }
    if (f->size > pool->granule)
        gpumem__blk_split(pool, f, pool->granule);
    if (f->size > pool->granule) {
        gpumem__blk_merge_free(pool, f);
        goto undo;
    }
    f->state = GPUMEM__BLK_RETIRING;
    seg->pages[i].state = GPUMEM__PAGE_RETIRING;
    seg->stealable--;
    *h = seg->pages[i].handle;
    p->block = f;
    p->event = ev;
    gpumem__pool_pending_push(pool, p);
    pool->remaps++;
    return 0;
undo:
    free(p);
    gpumem__pool_event_put(pool, ev);
    return -1;
}

/* A mapped page no block needs, moved to the caller; the requesting arena's own first, and in
 * each range the highest first. Requests take the lowest free blocks that are mapped, so the
 * pages in use gather at the bottom of each range; a page taken from the middle would cut a
 * free run that the next request of its size finds mapped, and that request would move a page
 * in turn. Replayed on the simulated device, the variable-length transformer loop's recorded
 * stream (bench/traces/varlen.log.gz, 55,939 operations) mapped pages 37,348 times when pages
 * moved bottom first, 2,727 times top first, for the same memory.
 *
 * Another stream's pages move only when that stream is idle (it took no block in the last
 * GPUMEM__POOL_IDLE_TAKES takes), or when any is set (the pool is at its limit). Two streams
 * that each take a block of the same size in turn would otherwise move its pages back and forth
 * on every request: on the simulated device, 16 MiB on two streams in turn moved 8 pages a
 * request (7,992 in 1,000; docs/perf/pools-2026-12-07b-h100.md has the replay that shows it),
 * about 0.6 ms of CUDA calls a request on an H100 (78 us a move), where keeping each
 * stream's pages costs 16 MiB more and moves none. Memory that only an idle stream holds
 * still goes where it is needed, and out of memory gives back every page no block needs
 * (gpumem__arena_trim) before the request fails. */
static int steal_any(struct gpumem_pool *pool, gpumem__parena *mine, cudaStream_t to, int any,
                     unsigned long long *h)
{
    for (int pass = 0; pass < 2; pass++) {
        for (gpumem__pstream *ps = pool->mru; ps; ps = ps->next) {
            if (pass == 1 && ps->stream != mine->stream && !any &&
                pool->takes - ps->last_take < GPUMEM__POOL_IDLE_TAKES)
                continue;
            for (int k = 0; k < 2; k++) {
                gpumem__parena *a = &ps->arena[k];
                if ((a == mine) != (pass == 0))
                    continue;
                for (gpumem__pseg *s = a->segs; s; s = s->next) {
                    for (size_t i = s->hwm; s->stealable && i-- > 0;)
                        if (s->pages[i].state == GPUMEM__PAGE_MAPPED && !s->pages[i].need &&
                            steal(pool, s, i, to, h) == 0)
                            return 0;
                }
            }
        }
    }
    return -1;
}

/* Physical memory for one page: spare; new while the pool holds fewer pages than those needed
 * now, one, and a sixth of their peak (GPUMEM__POOL_SPARE_SHARE), so that free pages stay where
 * they were freed rather than move at once; else moved from a page no block needs (of this
 * stream, or of an idle one; of any at the pool's limit: steal_any); else new. The share
 * trades memory for moves, each about 78 us of CUDA calls on an H100 (42.7 us setting access,
 * 31.9 unmapping, 3.1 mapping). Replayed on the simulated device, the recorded streams of
 * bench/traces (variable lengths, fixed shapes, a server loop, CuPy) move 163, 2, 176 and 20
 * pages with a sixth, for peak reserved 1.12, 1.06, 1.06 and 1.18 times the peak requested;
 * with a twentieth 361, 9, 262 and 66 for 1.08, 1.06, 1.03 and 1.16; with a quarter 23, 2,
 * 63 and 5 for 1.20, 1.06, 1.13 and 1.22. In the variable-length PyTorch loop on an H100
 * (docs/perf/pools-2026-12-07c-h100.md), a twentieth moved 590 to 850 pages a run (60 to 77
 * ms of CUDA calls) and ran 1.7 % slower than PyTorch's expandable segments by the median of
 * 11 paired rounds; a sixth moves 300 (about 40 ms) and runs at their speed (26 rounds:
 * median +0.2 %, faster in 13), holding 592 MiB against their 658; a quarter holds 636 MiB. */
static int handle_get(struct gpumem_pool *pool, gpumem__parena *a, unsigned long long *h)
{
    if (pool->nhandles) {
        *h = pool->handles[--pool->nhandles];
        return 0;
    }
    int roomy = pool->pages_held < pool->pages_needed + 1 +
                pool->pages_needed_peak / GPUMEM__POOL_SPARE_SHARE;
    int full = gpumem__pool_over_limit(pool, pool->granule);
    if ((!roomy || full) && steal_any(pool, a, a->stream, full, h) == 0)
        return 0;
    if (full)
        return GPUMEM__POOL_OVER_LIMIT;
    int err = page_create(pool, h);
    if (err)
        return err;
    pool->pages_held++;
    pool->st.reserved += pool->granule;
    return 0;
}

/* Page pg becomes needed by one more block. */
static void page_needed(struct gpumem_pool *pool, gpumem__pseg *seg, gpumem__ppage *pg)
{
    if (pg->need++ == 0) {
        if (pg->state == GPUMEM__PAGE_MAPPED)
            seg->stealable--;
        if (++pool->pages_needed > pool->pages_needed_peak)
            pool->pages_needed_peak = pool->pages_needed;
    }
}

/* Page pg is needed by one block fewer. */
static void page_unneeded(struct gpumem_pool *pool, gpumem__pseg *seg, gpumem__ppage *pg)
{
    if (--pg->need == 0) {
        seg->stealable++;
        pool->pages_needed--;
    }
}

/* Block b (in use now) needs its pages: counts it on each, and maps those not mapped, one
 * page a call. (Setting access costs about 29 us a page on an H100 whether one page a call or
 * eight, so mapping a run at once saves calls, not time.) On failure, undoes what it did. */
int gpumem__pages_need(struct gpumem_pool *pool, gpumem__pblk *b, int *missed)
{
    gpumem__pseg *seg = b->seg;
    size_t lo, hi, i;
    int err = 0;
    gpumem__pages_span(pool, b, &lo, &hi);
    for (i = lo; i < hi; i++) {
        gpumem__ppage *pg = &seg->pages[i];
        if (pg->state == GPUMEM__PAGE_MAPPED) {
            page_needed(pool, seg, pg);
            continue;
        }
        unsigned long long h = 0;
        err = handle_get(pool, seg->arena, &h);
        if (!err)
            err = page_map(pool, seg->base + i * pool->granule, h);
        if (err) {
            if (h)
                gpumem__pages_handle_put(pool, h);
            break;
        }
        *missed = 1;
        pg->handle = h;
        pg->state = GPUMEM__PAGE_MAPPED;
        seg->stealable++; /* mapped, not needed yet: page_needed counts it */
        page_needed(pool, seg, pg);
        if (i >= seg->hwm)
            seg->hwm = i + 1;
    }
    if (err) {
        for (size_t j = lo; j < i; j++)
            page_unneeded(pool, seg, &seg->pages[j]);
    }
    return err;
}

void gpumem__pages_unneed(struct gpumem_pool *pool, gpumem__pblk *b)
{
    size_t lo, hi;
    gpumem__pages_span(pool, b, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        page_unneeded(pool, b->seg, &b->seg->pages[i]);
}


/* A pending entry whose event passed: the retiring page's old mapping goes, or the deferred
 * block comes back to its arena. */
static void settle_one(struct gpumem_pool *pool, gpumem__pblk *b)
{
    if (b->state == GPUMEM__BLK_RETIRING) {
        gpumem__pseg *seg = b->seg;
        size_t i = (b->base - seg->base) / pool->granule;
        if (page_unmap(pool, b->base) == 0) {
            seg->pages[i].state = GPUMEM__PAGE_UNMAPPED;
            seg->pages[i].handle = 0;
        }
        /* If CUDA refused, the old mapping stays; the address range is not used again. */
        if (seg->pages[i].state != GPUMEM__PAGE_UNMAPPED)
            return;
    }
    gpumem__blk_free(pool, b);
}

void gpumem__arena_settle(struct gpumem_pool *pool, int wait)
{
    int token;
    if (gpumem__pool_dev_enter(pool, &token) != 0)
        return;
    while (pool->pending) {
        gpumem__pending *p = pool->pending;
        int err = wait ? gpumem__be->event_sync(p->event) : gpumem__be->event_query(p->event);
        if (err == cudaErrorNotReady)
            break;
        /* Done, or the event failed (a dead context): nothing waits any more either way. */
        pool->pending = p->next;
        if (!pool->pending)
            pool->pending_tail = NULL;
        settle_one(pool, p->block);
        gpumem__pool_event_put(pool, p->event);
        free(p);
    }
    gpumem__pool_dev_leave(token);
}


/* Unmaps every page of the pool that no block needs; its memory is released. The device
 * is synchronized first by the caller. */
int gpumem__pages_unmap_unneeded(struct gpumem_pool *pool)
{
    int err = 0;
    for (gpumem__pstream *ps = pool->mru; ps; ps = ps->next) {
        for (int k = 0; k < 2; k++) {
            for (gpumem__pseg *s = ps->arena[k].segs; s; s = s->next) {
                for (size_t i = 0; s->stealable && i < s->hwm; i++) {
                    gpumem__ppage *pg = &s->pages[i];
                    if (pg->state != GPUMEM__PAGE_MAPPED || pg->need)
                        continue;
                    int e = page_unmap(pool, s->base + i * pool->granule);
                    if (!e && gpumem__pages_handle_put(pool, pg->handle) != 0) {
                        e = page_release(pool, pg->handle); /* no room: release it now */
                        if (!e) {
                            pool->pages_held--;
                            pool->st.reserved -= pool->granule;
                        }
                    }
                    if (e) {
                        err = err ? err : e;
                        continue;
                    }
                    pg->state = GPUMEM__PAGE_UNMAPPED;
                    pg->handle = 0;
                    s->stealable--;
                }
            }
        }
    }
    while (pool->nhandles) {
        int e = page_release(pool, pool->handles[pool->nhandles - 1]);
        if (e)
            return err ? err : e;
        pool->nhandles--;
        pool->pages_held--;
        pool->st.reserved -= pool->granule;
    }
    return err;
}


/* The bytes of free block b that lie on mapped pages, and the longest mapped run in it. */
size_t gpumem__pages_mapped_in(const struct gpumem_pool *pool, const gpumem__pblk *b, size_t *run)
{
    const gpumem__pseg *seg = b->seg;
    if (!seg->pages) {
        *run = b->size;
        return b->size;
    }
    size_t lo, hi, total = 0, cur = 0;
    *run = 0;
    gpumem__pages_span(pool, b, &lo, &hi);
    for (size_t i = lo; i < hi && i < seg->hwm; i++) {
        uintptr_t ps = seg->base + i * pool->granule, pe = ps + pool->granule;
        uintptr_t s = ps > b->base ? ps : b->base;
        uintptr_t e = pe < b->base + b->size ? pe : b->base + b->size;
        if (seg->pages[i].state == GPUMEM__PAGE_MAPPED) {
            total += e - s;
            cur += e - s;
            if (cur > *run)
                *run = cur;
        } else {
            cur = 0;
        }
    }
    return total;
}



/* Unmaps every mapped page of stream c's arenas, whose blocks are all free and whose work is
 * done; the memory joins the pool's spare pages. */
int gpumem__pages_unmap_stream(struct gpumem_pool *pool, gpumem__pstream *c)
{
    int token;
    int err = gpumem__pool_dev_enter(pool, &token);
    for (int k = 0; k < 2 && !err; k++) {
        for (gpumem__pseg *s = c->arena[k].segs; s && !err; s = s->next) {
            for (size_t i = 0; i < s->hwm && !err; i++) {
                gpumem__ppage *pg = &s->pages[i];
                if (pg->state != GPUMEM__PAGE_MAPPED)
                    continue;
                err = page_unmap(pool, s->base + i * pool->granule);
                if (!err && gpumem__pages_handle_put(pool, pg->handle) != 0) {
                    page_map(pool, s->base + i * pool->granule, pg->handle);
                    err = cudaErrorMemoryAllocation;
                }
                if (!err) {
                    pg->state = GPUMEM__PAGE_UNMAPPED;
                    pg->handle = 0;
                    s->stealable--;
                }
            }
        }
    }
    gpumem__pool_dev_leave(token);
    return err;
}

/* Pools: caching allocators whose blocks are released with gpumem_free.
 *
 * A pool block is an ordinary registry record with its pool set, so every tool gpumem has
 * (gpumem_query, double-free detection, leak reports, statistics, scopes) sees it; only the
 * final step of gpumem_free differs: free.c hands the block to gpumem__pool_release instead of
 * CUDA. Where blocks lie in the memory the pool holds, and how that memory grows and shrinks,
 * is pool_arena.c's: blocks carved from segments or page-mapped address ranges, split and
 * merged again, so that memory freed by one size serves any other.
 *
 * Size classes: requests up to 4 MiB are rounded to classes 256 bytes apart up to 2 KiB, then
 * 8 per doubling (each 1/8 of the power of two below it apart), so that a block exceeds its
 * request by less than 12.5 % from 2 KiB up and by less than 256 bytes below, and a thread
 * cache can hand a released block to the next request of its class. Larger requests are
 * carved at their size, rounded to the 256-byte alignment.
 *
 * Locking: one mutex per pool, held while blocks are carved or merged; the registry (sharded,
 * with its own locks) is updated outside it. In front of it, unless
 * GPUMEM_POOL_THREAD_CACHE=0, every thread keeps a cache of its own (tcache.c): a pair served
 * there takes no pool lock. To the pool, a block in a thread cache is in use; the statistics
 * add the thread caches back in. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "pool_internal.h"
#include "trace.h"

#define DEFAULT_CHUNK ((size_t)16 << 20)
#define INJECTED (-2)                  /* GPUMEM_FAIL_ALLOC chose this allocation to fail */
#define VMM_MIN_LIMIT_PAGES 64u        /* a smaller limit makes a device pool use segments */

/* Every pool, so that fork() can take each one's lock (gpumem__pool_at_fork). Only creation
 * and destruction take this lock; allocations and releases never do. */
static struct {
    pthread_mutex_t lock;
    gpumem_pool *head;
} all_pools = {PTHREAD_MUTEX_INITIALIZER, NULL};

static void pools_link(gpumem_pool *pool)
{
    pthread_mutex_lock(&all_pools.lock);
    pool->next = all_pools.head;
    if (all_pools.head)
        all_pools.head->prev = pool;
    all_pools.head = pool;
    pthread_mutex_unlock(&all_pools.lock);
}

static void pools_unlink(gpumem_pool *pool)
{
    pthread_mutex_lock(&all_pools.lock);
    if (pool->prev)
        pool->prev->next = pool->next;
    else
        all_pools.head = pool->next;
    if (pool->next)
        pool->next->prev = pool->prev;
    pthread_mutex_unlock(&all_pools.lock);
}

int gpumem__pool_chunk_holding(const void *p, int *kind, gpumem_site *made)
{
    int found = 0;
    pthread_mutex_lock(&all_pools.lock);
    for (gpumem_pool *pool = all_pools.head; pool && !found; pool = pool->next) {
        pthread_mutex_lock(&pool->lock);
        found = gpumem__arena_holds(pool, (uintptr_t)p);
        if (found) {
            *kind = pool->kind;
            *made = pool->site;
        }
        pthread_mutex_unlock(&pool->lock);
    }
    pthread_mutex_unlock(&all_pools.lock);
    return found;
}

/* fork(): the list, then every pool's lock (fork.c). In the child, no thread is inside a call
 * on a pool any more: threads counted in users are the parent's, and would keep a destroy in
 * the child refusing for ever. */
void gpumem__pool_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE) {
        pthread_mutex_lock(&all_pools.lock);
        for (gpumem_pool *p = all_pools.head; p; p = p->next)
            pthread_mutex_lock(&p->lock);
        return;
    }
    for (gpumem_pool *p = all_pools.head; p; p = p->next) {
        if (phase == GPUMEM__FORK_CHILD)
            atomic_store(&p->users, 0);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&all_pools.lock);
}

/* Entering and leaving a call on a pool, so that destroying it while another thread is
 * inside fails with GPUMEM_EBUSY rather than freeing the pool under that thread. A call that
 * starts after destroy has begun is refused; one that starts after destroy returned uses freed
 * memory, as any use after free does. */
static int pool_enter(gpumem_pool *pool)
{
    atomic_fetch_add(&pool->users, 1);
    if (GPUMEM__LIKELY(!atomic_load(&pool->dying)))
        return 1;
    atomic_fetch_sub(&pool->users, 1);
    return 0;
}

static void pool_leave(gpumem_pool *pool)
{
    atomic_fetch_sub(&pool->users, 1);
}

/* The pool whose failing call is running the error handler on this thread: the call counts in
 * the pool's users, and a destroy from the handler must not take it for another thread. */
static _Thread_local const gpumem_pool *handling_failure_of;

_Static_assert(GPUMEM__TC_CLASSES <= GPUMEM__POOL_CLASSES, "thread-cache classes are classes");

/* The trace hears of every change of reserved memory (GPUMEM_TRACE: gpumem report draws it
 * against the requested bytes). Locked. */
static void trace_reserved(gpumem_pool *pool)
{
    if (GPUMEM__UNLIKELY(pool->st.reserved != pool->traced_reserved)) {
        pool->traced_reserved = pool->st.reserved;
        gpumem__trace_pool(pool, pool->kind, pool->device, pool->st.reserved,
                           pool->st.in_use);
    }
}

static void raise_peaks(gpumem_pool *pool)
{
    if (pool->st.reserved > pool->st.peak_reserved)
        pool->st.peak_reserved = pool->st.reserved;
    if (pool->st.in_use > pool->st.peak_in_use)
        pool->st.peak_in_use = pool->st.in_use;
    if (pool->st.requested > pool->st.peak_requested)
        pool->st.peak_requested = pool->st.requested;
}

/* A block of n bytes for stream, counted in use and as a hit or a miss. Locked. */
static int take(gpumem_pool *pool, size_t n, cudaStream_t stream, gpumem__pblk **out)
{
    int missed = 0;
    int err = gpumem__arena_take(pool, n, stream, out, &missed);
    if (err)
        return err;
    if (missed)
        pool->st.misses++;
    else
        pool->st.hits++;
    pool->st.in_use += (*out)->size;
    pool->st.blocks_in_use++;
    return 0;
}

/* Gives block b, in use, back for reuse on stream to. Locked. */
static int give(gpumem_pool *pool, gpumem__pblk *b, cudaStream_t to)
{
    size_t size = b->size;
    int err = gpumem__arena_give(pool, b, to);
    if (!err) {
        pool->st.in_use -= size;
        pool->st.blocks_in_use--;
    }
    return err;
}

/* ---- errors ---- */

static void append_held(gpumem_error *e, const gpumem_pool_stats_t *held, uint64_t limit)
{
    char r[32], c[32], u[32], l[32], big[32];
    gpumem__err_append(e, "\n    the pool held %s reserved: %s cached, %s in use in %llu block%s",
                       gpumem_format_bytes(held->reserved, r, sizeof r),
                       gpumem_format_bytes(held->cached, c, sizeof c),
                       gpumem_format_bytes(held->in_use, u, sizeof u),
                       (unsigned long long)held->blocks_in_use,
                       held->blocks_in_use == 1 ? "" : "s");
    if (limit)
        gpumem__err_append(e, "; its limit is %s", gpumem_format_bytes(limit, l, sizeof l));
    if (!held->cached)
        return;
    gpumem__err_append(e, "\n    cached by size:");
    static const char *const ranges[GPUMEM_POOL_SIZE_RANGES] = {
        "under 64 KiB", "64 KiB-1 MiB", "1-16 MiB", "16-256 MiB", "256 MiB and over"};
    const char *sep = " ";
    for (unsigned i = 0; i < GPUMEM_POOL_SIZE_RANGES; i++) {
        if (!held->cached_by_size[i])
            continue;
        gpumem__err_append(e, "%s%s %s", sep, gpumem_format_bytes(held->cached_by_size[i], c,
                                                                  sizeof c), ranges[i]);
        sep = ", ";
    }
    gpumem__err_append(e, "; the largest free block is %s; fragmentation %.0f %%",
                       gpumem_format_bytes(held->largest_free, big, sizeof big),
                       held->fragmentation * 100.0);
}

static void *fail_alloc(const gpumem_pool *pool, size_t bytes, int err, int retried,
                        const gpumem_pool_stats_t *held, gpumem_site site)
{
    char where[256], size_text[32];
    const char *kind = gpumem_kind_name(pool->kind);
    int ours = err == GPUMEM__POOL_OVER_LIMIT || err == INJECTED;
    int code = ours ? GPUMEM_ENOMEM : gpumem__status_from_cuda(err);
    gpumem__trace_failed(pool->kind, bytes, pool->device, site, 0, code, ours ? 0 : err);
    gpumem_error *e = gpumem__err_begin(code, "gpumem_pool_alloc", site);
    e->requested = bytes;
    if (!ours)
        gpumem__err_cuda(e, err);
    gpumem_format_bytes(bytes, size_text, sizeof size_text);
    gpumem__site_str(site, where, sizeof where);
    if (code == GPUMEM_ENOMEM) {
        gpumem__err_append(e, "out of memory: %s %s memory requested from a %s pool at %s",
                           size_text, kind, kind, where);
        append_held(e, held, pool->limit);
        if (err == INJECTED)
            gpumem__err_append(e, "\n    injected by GPUMEM_FAIL_ALLOC=%llu; CUDA was not called",
                               (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_FAIL_ALLOC));
        else if (err == GPUMEM__POOL_OVER_LIMIT)
            gpumem__err_append(e, "\n    the request would take the pool past its limit");
        else
            gpumem__err_append(e, "\n    CUDA said %s: %s (consumed by gpumem)", e->cuda_name,
                               e->cuda_string);
        if (retried)
            gpumem__err_append(e, "\n    cached blocks were released and the request retried "
                                  "once; it failed again");
        gpumem__err_oom(e, pool->kind == GPUMEM_KIND_DEVICE ? pool->device : -1);
        gpumem__err_append(e, "\n  hint: release blocks still live, or raise the limit");
    } else {
        gpumem__err_append(e, "gpumem_pool_alloc of %s from a %s pool failed at %s: %s: %s",
                           size_text, kind, where, e->cuda_name, e->cuda_string);
    }
    const gpumem_pool *outer = handling_failure_of;
    handling_failure_of = pool;
    gpumem__err_raise(e);
    handling_failure_of = outer;
    return NULL;
}

static void *fail_simple(int code, const char *what, gpumem_site site)
{
    char where[256];
    gpumem_error *e = gpumem__err_begin(code, "gpumem_pool_alloc", site);
    gpumem__err_append(e, "gpumem_pool_alloc: %s; nothing was allocated\n    at %s", what,
                       gpumem__site_str(site, where, sizeof where));
    gpumem__err_raise(e);
    return NULL;
}

static void *fail_dying(const gpumem_pool *pool, gpumem_site site)
{
    char where[256], made[256];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EBUSY, "gpumem_pool_alloc", site);
    gpumem__err_append(e, "gpumem_pool_alloc at %s: the %s pool made at %s is being destroyed "
                          "by another thread; nothing was allocated\n  hint: destroy a pool "
                          "only once every thread is done with it",
                       gpumem__site_str(site, where, sizeof where), gpumem_kind_name(pool->kind),
                       gpumem__site_str(pool->site, made, sizeof made));
    gpumem__err_raise(e);
    return NULL;
}

/* ---- creation ---- */

/* The design a pool gets: the one asked for (options, else GPUMEM_POOL_DESIGN), where it can
 * work. Pinned pools carve chunks (host memory cannot be mapped by pages). A device pool maps
 * pages by default where the device can, unless compute-sanitizer's NVTX heaps are wanted
 * (they are segments CUDA gave in one piece) or a limit is set below 64 pages (the limit
 * would count in pages of 2 MiB; below one page no block could be served at all); otherwise
 * it carves segments. Pages are the default because on a variable-length training loop on an
 * H100 (docs/perf/gpu-2026-12-05c-h100.md, medians of 3) they held 572 MiB against 744 MiB for
 * segments and 658 MiB for PyTorch's expandable segments, at 243.3 steps/s against 242.1 and
 * 246.6, and held less than expandable segments on each of the four recorded streams. */
static int design_of(int kind, int device, const gpumem_pool_options_t *options,
                     size_t *granule)
{
    static const char *const names[] = {"auto", "vmm", "segments", "classes"};
    unsigned want = options ? options->design : 0;
    if (!want) {
        const char *env = gpumem__opt_str(GPUMEM__OPT_POOL_DESIGN);
        for (unsigned i = 0; i < 4; i++)
            if (strcmp(env, names[i]) == 0)
                want = i;
    }
    *granule = 0;
    if (kind != GPUMEM_KIND_DEVICE)
        return GPUMEM__DESIGN_SEGMENTS;
    if (want == GPUMEM_POOL_DESIGN_CLASSES)
        return GPUMEM__DESIGN_CLASSES;
    if (want == GPUMEM_POOL_DESIGN_SEGMENTS || gpumem__hot.nvtx_on)
        return GPUMEM__DESIGN_SEGMENTS;
    int token;
    if (gpumem__be->device_push(device, &token) != 0)
        return GPUMEM__DESIGN_SEGMENTS;
    if (gpumem__be->vmm_granularity(device, granule) != 0)
        *granule = 0;
    if (token)
        gpumem__be->device_pop(token);
    uint64_t limit = options ? options->limit : 0;
    if (!*granule || (limit && limit < (uint64_t)VMM_MIN_LIMIT_PAGES * *granule))
        return GPUMEM__DESIGN_SEGMENTS;
    return GPUMEM__DESIGN_VMM;
}

/* The address range of a large arena: the device's memory, in whole pages. */
static size_t va_bytes_of(int device, size_t granule)
{
    size_t free_bytes = 0, total = 0;
    if (gpumem__be->mem_info(device, &free_bytes, &total) != 0 || total < granule)
        total = (size_t)1 << 34;
    return (total + granule - 1) / granule * granule;
}

static void fail_create(int err, int kind, int device, gpumem_site site)
{
    char where[256];
    gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), "gpumem_pool_create",
                                        site);
    gpumem__err_cuda(e, err);
    gpumem__err_append(e, "gpumem_pool_create of a %s pool (device %d) failed at %s: %s: %s",
                       gpumem_kind_name(kind), device, gpumem__site_str(site, where, sizeof where),
                       e->cuda_name, e->cuda_string);
    gpumem__err_raise(e);
}

gpumem_pool *gpumem_pool_create_at(int kind, int device, const gpumem_pool_options_t *options,
                                   gpumem_site site)
{
    static const char fn[] = "gpumem_pool_create";
    char where[256];
    if (kind != GPUMEM_KIND_DEVICE && kind != GPUMEM_KIND_PINNED) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, site);
        gpumem__err_append(e, "%s: kind %d is not GPUMEM_KIND_DEVICE or GPUMEM_KIND_PINNED\n"
                              "    at %s", fn, kind, gpumem__site_str(site, where, sizeof where));
        gpumem__err_raise(e);
        return NULL;
    }
    if (gpumem__ready(fn, site) != GPUMEM_OK)
        return NULL;
    /* Before the first pool exists: gpumem__hot.nvtx_on never changes after. */
    gpumem__nvtx_start();
    gpumem_pool *pool = calloc(1, sizeof *pool);
    int err = pool ? gpumem__arena_setup(pool) : cudaErrorMemoryAllocation;
    if (!err && kind == GPUMEM_KIND_PINNED)
        err = gpumem__be->current_device(&device);
    if (!err) {
        int dev_count = 0;
        if (kind == GPUMEM_KIND_DEVICE && (gpumem__be->device_count(&dev_count) != 0 ||
                                           device < 0 || device >= dev_count))
            err = cudaErrorInvalidDevice;
    }
    if (!err) {
        pool->design = design_of(kind, device, options, &pool->granule);
        if (kind == GPUMEM_KIND_DEVICE && pool->design != GPUMEM__DESIGN_VMM)
            err = gpumem__be->mempool_create(device, &pool->cuda_pool);
        else if (pool->design == GPUMEM__DESIGN_VMM)
            pool->va_bytes = va_bytes_of(device, pool->granule);
    }
    if (err) {
        if (pool)
            gpumem__arena_free_tables(pool);
        free(pool);
        fail_create(err, kind, device, site);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pool->site = site;
    pool->kind = kind;
    pool->device = device;
    pool->tcache = gpumem__opt_bool(GPUMEM__OPT_POOL_THREAD_CACHE);
    pool->limit = options ? options->limit : 0;
    pool->runtime_owned = options && (options->flags & GPUMEM_POOL_RUNTIME_OWNED);
    size_t chunk_bytes = options && options->chunk_bytes ? (size_t)options->chunk_bytes
                                                         : DEFAULT_CHUNK;
    if (pool->limit && chunk_bytes > pool->limit)
        chunk_bytes = (size_t)pool->limit; /* a chunk the limit forbids would refuse everything */
    chunk_bytes &= ~(size_t)255;
    pool->chunk_bytes = chunk_bytes < 4096 ? 4096 : chunk_bytes;
    pools_link(pool);
    gpumem__err_clear();
    return pool;
}

/* ---- allocation ---- */

void *gpumem_pool_alloc_at(gpumem_pool *pool, size_t count, size_t size, cudaStream_t stream,
                           gpumem_site site);

/* The pool's part of a request the thread cache did not serve: a block from the arena, with
 * one retry after giving back what the caches hold. Returns the base, or 0 with the error
 * raised. */
static uintptr_t alloc_from_pool(gpumem_pool *pool, size_t bytes, size_t csize,
                                 cudaStream_t stream, gpumem__pblk **out, gpumem_site site)
{
    gpumem_pool_stats_t held = {0};
    int retried = 0;
    if (GPUMEM__UNLIKELY(!pool_enter(pool))) {
        fail_dying(pool, site);
        return 0;
    }
    pthread_mutex_lock(&pool->lock);
    int err = csize ? take(pool, csize, stream, out) : cudaErrorMemoryAllocation;
    if (GPUMEM__UNLIKELY(err == GPUMEM__POOL_OVER_LIMIT || err == cudaErrorMemoryAllocation) &&
        csize) {
        /* Cached blocks may be what stands in the way, in this pool's arenas or in the
         * threads' caches: give them back and try once more. */
        pthread_mutex_unlock(&pool->lock);
        gpumem_pool_stats(pool, &held);
        if (pool->tcache)
            gpumem__tc_drain(pool, 0);
        pthread_mutex_lock(&pool->lock);
        pool->st.oom_retries++;
        retried = 1;
        gpumem__arena_trim(pool);
        trace_reserved(pool);
        err = take(pool, csize, stream, out);
    }
    if (GPUMEM__UNLIKELY(err)) {
        pthread_mutex_unlock(&pool->lock);
        if (!retried)
            gpumem_pool_stats(pool, &held);
        fail_alloc(pool, bytes, err, retried, &held, site);
        pool_leave(pool);
        return 0;
    }
    pool->st.requested += bytes;
    raise_peaks(pool);
    trace_reserved(pool);
    uintptr_t base = (*out)->base;
    pthread_mutex_unlock(&pool->lock);
    pool_leave(pool); /* the block, in use, keeps the pool from being destroyed now */
    return base;
}

/* The block could not be recorded (no host memory for the registry): it goes back. */
static void undo_alloc(gpumem_pool *pool, gpumem__pblk *b, cudaStream_t key, unsigned cls,
                       size_t csize, uintptr_t base, size_t bytes, gpumem_site site)
{
    gpumem_pool_stats_t held = {0};
    int entered = pool_enter(pool); /* the block goes back: keep destroy out until done */
    if (b) {
        pthread_mutex_lock(&pool->lock);
        pool->st.requested -= bytes;
        give(pool, b, b->seg->arena->stream);
        pthread_mutex_unlock(&pool->lock);
    } else if (!gpumem__tc_push(pool, key, cls, csize, base, bytes, 1)) {
        gpumem__tc_counts undo = {0, 0, -(int64_t)bytes, -1};
        gpumem__pool_tc_return(pool, key, cls, &base, 1);
        gpumem__pool_tc_fold(pool, &undo);
    }
    gpumem_pool_stats(pool, &held);
    fail_alloc(pool, bytes, cudaErrorMemoryAllocation, 0, &held, site);
    if (entered)
        pool_leave(pool);
}

static void *pool_alloc(gpumem_pool *pool, size_t count, size_t size, cudaStream_t stream,
                        gpumem_site site)
{
    size_t bytes;
    if (GPUMEM__UNLIKELY(__builtin_mul_overflow(count, size, &bytes))) {
        char what[160];
        snprintf(what, sizeof what, "count=%zu * size=%zu overflows size_t", count, size);
        return fail_simple(GPUMEM_EOVERFLOW, what, site);
    }
    if (bytes == 0) {
        gpumem__err_clear();
        return NULL;
    }
    unsigned cls = 0;
    size_t csize = gpumem__pool_round(pool, bytes, &cls);
    cudaStream_t key = pool->kind == GPUMEM_KIND_DEVICE ? stream : NULL;
    gpumem__pblk *b = NULL;
    if (GPUMEM__UNLIKELY(gpumem__fail_injected())) {
        gpumem_pool_stats_t held = {0};
        if (!pool_enter(pool))
            return fail_dying(pool, site);
        gpumem_pool_stats(pool, &held);
        fail_alloc(pool, bytes, INJECTED, 0, &held, site);
        pool_leave(pool);
        return NULL;
    }
    /* The calling thread's cache first: no pool lock. A block from there needs no pool_enter
     * either: it is in use to the pool, so a destroy refuses until it is released, and the
     * destroy's drain waits for a pop under way. */
    uintptr_t base = csize && pool->tcache ? gpumem__tc_pop(pool, key, cls, csize, bytes) : 0;
    if (!base && !(base = alloc_from_pool(pool, bytes, csize, key, &b, site)))
        return NULL;

    gpumem__rec r = {
        .base = base,
        .bytes = bytes,
        .stream = key,
        .site = site,
        .seq = gpumem__seq_take(),
        .thread = gpumem__thread_id(),
        .device = pool->device,
        .kind = (unsigned char)pool->kind,
        .pool = pool,
    };
    if (GPUMEM__UNLIKELY(gpumem__hot.backtrace))
        r.stack = gpumem__stack_capture(0);
    if (GPUMEM__UNLIKELY(gpumem__reg_insert(&r) != 0)) {
        undo_alloc(pool, b, key, cls, csize, base, bytes, site);
        return NULL;
    }
    if (GPUMEM__UNLIKELY(gpumem__hot.nvtx_on))
        gpumem__nvtx_region(base, bytes, 1);
    gpumem__stats_alloc(pool->kind, pool->device, bytes);
    gpumem__trace_alloc(&r);
    gpumem__err_clear();
    return (void *)base;
}

void *gpumem_pool_alloc_at(gpumem_pool *pool, size_t count, size_t size, cudaStream_t stream,
                           gpumem_site site)
{
    if (GPUMEM__UNLIKELY(!pool))
        return fail_simple(GPUMEM_EINVAL, "the pool is NULL", site);
    return pool_alloc(pool, count, size, stream, site);
}

/* ---- release ---- */

int gpumem__pool_runtime_owned(const struct gpumem_pool *pool)
{
    return pool->runtime_owned; /* set at creation, never changed: no lock */
}

size_t gpumem__pool_block_size(struct gpumem_pool *pool, uintptr_t base)
{
    pthread_mutex_lock(&pool->lock);
    const gpumem__pblk *b = gpumem__arena_find(pool, base);
    size_t size = b && b->state == GPUMEM__BLK_USED ? b->size : 0;
    pthread_mutex_unlock(&pool->lock);
    return size;
}

int gpumem__pool_release(struct gpumem_pool *pool, const gpumem__rec *r, int async,
                         cudaStream_t stream)
{
    cudaStream_t to = pool->kind != GPUMEM_KIND_DEVICE ? NULL : async ? stream : r->stream;
    unsigned cls = 0;
    size_t size = gpumem__pool_round(pool, r->bytes, &cls);
    if (GPUMEM__LIKELY(pool->tcache) &&
        gpumem__tc_push(pool, to, cls, size, r->base, r->bytes, 0))
        return 0; /* kept by this thread's cache, for its next request on stream to */
    pthread_mutex_lock(&pool->lock);
    gpumem__pblk *b = gpumem__arena_find(pool, r->base);
    if (GPUMEM__UNLIKELY(!b || b->state != GPUMEM__BLK_USED)) {
        pthread_mutex_unlock(&pool->lock);
        return cudaErrorInvalidValue; /* the registry and the pool disagree: a gpumem bug */
    }
    int err = give(pool, b, to);
    if (!err)
        pool->st.requested -= r->bytes;
    pthread_mutex_unlock(&pool->lock);
    return err;
}

void gpumem__pool_tc_return(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls,
                            const uintptr_t *bases, unsigned n)
{
    (void)cls;
    pthread_mutex_lock(&pool->lock);
    for (unsigned i = 0; i < n; i++) {
        gpumem__pblk *b = gpumem__arena_find(pool, bases[i]);
        if (b && b->state == GPUMEM__BLK_USED) /* a thread cache holds only blocks in use */
            give(pool, b, stream);
    }
    pthread_mutex_unlock(&pool->lock);
}

void gpumem__pool_tc_fold(struct gpumem_pool *pool, const gpumem__tc_counts *c)
{
    pthread_mutex_lock(&pool->lock);
    pool->st.requested += (uint64_t)c->requested;
    pool->st.hits += (uint64_t)c->hits;
    pthread_mutex_unlock(&pool->lock);
}

/* ---- trim, statistics, destroy ---- */

int gpumem_pool_trim(gpumem_pool *pool)
{
    if (!pool)
        return GPUMEM_EINVAL;
    if (!pool_enter(pool))
        return GPUMEM_EBUSY;
    if (pool->tcache)
        gpumem__tc_drain(pool, 0);
    pthread_mutex_lock(&pool->lock);
    int err = gpumem__arena_trim(pool);
    trace_reserved(pool);
    pthread_mutex_unlock(&pool->lock);
    pool_leave(pool);
    if (err) {
        gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), "gpumem_pool_trim",
                                            (gpumem_site){NULL, NULL, 0});
        gpumem__err_cuda(e, err);
        gpumem__err_append(e, "gpumem_pool_trim: CUDA refused a release: %s: %s; the memory it "
                              "could not release stays cached", e->cuda_name, e->cuda_string);
        return gpumem__err_raise(e);
    }
    return GPUMEM_OK;
}

/* Adds the thread caches' blocks (held by visit) to the pool's figures, by size range. */
static void add_thread_caches(gpumem_pool_stats_t *st, const gpumem__tc_counts *tc,
                              const uint64_t *per_class)
{
    /* The pool counts blocks in thread caches as in use; they are cached. */
    st->in_use -= (uint64_t)tc->cached_bytes;
    st->blocks_in_use -= (uint64_t)tc->cached_blocks;
    st->blocks_cached += (uint64_t)tc->cached_blocks;
    st->requested += (uint64_t)tc->requested;
    st->hits += (uint64_t)tc->hits;
    for (unsigned k = 0; k < GPUMEM__TC_CLASSES; k++) {
        size_t size = gpumem__pool_class_size(k);
        unsigned r = size < ((size_t)64 << 10) ? 0 : size < ((size_t)1 << 20) ? 1 : 2;
        st->cached_by_size[r] += per_class[k] * size;
    }
}

int gpumem_pool_stats(gpumem_pool *pool, gpumem_pool_stats_t *stats)
{
    if (!pool || !stats)
        return GPUMEM_EINVAL;
    if (!pool_enter(pool))
        return GPUMEM_EBUSY;
    gpumem__tc_counts tc = {0, 0, 0, 0};
    uint64_t per_class[GPUMEM__TC_CLASSES] = {0};
    if (pool->tcache) {
        gpumem__tc_sum_begin(pool, &tc);
        gpumem__tc_sum_classes(pool, per_class);
    }
    pthread_mutex_lock(&pool->lock);
    *stats = pool->st;
    stats->largest_free = 0;
    memset(stats->cached_by_size, 0, sizeof stats->cached_by_size);
    gpumem__arena_stats(pool, stats);
    pthread_mutex_unlock(&pool->lock);
    if (pool->tcache)
        gpumem__tc_sum_end();
    pool_leave(pool);
    add_thread_caches(stats, &tc, per_class);
    stats->cached = stats->reserved - stats->in_use;
    stats->fragmentation = stats->reserved
        ? (double)(stats->reserved - stats->requested) / (double)stats->reserved : 0.0;
    stats->free_fragmentation = stats->cached
        ? 1.0 - (double)stats->largest_free / (double)stats->cached : 0.0;
    if (stats->free_fragmentation < 0.0)
        stats->free_fragmentation = 0.0;
    return GPUMEM_OK;
}

/* Destroy refused: calls on the pool are under way, others' or (from an error handler) this
 * thread's own failing allocation. */
static int busy_inside(const gpumem_pool *pool, int others, gpumem_site site)
{
    char where[256], made[256];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EBUSY, "gpumem_pool_destroy", site);
    gpumem__site_str(site, where, sizeof where);
    gpumem__site_str(pool->site, made, sizeof made);
    if (others > 0)
        gpumem__err_append(e, "gpumem_pool_destroy at %s: %d other thread%s %s inside a call on "
                              "the %s pool made at %s; nothing was released\n  hint: destroy a "
                              "pool only once every thread is done with it",
                           where, others, others == 1 ? "" : "s", others == 1 ? "is" : "are",
                           gpumem_kind_name(pool->kind), made);
    else
        gpumem__err_append(e, "gpumem_pool_destroy at %s: called from the error handler of a "
                              "failing gpumem_pool_alloc on the %s pool made at %s, which is "
                              "still inside that call; nothing was released\n  hint: destroy "
                              "the pool after the failed call has returned",
                           where, gpumem_kind_name(pool->kind), made);
    return gpumem__err_raise(e);
}

/* Fills the record, listing up to 8 live blocks with the sites the registry holds for them.
 * Called locked; the caller raises the error after unlocking, since the handler may call back
 * into this pool (free one of its blocks, read its statistics). */
static gpumem_error *busy_error(gpumem_pool *pool, gpumem_site site)
{
    char where[256], size_text[32];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EBUSY, "gpumem_pool_destroy", site);
    gpumem__err_append(e, "gpumem_pool_destroy at %s: the %s pool still has %llu live block%s "
                          "(%s requested); nothing was released",
                       gpumem__site_str(site, where, sizeof where), gpumem_kind_name(pool->kind),
                       (unsigned long long)pool->st.blocks_in_use,
                       pool->st.blocks_in_use == 1 ? "" : "s",
                       gpumem_format_bytes(pool->st.requested, size_text, sizeof size_text));
    unsigned shown = 0;
    for (size_t i = 0; i < pool->nbuckets; i++) {
        for (gpumem__pblk *b = pool->buckets[i]; b; b = b->hnext) {
            gpumem__rec r;
            if (b->state != GPUMEM__BLK_USED || shown == 8)
                continue;
            shown++;
            if (gpumem__reg_find((void *)b->base, &r))
                gpumem__err_append(e, "\n    %s at %p, allocated at %s, thread %u, #%llu",
                                   gpumem_format_bytes(r.bytes, size_text, sizeof size_text),
                                   (void *)b->base, gpumem__site_str(r.site, where, sizeof where),
                                   r.thread, (unsigned long long)r.seq);
            else
                gpumem__err_append(e, "\n    a block at %p", (void *)b->base);
        }
    }
    if (shown < pool->st.blocks_in_use)
        gpumem__err_append(e, "\n    and %llu more",
                           (unsigned long long)(pool->st.blocks_in_use - shown));
    gpumem__err_append(e, "\n  hint: release them with gpumem_free, then destroy the pool");
    return e;
}

static int refused_release(gpumem_pool *pool, int err, gpumem_site site)
{
    char where[256];
    atomic_store(&pool->dying, 0);
    pthread_mutex_unlock(&pool->lock);
    gpumem_error *e = gpumem__err_begin(err ? gpumem__status_from_cuda(err) : GPUMEM_ECUDA,
                                        "gpumem_pool_destroy", site);
    if (err)
        gpumem__err_cuda(e, err);
    gpumem__err_append(e, "gpumem_pool_destroy at %s: CUDA refused to release the pool's "
                          "memory (%s); the pool is still there",
                       gpumem__site_str(site, where, sizeof where),
                       err ? e->cuda_string : "a segment stayed");
    return gpumem__err_raise(e);
}

int gpumem_pool_destroy_at(gpumem_pool *pool, gpumem_site site)
{
    if (!pool)
        return GPUMEM_OK;
    if (pool->tcache)
        gpumem__tc_drain(pool, 1); /* no thread may keep a block of a pool that is gone */
    pthread_mutex_lock(&pool->lock);
    if (pool->st.blocks_in_use) {
        gpumem_error *e = busy_error(pool, site);
        pthread_mutex_unlock(&pool->lock);
        return gpumem__err_raise(e);
    }
    /* Another thread inside a call on this pool (between its steps, or in an error handler
     * called from it): refuse, rather than free the pool under it. */
    atomic_store(&pool->dying, 1);
    int inside = atomic_load(&pool->users);
    if (inside) {
        atomic_store(&pool->dying, 0);
        pthread_mutex_unlock(&pool->lock);
        return busy_inside(pool, inside - (handling_failure_of == pool), site);
    }
    int err = gpumem__arena_destroy(pool);
    if (!err && pool->cuda_pool) {
        int token;
        err = gpumem__be->device_push(pool->device, &token);
        if (!err)
            err = gpumem__be->mempool_destroy(pool->cuda_pool);
        if (token)
            gpumem__be->device_pop(token);
    }
    if (err || pool->nblocks)
        return refused_release(pool, err == cudaErrorInvalidValue ? 0 : err, site);
    pthread_mutex_unlock(&pool->lock);
    /* A call that started just now sees dying and leaves: let it, before the memory goes. */
    while (atomic_load(&pool->users))
        sched_yield();
    pools_unlink(pool);
    gpumem__arena_free_tables(pool);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    gpumem__err_clear();
    return GPUMEM_OK;
}

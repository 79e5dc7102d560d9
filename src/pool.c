/* Pools: caching allocators whose blocks are released with gpumem_free.
 *
 * A pool block is an ordinary registry record with its pool set, so every tool gpumem has
 * (gpumem_query, double-free detection, leak reports, statistics, scopes) sees it; only the
 * final step of gpumem_free differs: free.c hands the block to gpumem__pool_release instead of
 * CUDA. The pool itself keeps host-side block descriptors, never anything inside the memory
 * (device memory cannot be read from the host), found by address through a hash table that
 * holds every block the pool owns, live or cached, until a trim gives it back to CUDA.
 *
 * Size classes: 256 bytes apart up to 2 KiB, then 8 classes per doubling (each 1/8 of the
 * power of two below it apart), so a block exceeds its request by less than 12.5 % from 2 KiB
 * up and by less than 256 bytes below: the 256-byte alignment every gpumem pointer has is the
 * floor. Power-of-two classes would waste up to 50 %.
 *
 * Device pool: blocks come from a CUDA memory pool of gpumem's own whose release threshold is
 * the maximum, so CUDA keeps freed memory cached too. In front of it, a cache per stream: a
 * released block goes to the cache of the stream it is released on (the allocation's stream
 * for gpumem_free, s for gpumem_free_async(p, s)), and a request on a stream takes only from
 * that stream's cache. Stream order makes that reuse safe without events: any work that
 * touched the block was queued on that stream before the release, so it runs before any work
 * queued after the next allocation. A request with nothing cached for its stream goes to
 * CUDA's pool, which hands memory freed on another stream over only when that is safe.
 *
 * Pinned pool: blocks are carved from large cudaMallocHost chunks (cudaMallocHost costs about
 * 1 ms whatever the size, docs/cuda-facts.md); requests above a quarter of a chunk get a
 * cudaMallocHost of their own, rounded to their class so that they are reusable too. Host
 * memory has no stream order: one cache serves everyone.
 *
 * Locking: one mutex per pool, held for a cache pop or push and a hash lookup; the registry
 * (sharded, with its own locks) is updated outside it. In front of it, unless
 * GPUMEM_POOL_THREAD_CACHE=0, every thread keeps a cache of its own (tcache.c): a pair served
 * there takes no pool lock. To the pool, a block in a thread cache is in use; the statistics
 * add the thread caches back in. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "internal.h"
#include "trace.h"

/* 8 classes of 256 B .. 2 KiB, then 8 per doubling from 2 KiB to 2^64. */
#define CLASS_COUNT 432u
#define DEFAULT_CHUNK ((size_t)16 << 20)
/* Returned by obtain() when the pool's limit, not CUDA, refuses: retried like out of memory. */
#define OVER_LIMIT (-1)
#define INJECTED (-2) /* GPUMEM_FAIL_ALLOC chose this allocation to fail */

typedef struct chunk {
    uintptr_t base;
    size_t bytes;
    size_t carved;      /* bytes handed to blocks so far, from the start */
    size_t live;        /* blocks carved from it that are live: 0 lets a trim release it */
    struct chunk *next;
} chunk;

typedef struct block {
    uintptr_t base;
    size_t size;           /* class size: what the block occupies */
    chunk *from;           /* pinned: the chunk it was carved from; NULL: its own allocation */
    cudaStream_t stream;   /* device: the stream it was allocated on, or whose cache holds it */
    struct block *hnext;   /* hash chain */
    struct block *next;    /* cache list */
    unsigned cls;
    int live;
} block;

typedef struct stream_cache {
    cudaStream_t stream;
    size_t nblocks;                   /* cached blocks in free[] */
    struct stream_cache *prev, *next; /* the pool's caches, most recently used first */
    block *free[CLASS_COUNT];
} stream_cache;

/* Device pools keep at most MAX_CACHES stream caches, found through a small hash: a program
 * that makes a stream per request must not grow without bound nor slow down with every
 * stream it ever used. The least recently used cache goes when a new stream needs one (its
 * blocks go back to CUDA), and trimming frees every cache left empty. */
#define MAX_CACHES 64u
#define CACHE_SLOTS 128u /* power of two, twice MAX_CACHES */

struct gpumem_pool {
    pthread_mutex_t lock;
    int kind;
    int device;
    int tcache;             /* thread caches in front (GPUMEM_POOL_THREAD_CACHE) */
    uint64_t limit;
    size_t chunk_bytes;
    void *cuda_pool;        /* device: the CUDA memory pool */
    block **buckets;
    size_t nbuckets, nblocks;
    stream_cache *slots[CACHE_SLOTS]; /* by stream (pinned: one, for the NULL stream) */
    size_t ncaches;
    stream_cache *mru, *lru; /* the caches by last use */
    stream_cache *last;     /* the cache used last: most programs use one stream at a time */
    chunk *chunks;
    chunk *current;         /* pinned: the chunk new blocks are carved from */
    gpumem_pool_stats_t st; /* fragmentation is computed on read */
    gpumem_site site;       /* where the pool was made, for misuse messages */
    atomic_int users;       /* threads inside a call on this pool (destroy refuses while > 0) */
    atomic_int dying;       /* set by destroy: a call that starts now is refused */
    struct gpumem_pool *prev, *next; /* every pool, for fork (all_pools) */
};

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
        for (const chunk *c = pool->chunks; c && !found; c = c->next)
            found = (uintptr_t)p - c->base < c->bytes;
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

/* ---- size classes ---- */

/* The class of an n-byte request (n >= 1) and its size; 0 when the size does not fit. */
static size_t class_of(size_t n, unsigned *cls)
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

static size_t class_size(unsigned cls)
{
    if (cls < 8)
        return (size_t)(cls + 1) * 256;
    unsigned e = 11u + (cls - 8u) / 8u;
    return (size_t)(9u + (cls - 8u) % 8u) << (e - 3u);
}

_Static_assert(GPUMEM__TC_CLASSES <= CLASS_COUNT, "thread-cache classes are pool classes");

size_t gpumem__pool_class_size(unsigned cls)
{
    return class_size(cls);
}

/* ---- the address table: every block the pool owns ---- */

static size_t bucket_of(uintptr_t a, size_t nbuckets)
{
    return (size_t)(((uint64_t)a >> 8) * 0x9E3779B97F4A7C15ull >> 32) & (nbuckets - 1);
}

static block *find(const gpumem_pool *pool, uintptr_t a)
{
    block *b = pool->buckets[bucket_of(a, pool->nbuckets)];
    while (b && b->base != a)
        b = b->hnext;
    return b;
}

/* Doubles the table when it is full; if that fails the chains just get longer. */
static void table_add(gpumem_pool *pool, block *b)
{
    if (pool->nblocks >= pool->nbuckets && pool->nbuckets < ((size_t)1 << 30)) {
        size_t n = pool->nbuckets * 2;
        block **nb = calloc(n, sizeof *nb);
        if (nb) {
            for (size_t i = 0; i < pool->nbuckets; i++) {
                for (block *x = pool->buckets[i], *next; x; x = next) {
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
    gpumem__reg_pool_span(b->base, b->size, 1);
    if (GPUMEM__UNLIKELY(gpumem__nvtx_on) && !b->from)
        gpumem__nvtx_heap(b->base, b->size, 1); /* a block of its own: its own heap */
}

static void table_remove(gpumem_pool *pool, block *b)
{
    block **pp = &pool->buckets[bucket_of(b->base, pool->nbuckets)];
    while (*pp && *pp != b)
        pp = &(*pp)->hnext;
    if (*pp) {
        *pp = b->hnext;
        pool->nblocks--;
        gpumem__reg_pool_span(b->base, b->size, 0);
    }
}

/* ---- caches ---- */

static size_t slot_of(cudaStream_t s)
{
    return (size_t)(((uint64_t)(uintptr_t)s >> 4) * 0x9E3779B97F4A7C15ull >> 57) &
           (CACHE_SLOTS - 1);
}

static void lru_unlink(gpumem_pool *pool, stream_cache *c)
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

static void lru_front(gpumem_pool *pool, stream_cache *c)
{
    c->next = pool->mru;
    c->prev = NULL;
    if (pool->mru)
        pool->mru->prev = c;
    pool->mru = c;
    if (!pool->lru)
        pool->lru = c;
}

/* Takes cache c out of the hash and the list, and frees it. It must hold no block. Locked. */
static void cache_forget(gpumem_pool *pool, stream_cache *c)
{
    size_t i = slot_of(c->stream);
    while (pool->slots[i] != c)
        i = (i + 1) & (CACHE_SLOTS - 1);
    /* Backward-shift deletion: move up later entries whose probe passed over slot i. */
    for (size_t j = (i + 1) & (CACHE_SLOTS - 1); pool->slots[j]; j = (j + 1) & (CACHE_SLOTS - 1)) {
        size_t k = slot_of(pool->slots[j]->stream);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        pool->slots[i] = pool->slots[j];
        i = j;
    }
    pool->slots[i] = NULL;
    lru_unlink(pool, c);
    pool->ncaches--;
    if (pool->last == c)
        pool->last = NULL;
    free(c);
}

static void drop_block(gpumem_pool *pool, block *b);

/* Device pools make their CUDA calls in their own device's context, whatever device is
 * current on the calling thread: it is made current for the call and the caller's restored
 * (device_push / device_pop). Returns 0 or CUDA's error (then nothing was changed). */
static int enter_device(const gpumem_pool *pool, int *token)
{
    *token = 0;
    return pool->kind == GPUMEM_KIND_DEVICE ? gpumem__be->device_push(pool->device, token) : 0;
}

static void leave_device(int token)
{
    if (token)
        gpumem__be->device_pop(token);
}

/* Gives a block's memory back to CUDA (device: cudaFree on the pool's device); its NVTX heap
 * goes first, and comes back if CUDA refuses. */
static int block_to_cuda(const gpumem_pool *pool, uintptr_t base, size_t size)
{
    if (GPUMEM__UNLIKELY(gpumem__nvtx_on))
        gpumem__nvtx_heap(base, size, 0);
    int token = 0;
    int err = pool->kind != GPUMEM_KIND_DEVICE ? gpumem__be->free_host((void *)base)
                                               : enter_device(pool, &token);
    if (!err && pool->kind == GPUMEM_KIND_DEVICE)
        err = gpumem__be->free((void *)base);
    leave_device(token);
    if (GPUMEM__UNLIKELY(err && gpumem__nvtx_on))
        gpumem__nvtx_heap(base, size, 1);
    return err;
}


/* Gives every block of cache c back to CUDA; returns 0, or CUDA's error (then c keeps the
 * blocks CUDA refused). Locked. */
static int cache_release_blocks(gpumem_pool *pool, stream_cache *c)
{
    int err = 0;
    for (unsigned k = 0; k < CLASS_COUNT; k++) {
        block **pp = &c->free[k];
        while (*pp) {
            block *b = *pp;
            int e = block_to_cuda(pool, b->base, b->size);
            if (e || b->from) { /* pinned blocks of a chunk go with their chunk (trim) */
                err = err ? err : e;
                pp = &b->next;
                continue;
            }
            *pp = b->next;
            c->nblocks--;
            pool->st.reserved -= b->size;
            drop_block(pool, b);
        }
    }
    return err;
}

/* The cache of stream s; with create, made when missing (NULL only when out of host memory).
 * Locked. */
static stream_cache *cache_of(gpumem_pool *pool, cudaStream_t s, int create)
{
    if (GPUMEM__LIKELY(pool->last && pool->last->stream == s))
        return pool->last;
    size_t i = slot_of(s);
    for (; pool->slots[i]; i = (i + 1) & (CACHE_SLOTS - 1)) {
        stream_cache *c = pool->slots[i];
        if (c->stream == s) {
            lru_unlink(pool, c);
            lru_front(pool, c);
            return pool->last = c;
        }
    }
    if (!create)
        return NULL;
    if (pool->ncaches >= MAX_CACHES && pool->lru && pool->lru->stream != s) {
        stream_cache *old = pool->lru;
        if (cache_release_blocks(pool, old) == 0 && old->nblocks == 0)
            cache_forget(pool, old);
        i = slot_of(s); /* the deletion may have moved entries */
        while (pool->slots[i])
            i = (i + 1) & (CACHE_SLOTS - 1);
    }
    if (pool->ncaches >= CACHE_SLOTS - 1)
        return NULL; /* CUDA refused to take the old caches' blocks back: use CUDA directly */
    stream_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->stream = s;
    pool->slots[i] = c;
    pool->ncaches++;
    lru_front(pool, c);
    return pool->last = c;
}

static void raise_peaks(gpumem_pool *pool)
{
    if (pool->st.reserved > pool->st.peak_reserved)
        pool->st.peak_reserved = pool->st.reserved;
    if (pool->st.in_use > pool->st.peak_in_use)
        pool->st.peak_in_use = pool->st.in_use;
}

static block *new_block(uintptr_t base, size_t size, unsigned cls, chunk *from)
{
    block *b = calloc(1, sizeof *b);
    if (b) {
        b->base = base;
        b->size = size;
        b->cls = cls;
        b->from = from;
    }
    return b;
}

/* Puts a cached block on its cache list (the caller accounts for it). */
static void cache_push(stream_cache *c, block *b)
{
    b->next = c->free[b->cls];
    c->free[b->cls] = b;
    c->nblocks++;
}

/* ---- getting memory from CUDA ---- */

static int over_limit(const gpumem_pool *pool, size_t more)
{
    return pool->limit && (pool->st.reserved > pool->limit || more > pool->limit - pool->st.reserved);
}

/* Carves what is left of the current chunk into cached blocks of the largest classes that
 * fit, so that the chunk's tail serves later requests instead of staying pinned for nothing. */
static void carve_tail(gpumem_pool *pool, chunk *ch)
{
    stream_cache *c = cache_of(pool, NULL, 1);
    while (c && ch->bytes - ch->carved >= 256) {
        size_t tail = ch->bytes - ch->carved;
        unsigned cls = 0;
        if (class_of(tail, &cls) > tail)
            cls--; /* tail >= 256 and the class is larger: the one below exists and fits */
        block *b = new_block(ch->base + ch->carved, class_size(cls), cls, ch);
        if (!b)
            return;
        ch->carved += b->size;
        table_add(pool, b);
        cache_push(c, b);
        pool->st.cached += b->size;
        pool->st.blocks_cached++;
    }
}

/* A new pinned block of class cls: carved from a chunk, or its own cudaMallocHost when large. */
static int obtain_pinned(gpumem_pool *pool, size_t size, unsigned cls, block **out)
{
    void *p = NULL;
    int err;
    if (size > pool->chunk_bytes / 4) {
        if (over_limit(pool, size))
            return OVER_LIMIT;
        block *b = new_block(0, size, cls, NULL);
        if (!b)
            return cudaErrorMemoryAllocation;
        err = gpumem__be->host_alloc(&p, size, 0);
        if (err || !p) {
            free(b);
            return err ? err : cudaErrorMemoryAllocation;
        }
        b->base = (uintptr_t)p;
        pool->st.reserved += size;
        table_add(pool, b);
        *out = b;
        return 0;
    }
    chunk *ch = pool->current;
    if (!ch || ch->bytes - ch->carved < size) {
        if (over_limit(pool, pool->chunk_bytes))
            return OVER_LIMIT;
        chunk *nc = calloc(1, sizeof *nc);
        if (!nc)
            return cudaErrorMemoryAllocation;
        err = gpumem__be->host_alloc(&p, pool->chunk_bytes, 0);
        if (err || !p) {
            free(nc);
            return err ? err : cudaErrorMemoryAllocation;
        }
        if (ch)
            carve_tail(pool, ch);
        nc->base = (uintptr_t)p;
        nc->bytes = pool->chunk_bytes;
        if (GPUMEM__UNLIKELY(gpumem__nvtx_on))
            gpumem__nvtx_heap(nc->base, nc->bytes, 1);
        nc->next = pool->chunks;
        pool->chunks = nc;
        pool->current = ch = nc;
        pool->st.reserved += nc->bytes;
    }
    block *b = new_block(ch->base + ch->carved, size, cls, ch);
    if (!b)
        return cudaErrorMemoryAllocation;
    ch->carved += size;
    table_add(pool, b);
    *out = b;
    return 0;
}

static int obtain_device(gpumem_pool *pool, size_t size, unsigned cls, cudaStream_t stream,
                         block **out)
{
    if (over_limit(pool, size))
        return OVER_LIMIT;
    block *b = new_block(0, size, cls, NULL);
    if (!b)
        return cudaErrorMemoryAllocation;
    void *p = NULL;
    int token;
    int err = enter_device(pool, &token);
    if (!err)
        /* compute-sanitizer refuses an NVTX heap over memory of a CUDA memory pool
         * (nvtxMemHeapRegister: "one or more of the parameters is invalid", seen on an H200
         * with compute-sanitizer 2025.3, also after the stream had run) and takes one over
         * cudaMalloc's: with NVTX on, blocks come from cudaMalloc. */
        err = GPUMEM__UNLIKELY(gpumem__nvtx_on)
                  ? gpumem__be->malloc_device(&p, size)
                  : gpumem__be->mempool_alloc(pool->cuda_pool, &p, size, stream);
    leave_device(token);
    if (err || !p) {
        free(b);
        return err ? err : cudaErrorMemoryAllocation;
    }
    b->base = (uintptr_t)p;
    b->stream = stream;
    pool->st.reserved += size;
    table_add(pool, b);
    *out = b;
    return 0;
}

/* A block of class cls for stream: from the stream's cache, else new. Locked. */
static int take(gpumem_pool *pool, size_t size, unsigned cls, cudaStream_t stream, block **out)
{
    /* The cache is made here, before any block exists for the stream, so that a block that
     * cannot reach the caller always has a cache to go back to (untake). */
    stream_cache *c = cache_of(pool, pool->kind == GPUMEM_KIND_DEVICE ? stream : NULL, 1);
    if (GPUMEM__UNLIKELY(!c))
        return cudaErrorMemoryAllocation;
    block *b = c->free[cls];
    if (GPUMEM__LIKELY(b != NULL)) {
        c->free[cls] = b->next;
        c->nblocks--;
        pool->st.cached -= b->size;
        pool->st.blocks_cached--;
        pool->st.hits++;
    } else {
        int err = pool->kind == GPUMEM_KIND_DEVICE ? obtain_device(pool, size, cls, stream, &b)
                                                   : obtain_pinned(pool, size, cls, &b);
        if (err)
            return err;
        pool->st.misses++;
    }
    b->live = 1;
    b->next = NULL;
    if (b->from)
        b->from->live++;
    pool->st.in_use += b->size;
    pool->st.blocks_in_use++;
    raise_peaks(pool);
    *out = b;
    return 0;
}

/* The reverse of take, for a block that never reached the caller. Locked. */
static void untake(gpumem_pool *pool, block *b)
{
    stream_cache *c = cache_of(pool, pool->kind == GPUMEM_KIND_DEVICE ? b->stream : NULL, 1);
    b->live = 0;
    if (b->from)
        b->from->live--;
    pool->st.in_use -= b->size;
    pool->st.blocks_in_use--;
    pool->st.cached += b->size;
    pool->st.blocks_cached++;
    if (c) {
        cache_push(c, b);
    } else if (!b->from && (block_to_cuda(pool, b->base, b->size)) == 0) {
        pool->st.reserved -= b->size; /* no cache to keep it in (no host memory): to CUDA */
        drop_block(pool, b);
    }
}

/* ---- trimming ---- */

static void drop_block(gpumem_pool *pool, block *b)
{
    table_remove(pool, b);
    pool->st.cached -= b->size;
    pool->st.blocks_cached--;
    free(b);
}

/* Gives a chunk's memory back to CUDA, its NVTX heap first (back if CUDA refuses). */
static int chunk_to_cuda(const chunk *ch)
{
    if (GPUMEM__UNLIKELY(gpumem__nvtx_on))
        gpumem__nvtx_heap(ch->base, ch->bytes, 0);
    int err = gpumem__be->free_host((void *)ch->base);
    if (GPUMEM__UNLIKELY(err && gpumem__nvtx_on))
        gpumem__nvtx_heap(ch->base, ch->bytes, 1);
    return err;
}

/* Gives every cached block back to CUDA. Locked. Device: cudaFree waits for the device, so
 * work still queued on a block's stream finishes first, and a stream the caller destroyed
 * since is never named; then CUDA's pool releases its own cache. Pinned: blocks of their own,
 * then chunks with no live block (all their blocks are cached: drop them, then the chunk). */
static int trim_locked(gpumem_pool *pool)
{
    int err = 0;
    for (stream_cache *c = pool->mru; c; c = c->next) {
        for (unsigned k = 0; k < CLASS_COUNT; k++) {
            block **pp = &c->free[k];
            while (*pp) {
                block *b = *pp;
                if (b->from && b->from->live == 0) {
                    *pp = b->next; /* its chunk goes below */
                    c->nblocks--;
                    drop_block(pool, b);
                    continue;
                }
                if (b->from || err) {
                    pp = &b->next; /* a chunk with live blocks keeps its cached ones */
                    continue;
                }
                err = block_to_cuda(pool, b->base, b->size);
                if (err) {
                    pp = &b->next;
                    continue;
                }
                *pp = b->next;
                c->nblocks--;
                pool->st.reserved -= b->size;
                drop_block(pool, b);
            }
        }
    }
    /* Caches left empty go too (a stream per request leaves many). */
    for (stream_cache *c = pool->mru, *next; c; c = next) {
        next = c->next;
        if (!c->nblocks)
            cache_forget(pool, c);
    }
    for (chunk **cp = &pool->chunks; *cp;) {
        chunk *ch = *cp;
        if (ch->live != 0 || chunk_to_cuda(ch) != 0) {
            cp = &ch->next;
            continue;
        }
        *cp = ch->next;
        pool->st.reserved -= ch->bytes;
        if (pool->current == ch)
            pool->current = NULL;
        free(ch);
    }
    if (!err && pool->kind == GPUMEM_KIND_DEVICE) {
        int token;
        err = enter_device(pool, &token);
        if (!err)
            err = gpumem__be->mempool_trim(pool->cuda_pool, 0);
        leave_device(token);
    }
    return err;
}

/* ---- errors ---- */

static void append_held(gpumem_error *e, const gpumem_pool_stats_t *held, uint64_t limit)
{
    char r[32], c[32], u[32], l[32];
    gpumem__err_append(e, "\n    the pool held %s reserved: %s cached, %s in use in %llu block%s",
                       gpumem_format_bytes(held->reserved, r, sizeof r),
                       gpumem_format_bytes(held->cached, c, sizeof c),
                       gpumem_format_bytes(held->in_use, u, sizeof u),
                       (unsigned long long)held->blocks_in_use,
                       held->blocks_in_use == 1 ? "" : "s");
    if (limit)
        gpumem__err_append(e, "; its limit is %s", gpumem_format_bytes(limit, l, sizeof l));
}

static void *fail_alloc(const gpumem_pool *pool, size_t bytes, int err, int retried,
                        const gpumem_pool_stats_t *held, gpumem_site site)
{
    char where[256], size_text[32];
    const char *kind = gpumem_kind_name(pool->kind);
    int code = err == OVER_LIMIT || err == INJECTED ? GPUMEM_ENOMEM : gpumem__status_from_cuda(err);
    gpumem__trace_failed(pool->kind, bytes, pool->device, site, 0, code,
                         err == OVER_LIMIT || err == INJECTED ? 0 : err);
    gpumem_error *e = gpumem__err_begin(code, "gpumem_pool_alloc", site);
    e->requested = bytes;
    if (err != OVER_LIMIT && err != INJECTED)
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
        else if (err == OVER_LIMIT)
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

/* ---- the API ---- */

gpumem_pool *gpumem_pool_create_at(int kind, int device, const gpumem_pool_options_t *options,
                                   gpumem_site site)
{
    static const char fn[] = "gpumem_pool_create";
    char where[256];
    gpumem__site_str(site, where, sizeof where);
    if (kind != GPUMEM_KIND_DEVICE && kind != GPUMEM_KIND_PINNED) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, site);
        gpumem__err_append(e, "%s: kind %d is not GPUMEM_KIND_DEVICE or GPUMEM_KIND_PINNED\n"
                              "    at %s", fn, kind, where);
        gpumem__err_raise(e);
        return NULL;
    }
    if (gpumem__ready(fn, site) != GPUMEM_OK)
        return NULL;
    gpumem__nvtx_start(); /* before the first pool exists: gpumem__nvtx_on never changes after */
    gpumem_pool *pool = calloc(1, sizeof *pool);
    block **buckets = calloc(256, sizeof *buckets);
    int err = pool && buckets ? 0 : cudaErrorMemoryAllocation;
    if (!err && kind == GPUMEM_KIND_DEVICE)
        err = gpumem__be->mempool_create(device, &pool->cuda_pool);
    else if (!err)
        err = gpumem__be->current_device(&device);
    if (err) {
        free(buckets);
        free(pool);
        gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), fn, site);
        gpumem__err_cuda(e, err);
        gpumem__err_append(e, "%s of a %s pool (device %d) failed at %s: %s: %s", fn,
                           gpumem_kind_name(kind), device, where, e->cuda_name, e->cuda_string);
        gpumem__err_raise(e);
        return NULL;
    }
    pthread_mutex_init(&pool->lock, NULL);
    pool->site = site;
    pool->kind = kind;
    pool->device = device;
    pool->buckets = buckets;
    pool->nbuckets = 256;
    pool->tcache = gpumem__opt_bool(GPUMEM__OPT_POOL_THREAD_CACHE);
    pool->limit = options ? options->limit : 0;
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

static void *pool_alloc(gpumem_pool *pool, size_t count, size_t size, cudaStream_t stream,
                        gpumem_site site);

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

void *gpumem_pool_alloc_at(gpumem_pool *pool, size_t count, size_t size, cudaStream_t stream,
                           gpumem_site site)
{
    if (GPUMEM__UNLIKELY(!pool))
        return fail_simple(GPUMEM_EINVAL, "the pool is NULL", site);
    return pool_alloc(pool, count, size, stream, site);
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
    if (GPUMEM__UNLIKELY(!pool))
        return fail_simple(GPUMEM_EINVAL, "the pool is NULL", site);
    if (bytes == 0) {
        gpumem__err_clear();
        return NULL;
    }
    unsigned cls = 0;
    size_t csize = class_of(bytes, &cls);
    cudaStream_t key = pool->kind == GPUMEM_KIND_DEVICE ? stream : NULL;
    block *b = NULL;
    gpumem_pool_stats_t held = {0};
    int retried = 0;
    if (GPUMEM__UNLIKELY(gpumem__fail_injected())) {
        if (!pool_enter(pool))
            return fail_dying(pool, site);
        gpumem_pool_stats(pool, &held);
        fail_alloc(pool, bytes, INJECTED, 0, &held, site);
        pool_leave(pool);
        return NULL;
    }
    /* The calling thread's cache first: no pool lock. A block from there needs no pool_enter
     * either: it is in use to the pool, so a destroy refuses until it is released, and the
     * destroy's drain waits for a pop under way. Everything else is inside pool_enter. */
    uintptr_t base = csize && pool->tcache ? gpumem__tc_pop(pool, key, cls, csize, bytes) : 0;
    if (!base) {
        if (GPUMEM__UNLIKELY(!pool_enter(pool)))
            return fail_dying(pool, site);
        pthread_mutex_lock(&pool->lock);
        int err = csize ? take(pool, csize, cls, stream, &b) : cudaErrorMemoryAllocation;
        if (GPUMEM__UNLIKELY(err == OVER_LIMIT || err == cudaErrorMemoryAllocation) && csize) {
            /* Cached blocks may be what stands in the way, in this pool's cache or in the
             * threads': give them back and try once more. */
            pthread_mutex_unlock(&pool->lock);
            gpumem_pool_stats(pool, &held);
            if (pool->tcache)
                gpumem__tc_drain(pool, 0);
            pthread_mutex_lock(&pool->lock);
            pool->st.oom_retries++;
            retried = 1;
            trim_locked(pool);
            err = take(pool, csize, cls, stream, &b);
        }
        if (GPUMEM__UNLIKELY(err)) {
            if (!retried)
                held = pool->st;
            pthread_mutex_unlock(&pool->lock);
            fail_alloc(pool, bytes, err, retried, &held, site);
            pool_leave(pool);
            return NULL;
        }
        pool->st.requested += bytes;
        base = b->base;
        pthread_mutex_unlock(&pool->lock);
        if (pool->tcache)
            gpumem__tc_refill(pool, key, cls, csize);
        pool_leave(pool); /* the block, in use, keeps the pool from being destroyed now */
    }

    gpumem__rec r = {
        .base = base,
        .bytes = bytes,
        .stream = pool->kind == GPUMEM_KIND_DEVICE ? stream : NULL,
        .site = site,
        .seq = gpumem__seq_take(),
        .thread = gpumem__thread_id(),
        .device = pool->device,
        .kind = (unsigned char)pool->kind,
        .pool = pool,
    };
    if (GPUMEM__UNLIKELY(gpumem__opt_bool(GPUMEM__OPT_BACKTRACE)))
        r.stack = gpumem__stack_capture(0);
    if (GPUMEM__UNLIKELY(gpumem__reg_insert(&r) != 0)) {
        int entered = pool_enter(pool); /* the block goes back: keep destroy out until done */
        if (b) {
            pthread_mutex_lock(&pool->lock);
            pool->st.requested -= bytes;
            untake(pool, b);
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
        return NULL;
    }
    if (GPUMEM__UNLIKELY(gpumem__nvtx_on))
        gpumem__nvtx_region(base, bytes, 1);
    gpumem__stats_alloc(pool->kind, pool->device, bytes);
    gpumem__trace_alloc(&r);
    gpumem__err_clear();
    return (void *)base;
}

size_t gpumem__pool_block_size(struct gpumem_pool *pool, uintptr_t base)
{
    pthread_mutex_lock(&pool->lock);
    const block *b = find(pool, base);
    size_t size = b && b->live ? b->size : 0;
    pthread_mutex_unlock(&pool->lock);
    return size;
}

/* Puts live block b back into the cache of stream to (or, with no host memory for that
 * cache, gives it to CUDA's pool in stream order, which is just as safe). Locked. */
static int give_back(gpumem_pool *pool, block *b, cudaStream_t to)
{
    stream_cache *c = cache_of(pool, to, 1);
    if (GPUMEM__UNLIKELY(!c)) {
        int token;
        if (GPUMEM__UNLIKELY(gpumem__nvtx_on))
            gpumem__nvtx_heap(b->base, b->size, 0);
        int err = enter_device(pool, &token);
        if (!err && GPUMEM__UNLIKELY(gpumem__nvtx_on)) { /* cudaMalloc's (obtain_device) */
            err = gpumem__be->stream_sync(to);
            if (!err)
                err = gpumem__be->free((void *)b->base);
        } else if (!err) {
            err = gpumem__be->free_async((void *)b->base, to);
        }
        leave_device(token);
        if (err) {
            if (GPUMEM__UNLIKELY(gpumem__nvtx_on))
                gpumem__nvtx_heap(b->base, b->size, 1);
            return err;
        }
        table_remove(pool, b);
        pool->st.reserved -= b->size;
    } else {
        b->stream = to;
        cache_push(c, b);
        pool->st.cached += b->size;
        pool->st.blocks_cached++;
    }
    b->live = 0;
    if (b->from)
        b->from->live--;
    pool->st.in_use -= b->size;
    pool->st.blocks_in_use--;
    if (!c)
        free(b);
    return 0;
}

int gpumem__pool_release(struct gpumem_pool *pool, const gpumem__rec *r, int async,
                         cudaStream_t stream)
{
    cudaStream_t to = pool->kind != GPUMEM_KIND_DEVICE ? NULL : async ? stream : r->stream;
    if (GPUMEM__LIKELY(pool->tcache)) {
        unsigned cls = 0;
        size_t size = class_of(r->bytes, &cls);
        if (gpumem__tc_push(pool, to, cls, size, r->base, r->bytes, 0))
            return 0; /* kept by this thread's cache, for its next request on stream to */
    }
    pthread_mutex_lock(&pool->lock);
    block *b = find(pool, r->base);
    if (GPUMEM__UNLIKELY(!b || !b->live)) {
        pthread_mutex_unlock(&pool->lock);
        return cudaErrorInvalidValue; /* the registry and the pool disagree: a gpumem bug */
    }
    int err = give_back(pool, b, to);
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
        block *b = find(pool, bases[i]);
        if (b && b->live) /* a thread cache holds only blocks the pool counts as in use */
            give_back(pool, b, stream);
    }
    pthread_mutex_unlock(&pool->lock);
}

unsigned gpumem__pool_tc_take(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls,
                              uintptr_t *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&pool->lock);
    stream_cache *c = cache_of(pool, stream, 0);
    while (c && n < max && c->free[cls]) {
        block *b = c->free[cls];
        c->free[cls] = b->next;
        c->nblocks--;
        b->next = NULL;
        b->live = 1;
        if (b->from)
            b->from->live++;
        pool->st.cached -= b->size;
        pool->st.blocks_cached--;
        pool->st.in_use += b->size;
        pool->st.blocks_in_use++;
        out[n++] = b->base;
    }
    raise_peaks(pool);
    pthread_mutex_unlock(&pool->lock);
    return n;
}

void gpumem__pool_tc_fold(struct gpumem_pool *pool, const gpumem__tc_counts *c)
{
    pthread_mutex_lock(&pool->lock);
    pool->st.requested += (uint64_t)c->requested;
    pool->st.hits += (uint64_t)c->hits;
    pthread_mutex_unlock(&pool->lock);
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

int gpumem_pool_trim(gpumem_pool *pool)
{
    if (!pool)
        return GPUMEM_EINVAL;
    if (!pool_enter(pool))
        return GPUMEM_EBUSY;
    if (pool->tcache)
        gpumem__tc_drain(pool, 0);
    pthread_mutex_lock(&pool->lock);
    int err = trim_locked(pool);
    pthread_mutex_unlock(&pool->lock);
    pool_leave(pool);
    if (err) {
        gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), "gpumem_pool_trim",
                                            (gpumem_site){NULL, NULL, 0});
        gpumem__err_cuda(e, err);
        gpumem__err_append(e, "gpumem_pool_trim: CUDA refused a release: %s: %s; the blocks it "
                              "could not release stay cached", e->cuda_name, e->cuda_string);
        return gpumem__err_raise(e);
    }
    return GPUMEM_OK;
}

int gpumem_pool_stats(gpumem_pool *pool, gpumem_pool_stats_t *stats)
{
    if (!pool || !stats)
        return GPUMEM_EINVAL;
    if (!pool_enter(pool))
        return GPUMEM_EBUSY;
    gpumem__tc_counts tc = {0, 0, 0, 0};
    if (pool->tcache)
        gpumem__tc_sum_begin(pool, &tc);
    pthread_mutex_lock(&pool->lock);
    *stats = pool->st;
    pthread_mutex_unlock(&pool->lock);
    if (pool->tcache)
        gpumem__tc_sum_end();
    pool_leave(pool);
    /* The pool counts blocks in thread caches as in use; they are cached. */
    stats->in_use -= (uint64_t)tc.cached_bytes;
    stats->blocks_in_use -= (uint64_t)tc.cached_blocks;
    stats->cached += (uint64_t)tc.cached_bytes;
    stats->blocks_cached += (uint64_t)tc.cached_blocks;
    stats->requested += (uint64_t)tc.requested;
    stats->hits += (uint64_t)tc.hits;
    stats->fragmentation = stats->reserved
        ? (double)(stats->reserved - stats->requested) / (double)stats->reserved : 0.0;
    return GPUMEM_OK;
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
        for (block *b = pool->buckets[i]; b; b = b->hnext) {
            gpumem__rec r;
            if (!b->live || shown == 8)
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
    int err = trim_locked(pool);
    if (!err && pool->nblocks == 0 && pool->kind == GPUMEM_KIND_DEVICE) {
        int token;
        err = enter_device(pool, &token);
        if (!err)
            err = gpumem__be->mempool_destroy(pool->cuda_pool);
        leave_device(token);
    }
    if (err || pool->nblocks || pool->chunks) {
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
                           err ? e->cuda_string : "a block or chunk stayed");
        return gpumem__err_raise(e);
    }
    pthread_mutex_unlock(&pool->lock);
    /* A call that started just now sees dying and leaves: let it, before the memory goes. */
    while (atomic_load(&pool->users))
        sched_yield();
    pools_unlink(pool);
    for (stream_cache *c = pool->mru, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(pool->buckets);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
    gpumem__err_clear();
    return GPUMEM_OK;
}

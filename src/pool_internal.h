/* What pool.c (the API, thread caches, statistics, errors) and pool_arena.c (where blocks lie
 * in the memory a pool holds) share. docs/pools.md describes the design. */
#ifndef GPUMEM_POOL_INTERNAL_H
#define GPUMEM_POOL_INTERNAL_H

#include <pthread.h>

#include "internal.h"

/* 8 classes of 256 B .. 2 KiB, then 8 per doubling from 2 KiB to 2^64. */
#define GPUMEM__POOL_CLASSES 432u
/* Requests up to this many bytes go to a stream's small arena, larger ones to its large one,
 * so that small blocks that live long do not pin pages among large ones. */
#define GPUMEM__POOL_SMALL_MAX ((size_t)1 << 20)
/* Requests up to this size are rounded to their class (a thread cache serves them by class);
 * larger ones are carved at their size rounded to the alignment. */
#define GPUMEM__POOL_CLASS_MAX ((size_t)4 << 20)
#define GPUMEM__POOL_ARENAS 256u /* stream arena slots, a power of two */
#define GPUMEM__POOL_KEEP_ARENAS 64u /* idle stream arenas kept; more are given back */
/* VMM: another stream's free pages may move only once it took no block for this many takes
 * (pool_pages.c, steal_any). */
#define GPUMEM__POOL_IDLE_TAKES 4096u
/* VMM: a page is new rather than moved while the pool holds fewer than the pages needed now,
 * one, and this share of their peak (pool_pages.c, handle_get). */
#define GPUMEM__POOL_SPARE_SHARE 6u

/* How a pool gets its memory (gpumem_pool_options_t.design, GPUMEM_POOL_DESIGN). */
enum {
    GPUMEM__DESIGN_VMM = 1, /* device: address ranges mapped page by page */
    GPUMEM__DESIGN_SEGMENTS, /* segments CUDA gives in one piece, carved */
    GPUMEM__DESIGN_CLASSES   /* a segment per block, of its class size, never split */
};

enum { GPUMEM__BLK_FREE, GPUMEM__BLK_USED, GPUMEM__BLK_RETIRING, GPUMEM__BLK_DEFERRED };
enum { GPUMEM__PAGE_UNMAPPED, GPUMEM__PAGE_MAPPED, GPUMEM__PAGE_RETIRING };

/* A block: a piece of a segment, free or not. Blocks of a segment tile it in address order. */
typedef struct gpumem__pblk {
    uintptr_t base;
    size_t size;
    struct gpumem__pblk *prev, *next;   /* address neighbours in the segment */
    struct gpumem__pblk *fprev, *fnext; /* free: its bin's list */
    struct gpumem__pblk *hnext;         /* the pool's address table; spare: the next spare */
    struct gpumem__pseg *seg;
    unsigned bin;
    unsigned char state;
} gpumem__pblk;

typedef struct gpumem__ppage {
    unsigned long long handle; /* the physical memory mapped here (MAPPED, RETIRING) */
    unsigned need;             /* blocks not free that overlap the page */
    unsigned char state;
} gpumem__ppage;

/* Memory a pool holds from CUDA: a segment CUDA gave in one piece (pages NULL), or an address
 * range whose pages are mapped while blocks need them (VMM). */
typedef struct gpumem__pseg {
    uintptr_t base;
    size_t size;
    struct gpumem__parena *arena;
    gpumem__pblk *first;
    gpumem__ppage *pages;
    size_t npages, hwm;      /* pages; pages at or past hwm were never mapped */
    size_t stealable;        /* mapped pages that no block needs */
    size_t used;             /* bytes of blocks not free */
    struct gpumem__pseg *next;
} gpumem__pseg;

typedef struct gpumem__parena {
    cudaStream_t stream;
    int small;
    gpumem__pseg *segs;
    gpumem__pblk *bins[GPUMEM__POOL_CLASSES];
    uint64_t binmap[(GPUMEM__POOL_CLASSES + 63) / 64];
    size_t free_blocks;
} gpumem__parena;

/* A stream's arenas (device pools; a pinned pool has one, for the NULL stream). */
typedef struct gpumem__pstream {
    cudaStream_t stream;
    uint64_t last_take;                  /* the pool's takes when it last took a block */
    struct gpumem__pstream *prev, *next; /* by last use, most recent first */
    gpumem__parena arena[2];             /* small, large */
} gpumem__pstream;

/* Work that waits for an event: a page whose old mapping goes once the stream that last
 * used it is done (RETIRING), or a block released on another stream (DEFERRED). */
typedef struct gpumem__pending {
    gpumem__pblk *block;
    void *event;
    struct gpumem__pending *next;
} gpumem__pending;

struct gpumem_pool {
    pthread_mutex_t lock;
    int kind;
    int device;
    int design;
    int tcache;             /* thread caches in front (GPUMEM_POOL_THREAD_CACHE) */
    int runtime_owned;      /* GPUMEM_POOL_RUNTIME_OWNED: left out of the exit report */
    uint64_t limit;
    size_t chunk_bytes;     /* pinned: segments small blocks are carved from */
    size_t granule;         /* VMM: bytes of a page */
    size_t va_bytes;        /* VMM: bytes of a large arena's address range */
    void *cuda_pool;        /* device: the CUDA memory pool segments come from */
    gpumem__pblk **buckets; /* every block, by base */
    size_t nbuckets, nblocks;
    gpumem__pblk *spare_blks;           /* block records not in use (linked by hnext) */
    struct gpumem__pblk_slab *blk_slabs; /* where the records are, freed with the pool */
    gpumem__pstream *slots[GPUMEM__POOL_ARENAS];
    size_t nstreams;
    gpumem__pstream *mru, *lru, *last;
    uint64_t takes; /* blocks taken from the arenas, ever */
    unsigned long long *handles; /* VMM: physical pages mapped nowhere */
    size_t nhandles, handles_cap, pages_held;
    size_t pages_needed, pages_needed_peak; /* VMM: pages some block needs, now and at most */
    gpumem__pending *pending, *pending_tail; /* oldest first */
    void **events;               /* events free for reuse */
    size_t nevents, events_cap;
    uint64_t remaps;
    uint64_t cuda_calls, cuda_ns; /* gpumem__pool_cuda_start/_end */
    uint64_t traced_reserved; /* reserved as the trace last said it */
    gpumem_pool_stats_t st;  /* in_use counts blocks in thread caches; reads add them back */
    gpumem_site site;
    atomic_int users;
    atomic_int dying;
    struct gpumem_pool *prev, *next;
};

/* OVER_LIMIT: the pool's limit, not CUDA, refused (retried like out of memory). */
#define GPUMEM__POOL_OVER_LIMIT (-1)

size_t gpumem__pool_class_of(size_t n, unsigned *cls);
/* The bytes a request of n takes in the pool (0: too large). */
size_t gpumem__pool_round(const struct gpumem_pool *pool, size_t n, unsigned *cls);

/* CUDA calls of a device pool run on its device: it is made current for the call, and the
 * caller's restored after (token 0: nothing to restore). */
static inline int gpumem__pool_dev_enter(const struct gpumem_pool *pool, int *token)
{
    *token = 0;
    return pool->kind == GPUMEM_KIND_DEVICE ? gpumem__be->device_push(pool->device, token) : 0;
}

static inline void gpumem__pool_dev_leave(int token)
{
    if (token)
        gpumem__be->device_pop(token);
}

/* The CUDA calls that get, map, unmap and give back the pool's memory are counted and timed
 * (gpumem_pool_stats_t's cuda_calls and cuda_ns), under the pool's lock:
 *     uint64_t t = gpumem__now_ns(); err = <call>; gpumem__pool_cuda_end(pool, t);
 * Two reads of the monotonic clock, against the microseconds each of these calls takes. */
static inline void gpumem__pool_cuda_end(struct gpumem_pool *pool, uint64_t start)
{
    pool->cuda_ns += gpumem__now_ns() - start;
    pool->cuda_calls++;
}

/* Whether holding more bytes would take the pool past its limit. */
static inline int gpumem__pool_over_limit(const struct gpumem_pool *pool, size_t more)
{
    return pool->limit &&
           (pool->st.reserved > pool->limit || more > pool->limit - pool->st.reserved);
}

/* pool_arena.c's blocks and bins, for pool_pages.c; the pool's lock held. */
void gpumem__bin_insert(gpumem__parena *a, gpumem__pblk *b);
void gpumem__bin_remove(gpumem__parena *a, gpumem__pblk *b);
/* Cuts free block b (out of its bin) at n bytes; the rest becomes a free block in the bin.
 * Without host memory for the rest, b stays whole. */
void gpumem__blk_split(struct gpumem_pool *pool, gpumem__pblk *b, size_t n);
/* Block b (out of any bin, counted nowhere) becomes free and merges with free neighbours. */
void gpumem__blk_merge_free(struct gpumem_pool *pool, gpumem__pblk *b);
/* Block b (in use or deferred) becomes free. */
void gpumem__blk_free(struct gpumem_pool *pool, gpumem__pblk *b);

/* pool_pages.c; the pool's lock held. */
void gpumem__pages_span(const struct gpumem_pool *pool, const gpumem__pblk *b, size_t *lo,
                        size_t *hi);
/* Block b, in use now, needs its pages: maps those not mapped (with spare memory, memory
 * moved from pages no block needs, or new), sets *missed when it mapped any; on failure
 * undoes what it did and returns the error. */
int gpumem__pages_need(struct gpumem_pool *pool, gpumem__pblk *b, int *missed);
void gpumem__pages_unneed(struct gpumem_pool *pool, gpumem__pblk *b);
int gpumem__pages_handle_put(struct gpumem_pool *pool, unsigned long long h);
/* Unmaps every page no block needs and releases every spare page; the device's work is done. */
int gpumem__pages_unmap_unneeded(struct gpumem_pool *pool);
int gpumem__pages_unmap_stream(struct gpumem_pool *pool, gpumem__pstream *c);
/* The bytes of free block b on mapped pages; *run the longest mapped stretch of it. */
size_t gpumem__pages_mapped_in(const struct gpumem_pool *pool, const gpumem__pblk *b,
                               size_t *run);
void *gpumem__pool_event_get(struct gpumem_pool *pool);
void gpumem__pool_event_put(struct gpumem_pool *pool, void *ev);
int gpumem__pool_pending_add(struct gpumem_pool *pool, gpumem__pblk *b, void *ev);
void gpumem__pool_pending_push(struct gpumem_pool *pool, gpumem__pending *p);

/* pool_arena.c; every call with the pool's lock held. */
int gpumem__arena_setup(struct gpumem_pool *pool);
/* Frees the pool's address table and block records (none in use); any lock. */
void gpumem__arena_free_tables(struct gpumem_pool *pool);
/* A block of n bytes (gpumem__pool_round) for stream: *missed is set when CUDA was asked for
 * memory or a mapping. Returns 0, GPUMEM__POOL_OVER_LIMIT or CUDA's error. */
int gpumem__arena_take(struct gpumem_pool *pool, size_t n, cudaStream_t stream,
                       gpumem__pblk **out, int *missed);
/* Gives a block that is not free back, for reuse by stream to: at once when to is its
 * arena's stream, else once the work queued on to so far is done. */
int gpumem__arena_give(struct gpumem_pool *pool, gpumem__pblk *b, cudaStream_t to);
gpumem__pblk *gpumem__arena_find(const struct gpumem_pool *pool, uintptr_t base);
/* Gives back to CUDA what no block needs: empty segments, unneeded pages and their
 * handles, idle streams' arenas (every one with all). Waits for the device first. */
int gpumem__arena_trim(struct gpumem_pool *pool);
/* Releases everything (no block may be in use); 0 or CUDA's error. */
int gpumem__arena_destroy(struct gpumem_pool *pool);
/* Fills the fields computed from the blocks: largest_free, cached_by_size, remaps. */
void gpumem__arena_stats(const struct gpumem_pool *pool, gpumem_pool_stats_t *st);
/* Whether p lies in a segment of the pool and in no block in use. */
int gpumem__arena_holds(const struct gpumem_pool *pool, uintptr_t p);
/* Waits for (wait) or polls the pending work. */
void gpumem__arena_settle(struct gpumem_pool *pool, int wait);

#endif

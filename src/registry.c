/* The registry: every live gpumem allocation, and a bounded memory of released ones.
 *
 * Exact lookups (the release path) are O(1): the address hashes to one of 64 shards, each an
 * open-addressing table under its own mutex, so threads releasing different pointers rarely
 * meet. Keys sit in a dense array, so a probe reads eight of them per cache line and touches
 * a record only on a match; records are stored inline, so neither allocation nor release
 * calls malloc.
 *
 * A released record stays where it is, marked released in its key's low bit (bases are
 * multiples of 256, so the bit is free): that is what tells a double free from a pointer gpumem
 * never saw, with the first release's site at hand, at no extra cost on the release path. A
 * per-shard ring of released addresses bounds how many are remembered (GPUMEM_QUARANTINE):
 * when it is full, the oldest release is forgotten. An address allocated again becomes live in
 * the slot of its earlier release.
 *
 * Interior lookups (an address inside an allocation) are rarer: error paths and queries.
 * Every base is a multiple of GPUMEM_ALIGNMENT, so an allocation of at most SMALL_MAX bytes
 * that contains p starts at one of the SMALL_MAX / 256 aligned addresses at or below p; those
 * are probed from p downwards. Larger allocations are few (each costs CUDA tens of
 * microseconds or more) and also sit in one sorted array searched by bisection. A large pool
 * block is in that array while it is in use to its pool, thread caches included, not per
 * allocation (gpumem__reg_pool_span): pairs a thread cache serves then take no global lock.
 *
 * Each shard starts a cache line of its own and ends with a line of padding, so that threads
 * working in different shards never write a line another shard uses.
 *
 * Pool blocks are recorded apart from the shards. A pool's allocate + free pair costs no CUDA
 * call, so the shard's lock, table probe and quarantine ring were most of it, and the shard
 * lines moved between cores: on an H200 machine 16 threads got 2.2x to 4.4x one thread's pairs
 * a second, with 57 % of samples in the shards' insert and take (docs/perf/). So each block a
 * pool owns has a record of its own (pblock), made when the pool makes the block (carves it
 * from its memory) and dropped when the block goes (merges into a neighbour, or its memory
 * goes back to CUDA: gpumem__reg_pool_record), and found by address through a radix
 * map that only those two events write. An allocation fills the record and marks it live; a
 * release marks it released and keeps it, with the release's site, while the block waits in a
 * thread cache or the pool's cache: that is the double-free record. Each flip takes only the
 * record's own small lock, on lines no other block uses, and the counts go to per-thread
 * counters that a read adds up. When the pool gives the block back, its last release joins
 * the shards' quarantine. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pool_counts.h"
#include "registry_arrays.h"
#include "sigsafe.h"

#define SHARD_BITS 6
#define SHARDS (1u << SHARD_BITS)
#define SMALL_MAX ((size_t)64 * 1024)
#define MIN_SLOTS 64u
#define NONE ((size_t)-1)
#define RELEASED ((uintptr_t)1)
/* Most releases remembered: 16 Mi, 256 MiB of ring (larger values are clamped, with a
 * warning; each shard allocates its ring at its first release). */
#define QUARANTINE_MAX ((uint64_t)1 << 24)

/* Open addressing with linear probing; key 0 marks an empty slot (0 is never an address gpumem
 * hands out) and a key with RELEASED set a remembered release. Deletion shifts later entries
 * back, so there are no tombstones. An address has at most one entry. */
typedef struct {
    uintptr_t *keys;
    gpumem__rec *recs;
    size_t mask;  /* capacity - 1; meaningless while keys == NULL */
    size_t count; /* live and released entries */
} table;

/* One remembered release: the address and the sequence number of the allocation released.
 * An address allocated and released again has an older entry too; the sequence number tells
 * that stale entry from the release the table holds now. */
struct released {
    uintptr_t base;
    uint64_t seq;
};

typedef struct {
    _Alignas(64) pthread_mutex_t lock;
    table t;
    struct released *ring; /* releases in release order, oldest at ring[head] */
    size_t ring_cap, ring_len, ring_head;
    uint64_t live_count[GPUMEM_KIND_COUNT_];
    uint64_t live_bytes[GPUMEM_KIND_COUNT_];
    uint64_t total_count[GPUMEM_KIND_COUNT_];
    uint64_t total_bytes[GPUMEM_KIND_COUNT_];
    uint64_t dev_live_count[GPUMEM_STATS_DEVICES];
    uint64_t dev_live_bytes[GPUMEM_STATS_DEVICES];
    uint64_t dev_total_count[GPUMEM_STATS_DEVICES];
    uint64_t dev_total_bytes[GPUMEM_STATS_DEVICES];
    char pad[64];
} shard;

/* Live counts move with the record: in at insert and untake, out at take. */
static void count_live(shard *s, const gpumem__rec *r, int sign)
{
    int d = gpumem__dev_slot(r->device);
    s->live_count[r->kind] += (uint64_t)(int64_t)sign;
    s->live_bytes[r->kind] += (uint64_t)((int64_t)sign * (int64_t)r->bytes);
    s->dev_live_count[d] += (uint64_t)(int64_t)sign;
    s->dev_live_bytes[d] += (uint64_t)((int64_t)sign * (int64_t)r->bytes);
}

static shard shards[SHARDS];

/* fork(): the shards are emptied of threads rather than held across fork() (fork.c). The
 * library's other locks come on top of 64 shards, and ThreadSanitizer, under which CI runs the
 * tests and users run programs, follows at most 64 locks held by one thread and aborts past
 * that. So fork's prepare raises gpumem__hot.forking, then takes and releases each shard: a
 * thread that held one has left it, and one that takes it afterwards sees the flag (raised
 * before the release its acquisition follows) and steps out until the fork is done, having
 * changed nothing; the child initializes the shards' locks afresh. Every shard lock pays one
 * load of a line that only rare events write, and a branch never taken. */

static void shard_lock(shard *s)
{
    pthread_mutex_lock(&s->lock);
    while (GPUMEM__UNLIKELY(atomic_load_explicit(&gpumem__hot.forking, memory_order_relaxed))) {
        pthread_mutex_unlock(&s->lock);
        while (atomic_load_explicit(&gpumem__hot.forking, memory_order_acquire))
            sched_yield();
        pthread_mutex_lock(&s->lock);
    }
}

/* As shard_lock, for the exit-time report: gives up when the shard stays busy past the
 * budget, or while a fork is under way (the report counts the shard as busy). */
static int shard_trylock(shard *s, long *budget_ns)
{
    if (!gpumem__trylock_for(&s->lock, budget_ns))
        return 0;
    if (GPUMEM__LIKELY(!atomic_load_explicit(&gpumem__hot.forking, memory_order_relaxed)))
        return 1;
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* The address / 256 (which ignores RELEASED), mixed by MurmurHash3's 64-bit finalizer. A plain
 * multiplicative hash sent blocks a fixed stride apart (a pool's, CUDA's sub-allocations) to
 * few shards: its top bits advance by a constant step, so 16 threads' 4 KiB blocks, side by
 * side, shared about 7 shards between pairs of threads. */
static inline uint64_t hash_addr(uintptr_t a)
{
    uint64_t h = (uint64_t)(a >> 8);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}
static inline shard *shard_of(uintptr_t a)
{
    return &shards[hash_addr(a) >> (64 - SHARD_BITS)];
}
static inline size_t home_of(const table *t, uintptr_t k)
{
    return (size_t)(hash_addr(k) >> 24) & t->mask;
}

/* Slot of address a, live or released, or NONE. */
static size_t table_find(const table *t, uintptr_t a)
{
    if (!t->keys)
        return NONE;
    for (size_t i = home_of(t, a);; i = (i + 1) & t->mask) {
        if ((t->keys[i] & ~RELEASED) == a)
            return i;
        if (t->keys[i] == 0)
            return NONE;
    }
}

/* Grows t so that one more entry keeps the load at most 3/4. Returns 0 or -1 (no memory). */
static int table_reserve(table *t)
{
    size_t cap = t->keys ? t->mask + 1 : 0;
    if (t->keys && (t->count + 1) * 4 <= cap * 3)
        return 0;
    size_t ncap = cap ? cap * 2 : MIN_SLOTS;
    table nt = {gpumem__table_mem(ncap * sizeof *nt.keys), gpumem__table_mem(ncap * sizeof *nt.recs), ncap - 1,
                t->count};
    if (!nt.keys || !nt.recs) {
        gpumem__table_mem_free(nt.keys, ncap * sizeof *nt.keys);
        gpumem__table_mem_free(nt.recs, ncap * sizeof *nt.recs);
        return -1;
    }
    for (size_t i = 0; i < cap; i++) {
        if (!t->keys[i])
            continue;
        size_t j = home_of(&nt, t->keys[i]);
        while (nt.keys[j])
            j = (j + 1) & nt.mask;
        nt.keys[j] = t->keys[i];
        nt.recs[j] = t->recs[i];
    }
    gpumem__table_mem_free(t->keys, cap * sizeof *t->keys);
    gpumem__table_mem_free(t->recs, cap * sizeof *t->recs);
    *t = nt;
    return 0;
}

/* Puts key k (its address not present) into t, which has room; returns its slot. */
static size_t table_put(table *t, uintptr_t k)
{
    size_t i = home_of(t, k);
    while (t->keys[i])
        i = (i + 1) & t->mask;
    t->keys[i] = k;
    t->count++;
    return i;
}

/* Empties slot i, moving back the entries whose probe sequence passed over it. */
static void table_delete(table *t, size_t i)
{
    for (size_t j = (i + 1) & t->mask; t->keys[j]; j = (j + 1) & t->mask) {
        size_t k = home_of(t, t->keys[j]);
        /* The entry at j may fill i if its home k is not cyclically within (i, j]. */
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (stays)
            continue;
        t->keys[i] = t->keys[j];
        t->recs[i] = t->recs[j];
        i = j;
    }
    t->keys[i] = 0;
    t->count--;
}


/* ---- pool blocks (see the top of the file) ---- */

static void remember_release(shard *s, uintptr_t a);

/* A pool block's record. live and rec change under lock, a spin lock (held for a copy of the
 * record) because a mutex would double the pair's cost; it sits on the record's own lines, which
 * the thread using the block already holds. rec.base is 0 while the record is unused. */
typedef struct pblock {
    _Alignas(64) atomic_uint lock;
    unsigned live;          /* rec is a live allocation; else its last release (seq 0: none) */
    gpumem__rec rec;
    struct pblock *next_free;
} pblock;

#define PB_SLAB 64u /* records allocated together */
typedef struct pb_slab {
    pblock b[PB_SLAB];
    struct pb_slab *next;
} pb_slab;

/* The map from address to record: three levels over address / 256 (48-bit addresses; others
 * keep their records in the shards). Nodes are never freed, so a lookup needs no lock: a
 * reader that loses a race with a removal finds the record reused or empty, which it sees
 * under the record's lock (rec.base). A leaf covers 64 KiB of addresses in 2 KiB. */
#define PM_LEAF_BITS 8
#define PM_MID_BITS 16
#define PM_TOP_BITS 16
typedef struct {
    _Atomic(pblock *) slot[1u << PM_LEAF_BITS];
} pm_leaf;
typedef struct {
    _Atomic(pm_leaf *) leaf[1u << PM_MID_BITS];
} pm_mid;
static _Atomic(pm_mid *) pm_top[1u << PM_TOP_BITS];
/* Taken by the map's writers (a pool under its own lock gets or gives back a block). */
static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(pb_slab *) pb_slabs; /* every slab, newest first; only ever grows */
static pblock *pb_free;             /* records not in the map, under pm_lock */

static inline pblock *pm_find(uintptr_t a)
{
    if (a & (GPUMEM_ALIGNMENT - 1) || a >> 48)
        return NULL;
    uint64_t k = (uint64_t)a >> 8;
    pm_mid *m = atomic_load_explicit(&pm_top[k >> (PM_LEAF_BITS + PM_MID_BITS)],
                                     memory_order_acquire);
    if (!m)
        return NULL;
    pm_leaf *l = atomic_load_explicit(&m->leaf[(k >> PM_LEAF_BITS) & ((1u << PM_MID_BITS) - 1)],
                                      memory_order_acquire);
    if (!l)
        return NULL;
    return atomic_load_explicit(&l->slot[k & ((1u << PM_LEAF_BITS) - 1)], memory_order_acquire);
}

/* The map's slot of a (48-bit, aligned), made with its nodes when missing; NULL when out of
 * host memory. pm_lock held. */
static _Atomic(pblock *) *pm_slot(uintptr_t a)
{
    uint64_t k = (uint64_t)a >> 8;
    _Atomic(pm_mid *) *top = &pm_top[k >> (PM_LEAF_BITS + PM_MID_BITS)];
    pm_mid *m = atomic_load_explicit(top, memory_order_relaxed);
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m)
            return NULL;
        atomic_store_explicit(top, m, memory_order_release);
    }
    _Atomic(pm_leaf *) *mid = &m->leaf[(k >> PM_LEAF_BITS) & ((1u << PM_MID_BITS) - 1)];
    pm_leaf *l = atomic_load_explicit(mid, memory_order_relaxed);
    if (!l) {
        l = calloc(1, sizeof *l);
        if (!l)
            return NULL;
        atomic_store_explicit(mid, l, memory_order_release);
    }
    return &l->slot[k & ((1u << PM_LEAF_BITS) - 1)];
}

static void pb_lock(pblock *d)
{
    for (;;) {
        unsigned spins = 0;
        while (atomic_exchange_explicit(&d->lock, 1, memory_order_acquire)) {
            while (atomic_load_explicit(&d->lock, memory_order_relaxed))
                if (++spins > 64)
                    sched_yield();
        }
        /* fork(): as shard_lock, step out until it is done (gpumem__reg_at_fork). */
        if (GPUMEM__LIKELY(!atomic_load_explicit(&gpumem__hot.forking, memory_order_relaxed)))
            return;
        atomic_store_explicit(&d->lock, 0, memory_order_release);
        while (atomic_load_explicit(&gpumem__hot.forking, memory_order_acquire))
            sched_yield();
    }
}

static void pb_unlock(pblock *d)
{
    atomic_store_explicit(&d->lock, 0, memory_order_release);
}

/* As pb_lock, for the exit-time report: gives up after about a thousand tries. */
static int pb_trylock(pblock *d)
{
    for (int i = 0; i < 1000; i++) {
        if (!atomic_exchange_explicit(&d->lock, 1, memory_order_acquire)) {
            if (!atomic_load_explicit(&gpumem__hot.forking, memory_order_relaxed))
                return 1;
            pb_unlock(d);
            return 0;
        }
        sched_yield();
    }
    return 0;
}

/* A record for a new block: from the free list, else a new slab. pm_lock held. */
static pblock *pb_get(void)
{
    if (!pb_free) {
        pb_slab *s = aligned_alloc(64, sizeof(pb_slab));
        if (!s)
            return NULL;
        memset(s, 0, sizeof *s);
        for (unsigned i = 0; i < PB_SLAB; i++) {
            s->b[i].next_free = pb_free;
            pb_free = &s->b[i];
        }
        s->next = atomic_load_explicit(&pb_slabs, memory_order_relaxed);
        atomic_store_explicit(&pb_slabs, s, memory_order_release);
    }
    pblock *d = pb_free;
    pb_free = d->next_free;
    return d;
}

/* ---- pool records: allocation, release and lookups ---- */

/* Makes pool record d hold live allocation r; 0 when d is not r's (reused meanwhile, or the
 * pool and the registry disagree): then the shards take r. */
static int pb_make_live(pblock *d, const gpumem__rec *r)
{
    pb_lock(d);
    if (GPUMEM__UNLIKELY(d->rec.base != r->base || d->live)) {
        pb_unlock(d);
        return 0;
    }
    d->rec = *r;
    d->live = 1;
    pb_unlock(d);
    gpumem__pc_count(r, 0, 1);
    return 1;
}

/* The release of pool record d at a (see gpumem__reg_take); -1 when d has no allocation at a:
 * then the shards answer. */
static int pb_take(pblock *d, uintptr_t a, gpumem_site site, unsigned kind_mask,
                   int *kind_mismatch, gpumem__rec *out)
{
    unsigned tid = gpumem__thread_id();
    pb_lock(d);
    if (GPUMEM__UNLIKELY(d->rec.base != a || (!d->live && !d->rec.seq))) {
        pb_unlock(d);
        return -1;
    }
    if (GPUMEM__UNLIKELY(!d->live || (kind_mask && !(kind_mask & (1u << d->rec.kind))))) {
        int twice = !d->live;
        *out = d->rec;
        pb_unlock(d);
        *kind_mismatch = !twice;
        return twice ? GPUMEM__DOUBLE : GPUMEM__UNKNOWN;
    }
    /* Copied before the release's fields are set: read back just after narrow stores, the
     * record would wait for them (store forwarding; a third of a release's time here). */
    *out = d->rec;
    out->freed_site = site, out->freed_thread = tid, out->freed_stack = 0;
    d->rec.freed_site = site, d->rec.freed_thread = tid, d->rec.freed_stack = 0;
    d->live = 0;
    pb_unlock(d);
    gpumem__pc_count(out, 1, 1);
    return GPUMEM__TAKEN;
}

/* Copies the record of the pool block at a into *out: its live allocation (returns 1) or its
 * last release (returns 2); 0 when there is neither. */
static int pb_read(uintptr_t a, gpumem__rec *out)
{
    pblock *d = pm_find(a);
    if (!d)
        return 0;
    pb_lock(d);
    int got = d->rec.base != a ? 0 : d->live ? 1 : d->rec.seq ? 2 : 0;
    if (got)
        *out = d->rec;
    pb_unlock(d);
    return got;
}

/* Remembers a pool block's last release in its shard's quarantine (the pool gave the block
 * back to CUDA): a later release of the address is still a double free, with both sites. */
static void quarantine_record(const gpumem__rec *r)
{
    shard *s = shard_of(r->base);
    shard_lock(s);
    size_t i = table_find(&s->t, r->base);
    int fresh = i == NONE && table_reserve(&s->t) == 0;
    if (fresh)
        i = table_put(&s->t, r->base);
    if (fresh || (i != NONE && (s->t.keys[i] & RELEASED))) { /* never over a live record */
        s->t.keys[i] = r->base;
        s->t.recs[i] = *r;
        remember_release(s, r->base);
    }
    pthread_mutex_unlock(&s->lock);
}

static void pm_add(uintptr_t base)
{
    if (base & (GPUMEM_ALIGNMENT - 1) || base >> 48 || !base)
        return; /* the shards record such a block */
    pthread_mutex_lock(&pm_lock);
    _Atomic(pblock *) *slot = pm_slot(base);
    pblock *d = slot && !atomic_load_explicit(slot, memory_order_relaxed) ? pb_get() : NULL;
    if (d) {
        pb_lock(d);
        memset(&d->rec, 0, sizeof d->rec);
        d->rec.base = base;
        d->live = 0;
        pb_unlock(d);
        atomic_store_explicit(slot, d, memory_order_release);
    }
    pthread_mutex_unlock(&pm_lock);
}

static void pm_remove(uintptr_t base)
{
    gpumem__rec last;
    int remember = 0;
    pthread_mutex_lock(&pm_lock);
    pblock *d = pm_find(base);
    if (d) {
        atomic_store_explicit(pm_slot(base), NULL, memory_order_release);
        pb_lock(d);
        last = d->rec;
        remember = !d->live && d->rec.seq;
        d->rec.base = 0;
        d->live = 0;
        pb_unlock(d);
        d->next_free = pb_free;
        pb_free = d;
    }
    pthread_mutex_unlock(&pm_lock);
    if (remember)
        quarantine_record(&last);
}

void gpumem__reg_pool_record(uintptr_t base, int add)
{
    if (add)
        pm_add(base);
    else
        pm_remove(base);
}

void gpumem__reg_pool_span(uintptr_t base, size_t bytes, int add)
{
    if (bytes <= SMALL_MAX)
        return;
    if (add)
        gpumem__large_add(base, bytes);
    else
        gpumem__large_remove(base);
}

void gpumem__reg_setup(void)
{
    uint64_t q = gpumem__opt_u64(GPUMEM__OPT_QUARANTINE);
    if (q > QUARANTINE_MAX) {
        fprintf(stderr, "gpumem: warning: GPUMEM_QUARANTINE=%s is more releases than gpumem "
                        "remembers; remembering the last %llu (%llu MiB of host memory)\n",
                gpumem__opt_str(GPUMEM__OPT_QUARANTINE), (unsigned long long)QUARANTINE_MAX,
                (unsigned long long)(QUARANTINE_MAX * sizeof(struct released) >> 20));
        q = QUARANTINE_MAX;
    }
    size_t per = (size_t)(q / SHARDS + (q % SHARDS != 0));
    for (unsigned i = 0; i < SHARDS; i++) {
        pthread_mutex_init(&shards[i].lock, NULL);
        shards[i].ring_cap = per;
    }
}

/* The registry is set up by gpumem's initialization (options first: the quarantine size). */
static void reg_ensure(void)
{
    gpumem__init_once();
}

int gpumem__reg_insert(const gpumem__rec *r)
{
    /* A pool record exists only after initialization. */
    if (r->pool && (r->kind == GPUMEM_KIND_DEVICE || r->kind == GPUMEM_KIND_PINNED)) {
        pblock *d = pm_find(r->base);
        if (GPUMEM__LIKELY(d && pb_make_live(d, r)))
            return 0;
    }
    reg_ensure();
    shard *s = shard_of(r->base);
    shard_lock(s);
    /* An earlier release of the same address gives its slot to the new allocation; its ring
     * entry then finds nothing to forget. */
    size_t i = table_find(&s->t, r->base);
    if (i != NONE) {
        s->t.keys[i] = r->base;
    } else {
        if (table_reserve(&s->t) != 0) {
            pthread_mutex_unlock(&s->lock);
            return -1;
        }
        i = table_put(&s->t, r->base);
    }
    s->t.recs[i] = *r;
    count_live(s, r, 1);
    s->total_count[r->kind]++;
    s->total_bytes[r->kind] += r->bytes;
    s->dev_total_count[gpumem__dev_slot(r->device)]++;
    s->dev_total_bytes[gpumem__dev_slot(r->device)] += r->bytes;
    if (r->bytes > SMALL_MAX && !r->pool)
        gpumem__large_add(r->base, r->bytes);
    pthread_mutex_unlock(&s->lock);
    return 0;
}

/* Marks live address a released and remembers it, forgetting the oldest release first when
 * the ring is full (first: a deletion may move a's slot). The oldest entry may be a stale one:
 * an earlier release of an address that was allocated again since, live now or released
 * again later; only the release the table holds (same sequence number) is forgotten. Without
 * a ring (GPUMEM_QUARANTINE=0, or no memory for it) the entry goes at once. */
static void remember_release(shard *s, uintptr_t a)
{
    if (!s->ring && s->ring_cap) {
        s->ring = malloc(s->ring_cap * sizeof *s->ring);
        if (!s->ring)
            s->ring_cap = 0; /* no host memory for it: not retried at every release */
    }
    if (!s->ring) {
        table_delete(&s->t, table_find(&s->t, a));
        return;
    }
    if (s->ring_len == s->ring_cap) {
        const struct released *oldest = &s->ring[s->ring_head];
        size_t old = table_find(&s->t, oldest->base);
        if (old != NONE && (s->t.keys[old] & RELEASED) && s->t.recs[old].seq == oldest->seq)
            table_delete(&s->t, old);
        s->ring_head = s->ring_head + 1 == s->ring_cap ? 0 : s->ring_head + 1;
        s->ring_len--;
        /* The release to forget next time: its key and record were written a whole ring of
         * releases ago and are cold, two cache misses on this path. Fetched now, they arrive
         * while the program runs until this shard's next release (with fresh addresses at
         * 1 000 000 live: 742 ns a pair before, bench_registry on the build machine). */
        const struct released *next = &s->ring[s->ring_head];
        size_t h = home_of(&s->t, next->base);
        __builtin_prefetch(&s->t.keys[h], 1);
        __builtin_prefetch(&s->t.recs[h].seq, 0);
    }
    size_t i = table_find(&s->t, a);
    s->t.keys[i] = a | RELEASED;
    size_t slot = s->ring_head + s->ring_len;
    s->ring[slot >= s->ring_cap ? slot - s->ring_cap : slot] =
        (struct released){a, s->t.recs[i].seq};
    s->ring_len++;
}

int gpumem__reg_find(const void *p, gpumem__rec *out)
{
    reg_ensure();
    uintptr_t a = (uintptr_t)p;
    if (!a)
        return 0;
    if (!(a & (GPUMEM_ALIGNMENT - 1))) {
        if (pb_read(a, out) == 1)
            return 1;
        /* The common case, an allocation's own base: one shard, no global lock. */
        shard *s = shard_of(a);
        shard_lock(s);
        size_t i = table_find(&s->t, a);
        int live = i != NONE && !(s->t.keys[i] & RELEASED);
        if (live)
            *out = s->t.recs[i];
        pthread_mutex_unlock(&s->lock);
        if (live)
            return 1;
    }
    uintptr_t large_base = gpumem__large_find(a);
    uintptr_t lowest = a >= SMALL_MAX ? a - SMALL_MAX : 0;
    uintptr_t cand = a & ~(uintptr_t)(GPUMEM_ALIGNMENT - 1);
    if (large_base)
        cand = large_base; /* allocations do not overlap: nothing else can contain a */
    for (;;) {
        gpumem__rec pr;
        if (pb_read(cand, &pr) == 1) {
            int inside = a - pr.base < pr.bytes;
            if (inside)
                *out = pr;
            return inside;
        }
        shard *s = shard_of(cand);
        shard_lock(s);
        size_t i = table_find(&s->t, cand);
        if (i != NONE && !(s->t.keys[i] & RELEASED)) {
            const gpumem__rec *r = &s->t.recs[i];
            int inside = a - r->base < r->bytes;
            if (inside)
                *out = *r;
            pthread_mutex_unlock(&s->lock);
            return inside;
        }
        pthread_mutex_unlock(&s->lock);
        if (large_base || cand < GPUMEM_ALIGNMENT || cand - GPUMEM_ALIGNMENT < lowest)
            return 0;
        cand -= GPUMEM_ALIGNMENT;
    }
}

/* Walks the aligned addresses from a's own down to SMALL_MAX below it, asking judge of every
 * entry found there (live or released): 1 takes it (copied to *out, the walk answers 1), -1
 * ends the walk with 0, 0 goes on. Error and query paths only: up to 256 shard lookups. */
static int walk_down(uintptr_t a, int (*judge)(uintptr_t a, uintptr_t key, const gpumem__rec *r),
                     gpumem__rec *out)
{
    reg_ensure();
    if (!a)
        return 0; /* NULL is in no allocation (and key 0 marks an empty slot) */
    uintptr_t lowest = a >= SMALL_MAX ? a - SMALL_MAX : 0;
    for (uintptr_t cand = a & ~(uintptr_t)(GPUMEM_ALIGNMENT - 1);;
         cand -= GPUMEM_ALIGNMENT) {
        gpumem__rec pr;
        int held = cand ? pb_read(cand, &pr) : 0; /* a pool block's record comes first */
        if (held) {
            int verdict = judge(a, held == 1 ? cand : cand | RELEASED, &pr);
            if (verdict > 0)
                *out = pr;
            if (verdict)
                return verdict > 0;
            if (cand < GPUMEM_ALIGNMENT || cand - GPUMEM_ALIGNMENT < lowest)
                return 0;
            continue;
        }
        shard *s = shard_of(cand);
        shard_lock(s);
        size_t i = cand ? table_find(&s->t, cand) : NONE;
        int verdict = i == NONE ? 0 : judge(a, s->t.keys[i], &s->t.recs[i]);
        if (verdict > 0)
            *out = s->t.recs[i];
        pthread_mutex_unlock(&s->lock);
        if (verdict)
            return verdict > 0;
        if (cand < GPUMEM_ALIGNMENT || cand - GPUMEM_ALIGNMENT < lowest)
            return 0;
    }
}

static int live_one(uintptr_t a, uintptr_t key, const gpumem__rec *r)
{
    (void)a, (void)r;
    return !(key & RELEASED);
}

/* A released allocation holding a; a live one below ends the search (allocations do not
 * overlap). The base itself counts for any size, the addresses below for small ones. */
static int released_holding(uintptr_t a, uintptr_t key, const gpumem__rec *r)
{
    if (!(key & RELEASED))
        return -1;
    return a - r->base < (r->bytes ? r->bytes : 1);
}

int gpumem__reg_find_below(const void *p, gpumem__rec *out)
{
    return walk_down((uintptr_t)p, live_one, out);
}

int gpumem__reg_find_released(const void *p, gpumem__rec *out)
{
    return walk_down((uintptr_t)p, released_holding, out);
}

gpumem__take_result gpumem__reg_take(const void *p, gpumem_site site, unsigned kind_mask,
                                     int *kind_mismatch, gpumem__rec *out)
{
    uintptr_t a = (uintptr_t)p;
    *kind_mismatch = 0;
    pblock *d = pm_find(a);
    if (d) {
        int res = pb_take(d, a, site, kind_mask, kind_mismatch, out);
        if (GPUMEM__LIKELY(res >= 0))
            return (gpumem__take_result)res;
    }
    reg_ensure();
    shard *s = shard_of(a);
    shard_lock(s);
    size_t i = table_find(&s->t, a);
    if (i != NONE && (s->t.keys[i] & RELEASED)) {
        *out = s->t.recs[i]; /* a released base cannot lie inside a live allocation */
        pthread_mutex_unlock(&s->lock);
        return GPUMEM__DOUBLE;
    }
    if (i != NONE) {
        gpumem__rec *r = &s->t.recs[i];
        if (kind_mask && !(kind_mask & (1u << r->kind))) {
            *out = *r;
            *kind_mismatch = 1;
            pthread_mutex_unlock(&s->lock);
            return GPUMEM__UNKNOWN;
        }
        count_live(s, r, -1);
        if (r->bytes > SMALL_MAX && !r->pool)
            gpumem__large_remove(a);
        r->freed_site = site;
        r->freed_thread = gpumem__thread_id();
        *out = *r;
        remember_release(s, a);
        pthread_mutex_unlock(&s->lock);
        return GPUMEM__TAKEN;
    }
    pthread_mutex_unlock(&s->lock);
    return gpumem__reg_find(p, out) ? GPUMEM__INTERIOR : GPUMEM__UNKNOWN;
}

void gpumem__reg_set_freed_stack(const void *p, uint32_t stack)
{
    uintptr_t a = (uintptr_t)p;
    pblock *d = pm_find(a);
    if (d) {
        pb_lock(d);
        int mine = d->rec.base == a && !d->live && d->rec.seq;
        if (mine)
            d->rec.freed_stack = stack;
        pb_unlock(d);
        if (mine)
            return;
    }
    shard *s = shard_of(a);
    shard_lock(s);
    size_t i = table_find(&s->t, a);
    if (i != NONE && (s->t.keys[i] & RELEASED))
        s->t.recs[i].freed_stack = stack;
    pthread_mutex_unlock(&s->lock);
}

void gpumem__reg_untake(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    pblock *d = pm_find(a);
    if (d) {
        pb_lock(d);
        int mine = d->rec.base == a && !d->live && d->rec.seq;
        if (mine) {
            d->live = 1;
            d->rec.freed_site = (gpumem_site){NULL, NULL, 0};
            d->rec.freed_thread = 0;
            d->rec.freed_stack = 0;
        }
        gpumem__rec r = d->rec;
        pb_unlock(d);
        if (mine) {
            gpumem__pc_count(&r, 1, -1);
            return;
        }
    }
    shard *s = shard_of(a);
    shard_lock(s);
    size_t i = table_find(&s->t, a);
    if (i != NONE && (s->t.keys[i] & RELEASED)) { /* its ring entry finds nothing later */
        gpumem__rec *r = &s->t.recs[i];
        s->t.keys[i] = a;
        r->freed_site = (gpumem_site){NULL, NULL, 0};
        r->freed_thread = 0;
        r->freed_stack = 0;
        count_live(s, r, 1);
        if (r->bytes > SMALL_MAX && !r->pool)
            gpumem__large_add(r->base, r->bytes);
    }
    pthread_mutex_unlock(&s->lock);
}

void gpumem__reg_live(gpumem_live *out)
{
    reg_ensure();
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &shards[i];
        shard_lock(s);
        for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
            out->count[k] += s->live_count[k];
            out->bytes[k] += s->live_bytes[k];
        }
        pthread_mutex_unlock(&s->lock);
    }
    gpumem__counts pc;
    memset(&pc, 0, sizeof pc);
    gpumem__pc_sum(&pc);
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        out->count[k] += pc.count[k].current;
        out->bytes[k] += pc.bytes[k];
    }
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        out->count[0] += out->count[k];
        out->bytes[0] += out->bytes[k];
    }
}

void gpumem__reg_counts(gpumem__counts *out)
{
    reg_ensure();
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &shards[i];
        shard_lock(s);
        for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
            out->count[k].current += s->live_count[k];
            out->count[k].total += s->total_count[k];
            out->bytes[k] += s->live_bytes[k];
            out->total_bytes[k] += s->total_bytes[k];
        }
        for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
            out->device_count[d].current += s->dev_live_count[d];
            out->device_count[d].total += s->dev_total_count[d];
            out->device_bytes[d] += s->dev_live_bytes[d];
            out->device_total_bytes[d] += s->dev_total_bytes[d];
        }
        pthread_mutex_unlock(&s->lock);
    }
    gpumem__pc_sum(out);
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        out->count[0].current += out->count[k].current;
        out->count[0].total += out->count[k].total;
        out->bytes[0] += out->bytes[k];
        out->total_bytes[0] += out->total_bytes[k];
    }
}

int gpumem__reg_foreach(int (*fn)(const gpumem__rec *r, void *arg), void *arg, int try_only)
{
    reg_ensure();
    int skipped = 0;
    /* A shard held by a thread that runs on is free again within microseconds; one held by
     * the code a signal interrupted never is. 50 ms in all bounds the wait for both. */
    long budget_ns = 50 * 1000 * 1000;
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &shards[i];
        int stop = 0;
        if (try_only) {
            if (!shard_trylock(s, &budget_ns)) {
                skipped++;
                continue;
            }
        } else {
            shard_lock(s);
        }
        for (size_t j = 0; s->t.keys && j <= s->t.mask && !stop; j++)
            if (s->t.keys[j] && !(s->t.keys[j] & RELEASED))
                stop = fn(&s->t.recs[j], arg);
        pthread_mutex_unlock(&s->lock);
        if (stop)
            return skipped;
    }
    /* Then the pool records, each copied under its lock and visited after. */
    for (pb_slab *sl = atomic_load_explicit(&pb_slabs, memory_order_acquire); sl; sl = sl->next) {
        for (unsigned i = 0; i < PB_SLAB; i++) {
            pblock *d = &sl->b[i];
            gpumem__rec r;
            if (try_only ? !pb_trylock(d) : (pb_lock(d), 0)) {
                skipped++;
                continue;
            }
            int live = d->live && d->rec.base;
            if (live)
                r = d->rec;
            pb_unlock(d);
            if (live && fn(&r, arg))
                return skipped;
        }
    }
    return skipped;
}

void gpumem__reg_storage(void (*fn)(const void *p, size_t bytes, void *arg), void *arg)
{
    /* Read under each shard's lock (threads may still insert, and grow a table, while the
     * exit-time scan runs), with the exit report's bounded wait: a shard that stays busy is
     * left out, and the scan may then take its records for references. fn runs unlocked. */
    long budget_ns = 50 * 1000 * 1000;
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &shards[i];
        if (!shard_trylock(s, &budget_ns))
            continue;
        const void *keys = s->t.keys, *recs = s->t.recs, *ring = s->ring;
        size_t slots = s->t.keys ? s->t.mask + 1 : 0, ring_bytes = s->ring_cap * sizeof *s->ring;
        pthread_mutex_unlock(&s->lock);
        if (keys) {
            fn(keys, slots * sizeof *s->t.keys, arg);
            fn(recs, slots * sizeof *s->t.recs, arg);
        }
        if (ring)
            fn(ring, ring_bytes, arg);
    }
    gpumem__large_storage(fn, arg);
    for (pb_slab *sl = atomic_load_explicit(&pb_slabs, memory_order_acquire); sl; sl = sl->next)
        fn(sl, sizeof *sl, arg);
}

/* fork(): every shard emptied of threads (see gpumem__hot.forking). The table of large allocations
 * needs no lock of its own then: it changes only under a shard's lock or a pool's, and fork holds
 * every pool's (fork.c). A thread may still have been reading it, so the child starts its lock
 * afresh (unlocking would not do: glibc tells a writer's unlock from a reader's by the thread id,
 * which the child's thread does not share with the parent's). The child keeps every record:
 * allocations it inherited (fork.c says how reports tell them apart). */
void gpumem__reg_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE) {
        atomic_store_explicit(&gpumem__hot.forking, 1, memory_order_relaxed);
        for (unsigned i = 0; i < SHARDS; i++) {
            pthread_mutex_lock(&shards[i].lock);
            pthread_mutex_unlock(&shards[i].lock);
        }
        /* The pool records likewise (their writers hold pm_lock under a pool's lock, which
         * fork holds by now), then the two locks of the pool records, held across fork. */
        pthread_mutex_lock(&pm_lock);
        for (pb_slab *sl = atomic_load_explicit(&pb_slabs, memory_order_acquire); sl; sl = sl->next)
            for (unsigned i = 0; i < PB_SLAB; i++) {
                while (atomic_exchange_explicit(&sl->b[i].lock, 1, memory_order_acquire))
                    sched_yield();
                pb_unlock(&sl->b[i]);
            }
        gpumem__pc_at_fork(phase);
        return;
    }
    if (phase == GPUMEM__FORK_CHILD) {
        /* A thread that took a shard after prepare passed it holds it for a moment, to see
         * the fork under way and leave, touching nothing: the fork may copy it holding the
         * shard. */
        for (unsigned i = 0; i < SHARDS; i++)
            pthread_mutex_init(&shards[i].lock, NULL);
        gpumem__large_at_fork_child();
        for (pb_slab *sl = atomic_load_explicit(&pb_slabs, memory_order_relaxed); sl; sl = sl->next)
            for (unsigned i = 0; i < PB_SLAB; i++)
                atomic_store_explicit(&sl->b[i].lock, 0, memory_order_relaxed);
        /* The counters of the parent's other threads stay in the list: the child inherited
         * their allocations, and no thread of the child ends to fold them. */
    }
    gpumem__pc_at_fork(phase);
    pthread_mutex_unlock(&pm_lock);
    atomic_store_explicit(&gpumem__hot.forking, 0, memory_order_release);
}

void gpumem_live_get(gpumem_live *out)
{
    if (out)
        gpumem__reg_live(out);
}

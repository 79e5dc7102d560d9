/* The registry: every live gpumem allocation, and a bounded quarantine of released ones.
 *
 * Exact lookups (the release path) are O(1): the address hashes to one of 64 shards, each a
 * chained hash table under its own mutex, so threads releasing different pointers rarely
 * meet. A released record moves to its shard's quarantine (same shard: same key), which is
 * what tells a double free from a pointer gpumem never saw.
 *
 * Interior lookups (an address inside an allocation) are rarer: error paths and queries.
 * Every base is a multiple of GPUMEM_ALIGNMENT, so an allocation of at most SMALL_MAX bytes
 * that contains p starts at one of the SMALL_MAX / 256 aligned addresses at or below p; those
 * are probed from p downwards. Larger allocations are few (each costs CUDA tens of
 * microseconds or more) and also sit in one sorted array searched by bisection. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SHARD_BITS 6
#define SHARDS (1u << SHARD_BITS)
#define SMALL_MAX ((size_t)64 * 1024)
#define MIN_BUCKETS 64u

typedef struct {
    gpumem__rec **buckets;
    size_t mask;
    size_t count;
} table;

typedef struct {
    pthread_mutex_t lock;
    table live;
    table freed;
    gpumem__rec **ring; /* quarantine in release order, oldest at ring[head] */
    size_t ring_cap, ring_len, ring_head;
    uint64_t live_count[GPUMEM_KIND_COUNT_];
    uint64_t live_bytes[GPUMEM_KIND_COUNT_];
    char pad[64];
} shard;

static shard shards[SHARDS];

/* Allocations larger than SMALL_MAX, sorted by base, for interior lookups. */
static struct {
    pthread_rwlock_t lock;
    uintptr_t *base;
    size_t *bytes;
    size_t len, cap;
} large = {PTHREAD_RWLOCK_INITIALIZER, NULL, NULL, 0, 0};

static inline uint64_t hash_addr(uintptr_t a)
{
    return (uint64_t)(a >> 8) * 0x9E3779B97F4A7C15ull;
}
static inline shard *shard_of(uintptr_t a)
{
    return &shards[hash_addr(a) >> (64 - SHARD_BITS)];
}
static inline size_t bucket_of(const table *t, uintptr_t a)
{
    return (size_t)(hash_addr(a) >> 24) & t->mask;
}

void gpumem__reg_setup(void)
{
    size_t q = (size_t)gpumem__opt_u64(GPUMEM__OPT_QUARANTINE);
    size_t per = q / SHARDS + (q % SHARDS != 0);
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

/* Grows t so that it holds one more entry at load factor <= 1. Returns 0, or -1 when out of
 * host memory (the table still works, only with longer chains). */
static int table_reserve(table *t)
{
    if (t->buckets && t->count < t->mask + 1)
        return 0;
    size_t n = t->buckets ? (t->mask + 1) * 2 : MIN_BUCKETS;
    gpumem__rec **nb = calloc(n, sizeof *nb);
    if (!nb)
        return t->buckets ? 0 : -1;
    table nt = {nb, n - 1, t->count};
    if (t->buckets) {
        for (size_t i = 0; i <= t->mask; i++) {
            gpumem__rec *r = t->buckets[i];
            while (r) {
                gpumem__rec *next = r->next;
                size_t b = bucket_of(&nt, r->base);
                r->next = nb[b];
                nb[b] = r;
                r = next;
            }
        }
        free(t->buckets);
    }
    *t = nt;
    return 0;
}

static gpumem__rec *table_get(const table *t, uintptr_t a)
{
    if (!t->buckets)
        return NULL;
    for (gpumem__rec *r = t->buckets[bucket_of(t, a)]; r; r = r->next)
        if (r->base == a)
            return r;
    return NULL;
}

static gpumem__rec *table_remove(table *t, uintptr_t a)
{
    if (!t->buckets)
        return NULL;
    for (gpumem__rec **pp = &t->buckets[bucket_of(t, a)]; *pp; pp = &(*pp)->next) {
        gpumem__rec *r = *pp;
        if (r->base == a) {
            *pp = r->next;
            t->count--;
            return r;
        }
    }
    return NULL;
}

/* Chains into a bucket; the caller has reserved room or accepts a longer chain. */
static void table_put(table *t, gpumem__rec *r)
{
    size_t b = bucket_of(t, r->base);
    r->next = t->buckets[b];
    t->buckets[b] = r;
    t->count++;
}

static void large_add(uintptr_t base, size_t bytes)
{
    pthread_rwlock_wrlock(&large.lock);
    if (large.len == large.cap) {
        size_t n = large.cap ? large.cap * 2 : 64;
        uintptr_t *nb = realloc(large.base, n * sizeof *nb);
        if (nb)
            large.base = nb;
        size_t *nz = nb ? realloc(large.bytes, n * sizeof *nz) : NULL;
        if (nz)
            large.bytes = nz;
        if (!nb || !nz) { /* interior lookups of this one will miss; nothing else breaks */
            pthread_rwlock_unlock(&large.lock);
            return;
        }
        large.cap = n;
    }
    size_t lo = 0, hi = large.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (large.base[mid] < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(large.base + lo + 1, large.base + lo, (large.len - lo) * sizeof *large.base);
    memmove(large.bytes + lo + 1, large.bytes + lo, (large.len - lo) * sizeof *large.bytes);
    large.base[lo] = base;
    large.bytes[lo] = bytes;
    large.len++;
    pthread_rwlock_unlock(&large.lock);
}

static void large_remove(uintptr_t base)
{
    pthread_rwlock_wrlock(&large.lock);
    size_t lo = 0, hi = large.len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (large.base[mid] < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < large.len && large.base[lo] == base) {
        memmove(large.base + lo, large.base + lo + 1, (large.len - lo - 1) * sizeof *large.base);
        memmove(large.bytes + lo, large.bytes + lo + 1,
                (large.len - lo - 1) * sizeof *large.bytes);
        large.len--;
    }
    pthread_rwlock_unlock(&large.lock);
}

/* Base of the large allocation containing a, or 0. */
static uintptr_t large_find(uintptr_t a)
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

gpumem__rec *gpumem__rec_new(void)
{
    return calloc(1, sizeof(gpumem__rec));
}

void gpumem__rec_discard(gpumem__rec *r)
{
    free(r);
}

void gpumem__reg_insert(gpumem__rec *r)
{
    reg_ensure();
    shard *s = shard_of(r->base);
    pthread_mutex_lock(&s->lock);
    /* The address may still sit in quarantine from an earlier allocation at the same place;
     * the live record takes precedence in every lookup, so it can stay. */
    table_reserve(&s->live);
    table_put(&s->live, r);
    s->live_count[r->kind]++;
    s->live_bytes[r->kind] += r->bytes;
    if (r->bytes > SMALL_MAX)
        large_add(r->base, r->bytes);
    pthread_mutex_unlock(&s->lock);
}

/* Slot of r in the quarantine ring, searched newest first: a loop that allocates and
 * releases gets the same address back from CUDA, so the match is usually the newest. */
static size_t ring_index_of(const shard *s, const gpumem__rec *r)
{
    for (size_t i = s->ring_len; i-- > 0;) {
        size_t k = (s->ring_head + i) % s->ring_cap;
        if (s->ring[k] == r)
            return k;
    }
    return (size_t)-1;
}

/* Removes r from the ring; the newest entry fills its slot, which breaks release order by
 * one place at most, and only on this rare path. */
static void ring_drop(shard *s, const gpumem__rec *r)
{
    size_t k = ring_index_of(s, r);
    if (k == (size_t)-1)
        return;
    s->ring[k] = s->ring[(s->ring_head + s->ring_len - 1) % s->ring_cap];
    s->ring_len--;
}

/* Puts a released record into its shard's quarantine, evicting the oldest when full. */
static void quarantine_put(shard *s, gpumem__rec *r)
{
    if (s->ring_cap == 0) {
        free(r);
        return;
    }
    if (!s->ring) {
        s->ring = calloc(s->ring_cap, sizeof *s->ring);
        if (!s->ring) {
            free(r);
            return;
        }
    }
    gpumem__rec *old = table_remove(&s->freed, r->base); /* keep the latest release only */
    if (old) {
        /* Its ring slot is reused by the newer release of the same address. */
        size_t k = ring_index_of(s, old);
        if (k != (size_t)-1)
            s->ring[k] = r;
        free(old);
    } else {
        if (s->ring_len == s->ring_cap) {
            gpumem__rec *victim = s->ring[s->ring_head];
            table_remove(&s->freed, victim->base);
            free(victim);
            s->ring_head = (s->ring_head + 1) % s->ring_cap;
            s->ring_len--;
        }
        s->ring[(s->ring_head + s->ring_len) % s->ring_cap] = r;
        s->ring_len++;
    }
    if (table_reserve(&s->freed) != 0 && !s->freed.buckets) {
        /* No table at all: forget it rather than lose track of the ring. */
        ring_drop(s, r);
        free(r);
        return;
    }
    table_put(&s->freed, r);
}

int gpumem__reg_find(const void *p, gpumem__rec *out)
{
    reg_ensure();
    uintptr_t a = (uintptr_t)p;
    if (!a)
        return 0;
    uintptr_t large_base = large_find(a);
    uintptr_t lowest = a >= SMALL_MAX ? a - SMALL_MAX : 0;
    uintptr_t cand = a & ~(uintptr_t)(GPUMEM_ALIGNMENT - 1);
    if (large_base)
        cand = large_base; /* allocations do not overlap: nothing else can contain a */
    for (;;) {
        shard *s = shard_of(cand);
        pthread_mutex_lock(&s->lock);
        gpumem__rec *r = table_get(&s->live, cand);
        if (r) {
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

gpumem__take_result gpumem__reg_take(const void *p, gpumem_site site, unsigned kind_mask,
                                     int *kind_mismatch, gpumem__rec *out)
{
    reg_ensure();
    uintptr_t a = (uintptr_t)p;
    shard *s = shard_of(a);
    *kind_mismatch = 0;
    pthread_mutex_lock(&s->lock);
    gpumem__rec *r = table_get(&s->live, a);
    if (r) {
        *out = *r;
        if (kind_mask && !(kind_mask & (1u << r->kind))) {
            *kind_mismatch = 1;
            pthread_mutex_unlock(&s->lock);
            return GPUMEM__UNKNOWN;
        }
        table_remove(&s->live, a);
        s->live_count[r->kind]--;
        s->live_bytes[r->kind] -= r->bytes;
        if (r->bytes > SMALL_MAX)
            large_remove(a);
        r->freed_site = site;
        r->freed_thread = gpumem__thread_id();
        *out = *r;
        quarantine_put(s, r);
        pthread_mutex_unlock(&s->lock);
        return GPUMEM__TAKEN;
    }
    pthread_mutex_unlock(&s->lock);

    if (gpumem__reg_find(p, out))
        return GPUMEM__INTERIOR;

    pthread_mutex_lock(&s->lock);
    r = table_get(&s->freed, a);
    if (r)
        *out = *r;
    pthread_mutex_unlock(&s->lock);
    return r ? GPUMEM__DOUBLE : GPUMEM__UNKNOWN;
}

void gpumem__reg_untake(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    shard *s = shard_of(a);
    pthread_mutex_lock(&s->lock);
    gpumem__rec *r = table_remove(&s->freed, a);
    if (r) {
        ring_drop(s, r);
        r->freed_site = (gpumem_site){NULL, NULL, 0};
        r->freed_thread = 0;
        table_reserve(&s->live);
        table_put(&s->live, r);
        s->live_count[r->kind]++;
        s->live_bytes[r->kind] += r->bytes;
        if (r->bytes > SMALL_MAX)
            large_add(r->base, r->bytes);
    }
    pthread_mutex_unlock(&s->lock);
}

void gpumem__reg_live(gpumem_live *out)
{
    reg_ensure();
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &shards[i];
        pthread_mutex_lock(&s->lock);
        for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
            out->count[k] += s->live_count[k];
            out->bytes[k] += s->live_bytes[k];
        }
        pthread_mutex_unlock(&s->lock);
    }
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        out->count[0] += out->count[k];
        out->bytes[0] += out->bytes[k];
    }
}

void gpumem__reg_foreach(int (*fn)(const gpumem__rec *r, void *arg), void *arg)
{
    reg_ensure();
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &shards[i];
        int stop = 0;
        pthread_mutex_lock(&s->lock);
        for (size_t b = 0; s->live.buckets && b <= s->live.mask && !stop; b++)
            for (gpumem__rec *r = s->live.buckets[b]; r && !stop; r = r->next)
                stop = fn(r, arg);
        pthread_mutex_unlock(&s->lock);
        if (stop)
            return;
    }
}

void gpumem_live_get(gpumem_live *out)
{
    if (out)
        gpumem__reg_live(out);
}

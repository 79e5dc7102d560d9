/* Thread caches in front of the pools (tcmalloc's and mimalloc's idea, for gpumem's pools).
 *
 * A pool's own caches sit behind the pool's one mutex, a line every thread writes: with 16
 * threads allocating at once, that line and that mutex were the whole cost. So each thread
 * keeps, per pool and stream it uses (a bin), a short stack of released block addresses per
 * size class. gpumem_free of a pool block pushes the address onto the releasing thread's bin
 * for the block's stream (the thread that allocated it does not matter: a block freed on
 * another thread goes to that thread's cache); gpumem_pool_alloc pops from the calling
 * thread's bin for its stream, and reaches the pool only when that is empty.
 *
 * Stream order is kept exactly as in the pool's own per-stream caches: a device block is
 * cached under the stream it is released on and handed out only to requests on that stream.
 * Pinned blocks are all cached under the NULL stream.
 *
 * The pool still owns every block: to the pool, a block in a thread cache is in use, and
 * each bin counts what it holds (bytes, blocks), the requested bytes of its allocations and
 * releases, and its hits, so that gpumem_pool_stats adds the bins to the pool's own figures
 * and gets what the pool alone gave before. Peaks are the pool's: peak_in_use counts blocks
 * in thread caches as in use (at most what the bounds below allow per thread).
 *
 * Bounds: only classes up to TC_MAX_BYTES are cached here; a class keeps at most
 * cap_of(size) blocks (32 small ones, 2 of 1 MiB or more); when a push finds the stack
 * full, half of it goes back to the pool in one locked call. A thread's caches together hold
 * at most TC_THREAD_BYTES: a push past that empties the class's stack into the pool, and if
 * that is not enough, the block goes to the pool too. The bounds are small (2 MiB a class, 4
 * MiB a thread) because a block in a thread cache does not merge with its free neighbours in
 * the pool: with 32 MiB a thread, a replayed training loop with batches of random lengths held
 * 70 MiB for 28 MiB requested; with 4 MiB, 36 MiB (30 MiB without thread caches). A thread
 * has at most TC_BINS bins; a pool or stream past that goes to the pool directly.
 *
 * Exclusion without atomic instructions on the owner's side. A thread cache is used by its
 * own thread for every push and pop, and by other threads only to trim, destroy or read a
 * pool's statistics, which visit every thread cache through one list. Even an uncontended
 * lock would cost each push and pop an atomic exchange (a full fence); instead the two sides
 * use Dekker's protocol with asymmetric fences, as userspace RCU and folly do: the owner
 * marks itself active with a plain store, then reads the cache's remote flag, with only a
 * compiler barrier between; a visitor sets remote on every cache, then calls
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full fence on every thread of
 * the process, then waits for each owner to be inactive. Either the owner's active store was
 * before that fence, and the visitor sees it and waits, or the owner's read comes after it
 * and sees remote, and the owner steps back until the visitor is done. Where membarrier is not
 * available (old kernels, seccomp), the owner uses a full fence instead: correct, and as
 * costly as a lock. So the visitors pay, a system call each (microseconds), and the pairs do
 * not.
 *
 * Order: the list's mutex, then thread caches, then a pool's mutex; a pool never calls in
 * here with its mutex held. When a thread ends, its caches go back to their pools. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

/* ThreadSanitizer does not model fences or membarrier (GCC refuses atomic_thread_fence under
 * it). In such builds the owner's and the visitor's store and load are seq_cst instead, which
 * gives Dekker's order by themselves, and no fence or membarrier is used. */
#if defined(__SANITIZE_THREAD__)
#define TC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TC_TSAN 1
#endif
#endif
#ifdef TC_TSAN
#define TC_STORE memory_order_seq_cst
#define TC_LOAD memory_order_seq_cst
#define tc_full_fence() ((void)0)
#else
#define TC_TSAN 0
#define TC_STORE memory_order_relaxed
#define TC_LOAD memory_order_acquire
#define tc_full_fence() atomic_thread_fence(memory_order_seq_cst)
#endif

#define TC_BINS 16
#define TC_MAX_BYTES ((size_t)4 << 20)
#define TC_STACK_BYTES ((size_t)2 << 20)
#define TC_STACK_MAX 32u
#define TC_THREAD_BYTES ((int64_t)4 << 20) /* what one thread's caches hold at most */
/* A cache and its stacks are written by their thread on every pair: each takes whole lines of
 * its own, two at a time (x86 prefetchers fetch lines in pairs), so no other object of the heap,
 * written by another thread, shares one with them. */
#define TC_LINE ((size_t)128)

typedef struct tc_stack {
    unsigned n, cap;
    uintptr_t base[];
} tc_stack;

typedef struct tc_bin {
    struct gpumem_pool *pool; /* NULL: a free bin */
    cudaStream_t stream;
    tc_stack *cls[GPUMEM__TC_CLASSES];
    gpumem__tc_counts counts;
} tc_bin;

typedef struct tcache {
    _Alignas(64) atomic_int active; /* written by the owner: inside a push or pop */
    atomic_int remote;              /* written by a visitor (list lock held) */
    tc_bin *last;
    int64_t bytes;              /* cached in all bins */
    struct tcache *prev, *next; /* the list of every thread's cache */
    tc_bin bins[TC_BINS];
} tcache;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static tcache *list_head;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local tcache *mine;
static _Thread_local int gone; /* the thread is ending: no new cache after its destructor */
/* gpumem__hot.asymmetric: membarrier is registered, owners need no fence. Set once, by the first
 * thread that makes a cache (make_key); read by owners on every push and pop and by visitors.
 * Atomic, relaxed: a visitor may be a thread that never made a cache, reading it while the first
 * cache's thread sets it (a data race ThreadSanitizer reported whenever a trim or statistics call
 * raced a pool's first allocation). Relaxed order is enough: the value matters to a visitor only
 * for the caches in the list, and a cache joins the list under the list's lock after its thread set
 * the value, so a visitor holding that lock reads it; a relaxed load costs the owners what the
 * plain one did (one mov on x86-64 and arm64). */

/* The owner's side: marks t active unless a visitor is in it (then waits for it to go). */
static inline void enter(tcache *t)
{
    for (;;) {
        atomic_store_explicit(&t->active, 1, TC_STORE);
        if (GPUMEM__LIKELY(atomic_load_explicit(&gpumem__hot.asymmetric, memory_order_relaxed)))
            atomic_signal_fence(memory_order_seq_cst); /* the visitor's membarrier fences */
        else
            tc_full_fence();
        if (GPUMEM__LIKELY(!atomic_load_explicit(&t->remote, TC_LOAD)))
            return;
        atomic_store_explicit(&t->active, 0, memory_order_release);
        while (atomic_load_explicit(&t->remote, memory_order_acquire))
            sched_yield();
    }
}

static inline void leave(tcache *t)
{
    atomic_store_explicit(&t->active, 0, memory_order_release);
}

/* The visitors' side, list lock held: afterwards no owner is in its cache until visit_end. */
static void visit_begin(void)
{
    for (tcache *t = list_head; t; t = t->next)
        atomic_store_explicit(&t->remote, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&gpumem__hot.asymmetric, memory_order_relaxed))
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    else
        tc_full_fence();
    for (tcache *t = list_head; t; t = t->next) {
        while (atomic_load_explicit(&t->active, TC_LOAD))
            sched_yield();
    }
}

static void visit_end(void)
{
    for (tcache *t = list_head; t; t = t->next)
        atomic_store_explicit(&t->remote, 0, memory_order_release);
}

static unsigned cap_of(size_t size)
{
    size_t cap = TC_STACK_BYTES / size;
    return cap > TC_STACK_MAX ? TC_STACK_MAX : cap < 2 ? 2u : (unsigned)cap;
}

/* Gives every block of bin back to its pool; forget frees the bin too. The list lock is
 * held and the owner is out (visit_begin), or the owner is ending. */
static void drain_bin(tcache *t, tc_bin *bin, int forget)
{
    for (unsigned k = 0; k < GPUMEM__TC_CLASSES; k++) {
        tc_stack *s = bin->cls[k];
        if (s && s->n) {
            gpumem__pool_tc_return(bin->pool, bin->stream, k, s->base, s->n);
            int64_t bytes = (int64_t)s->n * (int64_t)gpumem__pool_class_size(k);
            bin->counts.cached_bytes -= bytes;
            t->bytes -= bytes;
            bin->counts.cached_blocks -= s->n;
            s->n = 0;
        }
        if (forget) {
            free(s);
            bin->cls[k] = NULL;
        }
    }
    /* The bin's requested bytes and hits belong to the pool now. */
    gpumem__pool_tc_fold(bin->pool, &bin->counts);
    memset(&bin->counts, 0, sizeof bin->counts);
    if (forget)
        bin->pool = NULL;
}

/* A thread's destructor: its caches go back to their pools, under the list lock so that a
 * pool being destroyed meanwhile either drained this cache already or waits for it. */
static void at_thread_exit(void *arg)
{
    tcache *t = arg;
    gone = 1;
    pthread_mutex_lock(&list_lock); /* no visitor meanwhile: it would hold this lock */
    for (unsigned i = 0; i < TC_BINS; i++)
        if (t->bins[i].pool)
            drain_bin(t, &t->bins[i], 1);
    if (t->prev)
        t->prev->next = t->next;
    else
        list_head = t->next;
    if (t->next)
        t->next->prev = t->prev;
    pthread_mutex_unlock(&list_lock);
    free(t);
    mine = NULL;
}

/* Whether owners may rely on the visitors' membarrier: registered for this process. */
static int register_membarrier(void)
{
    return !TC_TSAN &&
           syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static void make_key(void)
{
    pthread_key_create(&exit_key, at_thread_exit);
    atomic_store_explicit(&gpumem__hot.asymmetric, register_membarrier(), memory_order_relaxed);
}

/* bytes of memory aligned to whole lines, which free() releases; NULL without memory. */
static void *line_alloc(size_t bytes)
{
    return aligned_alloc(TC_LINE, (bytes + TC_LINE - 1) / TC_LINE * TC_LINE);
}

/* The calling thread's cache, made on first use; NULL when out of host memory or ending. */
static tcache *my_cache(void)
{
    if (GPUMEM__LIKELY(mine != NULL))
        return mine;
    if (gone)
        return NULL;
    pthread_once(&key_once, make_key);
    tcache *t = line_alloc(sizeof *t);
    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    if (pthread_setspecific(exit_key, t) != 0) {
        free(t);
        return NULL;
    }
    pthread_mutex_lock(&list_lock);
    t->next = list_head;
    if (list_head)
        list_head->prev = t;
    list_head = t;
    pthread_mutex_unlock(&list_lock);
    return mine = t;
}

/* The bin of (pool, stream) in t; with create, a free one is taken. Inside enter. */
static tc_bin *bin_of(tcache *t, struct gpumem_pool *pool, cudaStream_t stream, int create)
{
    tc_bin *b = t->last;
    if (GPUMEM__LIKELY(b && b->pool == pool && b->stream == stream))
        return b;
    tc_bin *empty = NULL;
    for (unsigned i = 0; i < TC_BINS; i++) {
        b = &t->bins[i];
        if (b->pool == pool && b->stream == stream)
            return t->last = b;
        if (!b->pool && !empty)
            empty = b;
    }
    if (!create || !empty)
        return NULL;
    empty->pool = pool;
    empty->stream = stream;
    return t->last = empty;
}

static tc_stack *stack_of(tc_bin *bin, unsigned cls, size_t size)
{
    tc_stack *s = bin->cls[cls];
    if (GPUMEM__UNLIKELY(!s)) {
        unsigned cap = cap_of(size);
        s = line_alloc(sizeof *s + cap * sizeof s->base[0]);
        if (!s)
            return NULL;
        s->n = 0;
        s->cap = cap;
        bin->cls[cls] = s;
    }
    return s;
}

const void *gpumem__tc_probe(struct gpumem_pool *pool, cudaStream_t stream, const void **stack)
{
    *stack = NULL;
    if (!mine)
        return NULL;
    enter(mine);
    const tc_bin *b = bin_of(mine, pool, stream, 0);
    for (unsigned k = 0; b && !*stack && k < GPUMEM__TC_CLASSES; k++)
        *stack = b->cls[k];
    leave(mine);
    return mine;
}

uintptr_t gpumem__tc_pop(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls,
                         size_t size, size_t bytes)
{
    if (size > TC_MAX_BYTES || cls >= GPUMEM__TC_CLASSES)
        return 0;
    tcache *t = my_cache();
    if (GPUMEM__UNLIKELY(!t))
        return 0;
    uintptr_t base = 0;
    enter(t);
    tc_bin *bin = bin_of(t, pool, stream, 0);
    tc_stack *s = bin ? bin->cls[cls] : NULL;
    if (s && s->n) {
        base = s->base[--s->n];
        t->bytes -= (int64_t)size;
        bin->counts.cached_bytes -= (int64_t)size;
        bin->counts.cached_blocks--;
        bin->counts.requested += (int64_t)bytes;
        bin->counts.hits++;
    }
    leave(t);
    return base;
}

int gpumem__tc_push(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls, size_t size,
                    uintptr_t base, size_t bytes, int undo_hit)
{
    if (size > TC_MAX_BYTES || cls >= GPUMEM__TC_CLASSES)
        return 0;
    tcache *t = my_cache();
    if (GPUMEM__UNLIKELY(!t))
        return 0;
    enter(t);
    tc_bin *bin = bin_of(t, pool, stream, 1);
    tc_stack *s = bin ? stack_of(bin, cls, size) : NULL;
    if (GPUMEM__UNLIKELY(!s)) {
        leave(t);
        return 0;
    }
    if (GPUMEM__UNLIKELY(s->n == s->cap || t->bytes + (int64_t)size > TC_THREAD_BYTES)) {
        /* Full: the older half goes back to the pool, the newer (warmer) half stays; over
         * the thread's bound, all of it. */
        unsigned out = s->n == s->cap ? s->cap / 2 : s->n;
        gpumem__pool_tc_return(pool, stream, cls, s->base, out);
        memmove(s->base, s->base + out, (s->n - out) * sizeof s->base[0]);
        s->n -= out;
        t->bytes -= (int64_t)out * (int64_t)size;
        bin->counts.cached_bytes -= (int64_t)out * (int64_t)size;
        bin->counts.cached_blocks -= out;
        if (t->bytes + (int64_t)size > TC_THREAD_BYTES) {
            leave(t);
            return 0; /* the other classes hold the thread's share: the pool takes it */
        }
    }
    s->base[s->n++] = base;
    t->bytes += (int64_t)size;
    bin->counts.cached_bytes += (int64_t)size;
    bin->counts.cached_blocks++;
    bin->counts.requested -= (int64_t)bytes;
    if (undo_hit)
        bin->counts.hits--;
    leave(t);
    return 1;
}

void gpumem__tc_drain(struct gpumem_pool *pool, int forget)
{
    pthread_mutex_lock(&list_lock);
    visit_begin();
    for (tcache *t = list_head; t; t = t->next) {
        for (unsigned i = 0; i < TC_BINS; i++) {
            if (t->bins[i].pool == pool)
                drain_bin(t, &t->bins[i], forget);
        }
        if (forget && t->last && !t->last->pool)
            t->last = NULL;
    }
    visit_end();
    pthread_mutex_unlock(&list_lock);
}

/* No owner may enter its cache until gpumem__tc_sum_end, so that no block moves between a
 * cache and the pool while the pool's own figures are read: the sum is one instant's. */
void gpumem__tc_sum_begin(struct gpumem_pool *pool, gpumem__tc_counts *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&list_lock);
    visit_begin();
    for (tcache *t = list_head; t; t = t->next) {
        for (unsigned i = 0; i < TC_BINS; i++) {
            const gpumem__tc_counts *c = &t->bins[i].counts;
            if (t->bins[i].pool != pool)
                continue;
            out->cached_bytes += c->cached_bytes;
            out->cached_blocks += c->cached_blocks;
            out->requested += c->requested;
            out->hits += c->hits;
        }
    }
}

void gpumem__tc_sum_classes(struct gpumem_pool *pool, uint64_t *per_class)
{
    for (tcache *t = list_head; t; t = t->next) {
        for (unsigned i = 0; i < TC_BINS; i++) {
            if (t->bins[i].pool != pool)
                continue;
            for (unsigned k = 0; k < GPUMEM__TC_CLASSES; k++)
                if (t->bins[i].cls[k])
                    per_class[k] += t->bins[i].cls[k]->n;
        }
    }
}

void gpumem__tc_sum_end(void)
{
    visit_end();
    pthread_mutex_unlock(&list_lock);
}

/* In a child made by fork: the caches of the threads the child does not have. Their blocks go
 * back to their pools, to which they were in use (a pool could not be destroyed in the
 * child otherwise), and the caches go: no thread of the child would ever use them, nor end
 * and drain them. The pools' locks are free again by now (fork.c). */
static void forget_other_threads(void)
{
    for (tcache *t = list_head, *next; t; t = next) {
        next = t->next;
        if (t == mine)
            continue;
        for (unsigned i = 0; i < TC_BINS; i++)
            if (t->bins[i].pool)
                drain_bin(t, &t->bins[i], 1);
        free(t);
    }
    list_head = mine;
    if (mine)
        mine->prev = mine->next = NULL;
    /* The child is a process of its own to membarrier; registering again is harmless where
     * the kernel kept the parent's registration, and required where it did not. */
    if (atomic_load_explicit(&gpumem__hot.asymmetric, memory_order_relaxed))
        atomic_store_explicit(&gpumem__hot.asymmetric, register_membarrier(), memory_order_relaxed);
}

/* fork(): the list, and every cache held still as a visitor holds them, so that none is
 * copied in the middle of a push or pop (fork.c). */
void gpumem__tc_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE) {
        pthread_mutex_lock(&list_lock);
        visit_begin();
        return;
    }
    if (phase == GPUMEM__FORK_CHILD)
        forget_other_threads();
    visit_end();
    pthread_mutex_unlock(&list_lock);
}

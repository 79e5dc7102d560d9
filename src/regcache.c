/* The registration cache: large pageable buffers that gpumem_copy moves to or from the device
 * are registered with the driver (cuMemHostRegister) at their first copy and kept registered,
 * so that later copies of the same memory go straight to the DMA engine at pinned speed,
 * without the staging ring's memcpy. As UCX's registration cache does.
 *
 * Knowing that a buffer was released. A registration pins the physical pages that backed the
 * range when it was made. Measured on an H200 (docs/copies.md): when the program releases
 * the memory (free, munmap) and gets new memory at the same address, the driver keeps saying
 * the address is registered pinned memory, and copies then move the old pages, not the
 * program's new data, with no error. So no lookup can check validity through the driver; the
 * cache must see every release. reghooks.c interposes free, realloc, reallocarray, munmap,
 * mremap and madvise and calls gpumem__regcache_release before the memory goes back. glibc's
 * free of a large block unmaps it by an internal call that no one can interpose, but the
 * free that leads to it is the program's own call, which is seen. Where the process's free (or
 * one of the others) is not gpumem's (another allocator linked before gpumem, a sanitizer's
 * interceptors, a preloaded library), the cache stays off: a release it cannot see would let
 * copies move stale memory.
 *
 * Entries: at most MAX_ENTRIES page-rounded ranges, GPUMEM_REGCACHE bytes in all (0: off).
 * A range larger than the limit is never kept. When a new range does not fit, the least
 * recently used entries no copy is using are unregistered first. Two ranges that share a page
 * (heap blocks side by side) are registered as one, since the driver refuses overlapping
 * registrations. An entry a copy uses (users) is never unregistered under it: a release waits
 * for the copy to end. A free or realloc drops the entries whose copied bytes its block
 * overlaps (not one that merely shares a page with them: the driver's own small blocks live in
 * the same heap); munmap and madvise, which act on pages, drop those whose pages they touch.
 * No CUDA call is made with the lock held, and while a thread registers, copies or
 * unregisters, its own frees (the driver's, inside those calls) skip the cache (in_cache), so
 * they cannot wait on the copy they are part of.
 *
 * exit() from a signal handler. The handler runs on the thread it interrupted, which may hold
 * the cache's lock or a lock of the driver's (the simulated device's, CUDA's own) at that
 * moment, and the exit path then releases memory (the program's exit handlers, C++
 * destructors) and runs the cache's exit handler. Neither may wait for what that thread holds:
 * - a release on a thread that holds the lock (holding: only a handler that interrupted it
 *   gets there) waits for nothing: it turns the cache off for good (broken), since the entries
 *   it could not drop may now describe memory that is gone, and no copy uses them again;
 * - once the process exits (closing, set when exit() starts: reghooks.c's exit hook, and by
 *   the cache's exit handler where exit() was not seen), a release takes the
 *   lock for at most EXIT_WAIT_MS, waits at most that long for copies using an entry, and
 *   forgets the entries it drops without unregistering them (the driver's own teardown does
 *   that), so it never calls into the driver either;
 * - the exit handler does the same: at most EXIT_WAIT_MS for the lock and for a registration
 *   under way, then the process goes on ending. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "sigsafe.h"

#define MAX_ENTRIES 64

/* E_QUEUED: waiting for the registrar; E_BUSY: being registered (users 1); E_LIVE: registered;
 * E_DYING: being unregistered. */
enum { E_FREE, E_QUEUED, E_BUSY, E_LIVE, E_DYING };
enum { R_NONE, R_STARTING, R_RUNNING, R_INLINE };

typedef struct entry {
    uintptr_t base, end; /* the registered range, page-rounded */
    uintptr_t ubase, uend; /* the bytes copies asked for: a heap block that shares a page at an
                            * end with them is not theirs, and its release leaves them alone */
    uint64_t used;       /* when last used (the cache's tick) */
    unsigned users;      /* copies from or to it now, and its registration while E_BUSY */
    int state;
    int dev;             /* the device current at the copy that queued it */
} entry;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t idle; /* an entry's users dropped to 0, or a registration ended */
    pthread_cond_t work; /* a range was queued (the registrar waits on it) */
    entry e[MAX_ENTRIES];
    uint64_t tick, bytes;
    int checked;         /* whether the hooks were checked (off_reason says the answer) */
    int enabled;         /* the option's limit > 0 and not turned off at run time */
    int inited;
    int registrar;       /* R_*: who registers queued ranges */
    uint64_t limit;
    const char *off_reason;
    gpumem__regcache_counts n;
} rc = {.lock = PTHREAD_MUTEX_INITIALIZER, .idle = PTHREAD_COND_INITIALIZER,
        .work = PTHREAD_COND_INITIALIZER};

/* Read without the lock by the hooks' fast path: entries registered or being registered, and
 * the lowest and highest address they span. */
atomic_uint gpumem__regcache_live;
atomic_uintptr_t gpumem__regcache_lo, gpumem__regcache_hi;

static _Thread_local int in_cache; /* this thread is inside the cache (its CUDA calls) */

#define EXIT_WAIT_MS 1000
static atomic_int closing; /* the process is exiting: nothing more is queued or registered */
static atomic_int broken;  /* a release could not drop its entries: the cache is off for good */
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static void cache_at_exit_setup(void);
/* This thread may hold rc.lock: set before the lock is taken and cleared after it is given
 * back, so that a signal handler landing anywhere inside pthread_mutex_lock, _unlock or
 * cond_wait (where the lock is held in all but name) sees it set. Set a little too long only
 * makes an exit-path release give up on the cache; cleared a little too early (as it was once)
 * let exit() from a handler that interrupted pthread_mutex_unlock wait for ever on the lock
 * its own thread still held. The signal fences keep the compiler from moving the stores
 * across the calls. */
static _Thread_local volatile sig_atomic_t holding;

static void lock(void)
{
    holding = 1;
    atomic_signal_fence(memory_order_seq_cst);
    pthread_mutex_lock(&rc.lock);
}

static void unlock(void)
{
    pthread_mutex_unlock(&rc.lock);
    atomic_signal_fence(memory_order_seq_cst);
    holding = 0;
}

/* holding stays set: the wait gives the lock back and takes it again inside the call. */
static void wait_on(pthread_cond_t *c)
{
    pthread_cond_wait(c, &rc.lock);
}

static struct timespec deadline_in(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* The lock, on a path that exit() from a signal handler may run: never when this thread holds
 * it already (the handler interrupted it), and for at most EXIT_WAIT_MS otherwise. */
static int lock_bounded(void)
{
    long budget = EXIT_WAIT_MS * 1000000L;
    if (holding)
        return 0;
    holding = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (gpumem__trylock_for(&rc.lock, &budget))
        return 1;
    atomic_signal_fence(memory_order_seq_cst);
    holding = 0;
    return 0;
}

/* As wait_on, until the deadline; 0 when it passed. */
static int wait_until(pthread_cond_t *c, const struct timespec *deadline)
{
    return pthread_cond_timedwait(c, &rc.lock, deadline) != ETIMEDOUT;
}

int gpumem__regcache_inside(void)
{
    return in_cache;
}

static uintptr_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uintptr_t)p : 4096u;
}

/* Which of the release functions the process calls is not gpumem's; NULL when all are. */
static const char *hooks_missing(void)
{
    if (!gpumem__reghooks_missing)
        return "the release hooks are not linked into this program";
    return gpumem__reghooks_missing();
}

/* Locked. */
static void load_options(void)
{
    if (rc.inited)
        return;
    rc.inited = 1;
    rc.limit = gpumem__opt_u64(GPUMEM__OPT_REGCACHE);
    rc.enabled = rc.limit > 0;
    if (!rc.enabled)
        rc.off_reason = "GPUMEM_REGCACHE=0";
}

/* Whether the cache may be used now. Locked. */
static int usable(void)
{
    load_options();
    if (!rc.enabled || atomic_load(&closing))
        return 0;
    if (atomic_load(&broken)) {
        rc.off_reason = "a release came from a signal handler that interrupted the cache: the "
                        "entries it could not drop are not used again";
        return 0;
    }
    if (!rc.checked) {
        rc.checked = 1;
        const char *m = hooks_missing();
        if (m) {
            static char why[160];
            if (strchr(m, ' '))
                snprintf(why, sizeof why, "%s", m);
            else
                snprintf(why, sizeof why, "the process's %s is not gpumem's (another allocator, "
                                          "a sanitizer or a preloaded library comes first)", m);
            rc.off_reason = why;
        }
    }
    return rc.off_reason == NULL;
}

/* The bounds the hooks' fast path reads. Locked. */
static void publish(void)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    unsigned live = 0;
    for (int i = 0; i < MAX_ENTRIES; i++) {
        if (rc.e[i].state == E_FREE)
            continue;
        live++;
        lo = rc.e[i].base < lo ? rc.e[i].base : lo;
        hi = rc.e[i].end > hi ? rc.e[i].end : hi;
    }
    atomic_store(&gpumem__regcache_lo, lo);
    atomic_store(&gpumem__regcache_hi, hi);
    atomic_store(&gpumem__regcache_live, live);
}

/* Takes entry e out of use (no copy uses it): E_DYING, its bytes no longer counted. The
 * caller unregisters it without the lock, then calls forget. Locked. */
static void retire(entry *e)
{
    e->state = E_DYING;
    rc.bytes -= e->end - e->base;
}

static void unregister(entry *e)
{
    in_cache++;
    gpumem__be->host_unregister((void *)e->base);
    in_cache--;
}

static void forget(entry *e)
{
    lock();
    e->state = E_FREE;
    publish();
    pthread_cond_broadcast(&rc.idle);
    unlock();
}

/* A range a registration covers: whole pages [base, end), of which the program's buffers use
 * [ubase, uend). */
typedef struct {
    uintptr_t base, end, ubase, uend;
} span;

/* The live entry that covers r, taken for a copy; NULL when none does. Under the lock. */
static entry *cache_hit(const span *r)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry *e = &rc.e[i];
        if (e->state == E_LIVE && e->base <= r->base && r->end <= e->end) {
            e->users++;
            e->used = ++rc.tick;
            e->ubase = r->ubase < e->ubase ? r->ubase : e->ubase;
            e->uend = r->uend > e->uend ? r->uend : e->uend;
            rc.n.hits++;
            return e;
        }
    }
    return NULL;
}

/* A range overlapping the new one would make the driver refuse it (two heap blocks side by
 * side share a page): the new registration covers both, and the old one goes first. Widens r
 * over them; returns -1 when a copy uses one (this copy is staged instead). Under the lock. */
static int widen_over_neighbours(span *r)
{
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry *e = &rc.e[i];
        if (e->state != E_FREE && e->base < r->end && r->base < e->end) {
            if (e->state != E_LIVE || e->users)
                return -1;
            r->base = e->base < r->base ? e->base : r->base;
            r->end = e->end > r->end ? e->end : r->end;
            r->ubase = e->ubase < r->ubase ? e->ubase : r->ubase;
            r->uend = e->uend > r->uend ? e->uend : r->uend;
        }
    }
    return 0;
}

/* Retires the entries r replaces, then the least recently used idle ones until r fits under
 * limit; each retired entry goes into victims (unregistered after the lock). Returns how many.
 * Under the lock. */
static int make_room(const span *r, uintptr_t limit, entry **victims)
{
    int nv = 0;
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry *e = &rc.e[i];
        if (e->state == E_LIVE && e->base < r->end && r->base < e->end) {
            retire(e);
            victims[nv++] = e;
            rc.n.evicted++;
        }
    }
    while (rc.bytes + (r->end - r->base) > limit) {
        entry *lru = NULL;
        for (int i = 0; i < MAX_ENTRIES; i++) {
            entry *e = &rc.e[i];
            if (e->state == E_LIVE && !e->users && (!lru || e->used < lru->used))
                lru = e;
        }
        if (!lru)
            break;
        retire(lru);
        victims[nv++] = lru;
        rc.n.evicted++;
    }
    return nv;
}

/* Queues r for the registrar in a free entry, where it fits. Under the lock. */
static void queue_span(const span *r, uintptr_t limit, int dev)
{
    entry *slot = NULL;
    if (rc.bytes + (r->end - r->base) <= limit)
        for (int i = 0; i < MAX_ENTRIES && !slot; i++)
            if (rc.e[i].state == E_FREE)
                slot = &rc.e[i];
    if (!slot)
        return;
    slot->state = E_QUEUED;
    slot->base = r->base;
    slot->end = r->end;
    slot->ubase = r->ubase;
    slot->uend = r->uend;
    slot->users = 0;
    slot->used = ++rc.tick;
    slot->dev = dev;
    rc.bytes += r->end - r->base;
    publish(); /* the hooks see the range from now: a release cancels it */
}

int gpumem__regcache_get(const void *p, size_t bytes, void **out)
{
    *out = NULL;
    uintptr_t pg = page_size(), a = (uintptr_t)p;
    if (bytes == 0 || a + bytes < a)
        return 0;
    span r = {a & ~(pg - 1), (a + bytes + pg - 1) & ~(pg - 1), a, a + bytes};
    entry *victims[MAX_ENTRIES];
    int dev = 0;
    if (holding || atomic_load(&closing) || atomic_load(&broken) ||
        gpumem__be->current_device(&dev) != 0)
        return 0;
    pthread_once(&exit_once, cache_at_exit_setup);
    lock();
    /* The limit counts whole pages; the two a buffer shares with its neighbours are not held
     * against it, so a buffer of exactly the limit's size fits. */
    uintptr_t limit = rc.limit + 2 * pg;
    if (!usable() || r.end - r.base > limit) {
        unlock();
        return 0;
    }
    entry *hit = cache_hit(&r);
    if (hit) {
        unlock();
        in_cache++; /* until put: the copy's own frees inside CUDA skip the cache */
        *out = hit;
        return 1;
    }
    rc.n.misses++;
    if (widen_over_neighbours(&r) != 0 || r.end - r.base > limit) {
        unlock();
        return 0;
    }
    int nv = make_room(&r, limit, victims);
    queue_span(&r, limit, dev);
    unlock();
    for (int i = 0; i < nv; i++) {
        unregister(victims[i]);
        forget(victims[i]);
    }
    return 0;
}

/* Registers the queued entry e (E_BUSY, users 1, taken by the caller): unlocks for the
 * driver's call, and leaves it E_LIVE and idle, or E_FREE when the driver refused. Locked. */
static void register_entry(entry *e)
{
    uintptr_t base = e->base, end = e->end;
    int dev = e->dev, token = 0;
    unlock();
    in_cache++;
    int err = gpumem__be->device_push(dev, &token);
    if (!err) {
        err = gpumem__be->host_register((void *)base, end - base);
        gpumem__be->device_pop(token);
    }
    in_cache--;
    lock();
    e->users = 0;
    if (err) {
        rc.n.refused++;
        rc.bytes -= end - base;
        e->state = E_FREE;
        publish();
    } else {
        rc.n.registered++;
        e->state = E_LIVE;
    }
    pthread_cond_broadcast(&rc.idle);
}

/* The queued entry queued longest, taken for registration (E_BUSY, users 1); NULL when none.
 * Locked. */
static entry *take_queued(void)
{
    entry *first = NULL;
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry *e = &rc.e[i];
        if (e->state == E_QUEUED && (!first || e->used < first->used))
            first = e;
    }
    if (first) {
        first->state = E_BUSY;
        first->users = 1;
    }
    return first;
}

static void *registrar_main(void *arg)
{
    (void)arg;
    lock();
    for (;;) {
        entry *e = take_queued();
        if (e)
            register_entry(e);
        else
            wait_on(&rc.work);
    }
    return NULL;
}

/* At exit: nothing more is queued or registered; ranges still queued are dropped, and a
 * registration under way is waited for, so that the driver is not torn down under it; for
 * the lock and for the registration at most EXIT_WAIT_MS each (the thread a signal handler
 * interrupted to call exit() may hold the lock, or a driver lock the registration needs). */
void gpumem__regcache_exiting(void)
{
    atomic_store(&closing, 1);
}

static void cache_at_exit(void)
{
    atomic_store(&closing, 1);
    if (!lock_bounded())
        return;
    struct timespec deadline = deadline_in(EXIT_WAIT_MS);
    for (;;) {
        int busy = 0;
        for (int i = 0; i < MAX_ENTRIES; i++) {
            entry *e = &rc.e[i];
            if (e->state == E_QUEUED) {
                e->state = E_FREE;
                rc.bytes -= e->end - e->base;
            }
            busy |= e->state == E_BUSY;
        }
        if (!busy || !wait_until(&rc.idle, &deadline))
            break;
    }
    publish();
    unlock();
}

static void cache_at_exit_setup(void)
{
    atexit(cache_at_exit);
}

/* Starts the registrar, with every signal blocked so that the program's signals keep going to
 * its own threads. Unlocked. Returns whether it runs. */
static int registrar_start(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    in_cache++; /* pthread_create may free, which must not wait on the cache's lock */
    int ok = pthread_create(&t, &attr, registrar_main, NULL) == 0;
    in_cache--;
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ok;
}

void gpumem__regcache_kick(void)
{
    if (holding || atomic_load(&closing))
        return;
    lock();
    int queued = 0;
    for (int i = 0; i < MAX_ENTRIES && !queued; i++)
        queued = rc.e[i].state == E_QUEUED;
    if (!queued || atomic_load(&closing)) {
        unlock();
        return;
    }
    if (rc.registrar == R_NONE) {
        rc.registrar = R_STARTING;
        unlock();
        int ok = registrar_start();
        lock();
        rc.registrar = ok ? R_RUNNING : R_INLINE;
    }
    if (rc.registrar == R_RUNNING) {
        pthread_cond_signal(&rc.work);
    } else if (rc.registrar == R_INLINE) {
        entry *e;
        while ((e = take_queued()) != NULL)
            register_entry(e);
    } /* R_STARTING: the thread that starts the registrar signals it */
    unlock();
}

void gpumem__regcache_settle(void)
{
    gpumem__regcache_kick();
    lock();
    for (;;) {
        int pending = 0;
        for (int i = 0; i < MAX_ENTRIES; i++)
            pending |= rc.e[i].state == E_QUEUED || rc.e[i].state == E_BUSY;
        if (!pending)
            break;
        wait_on(&rc.idle);
    }
    unlock();
}

void gpumem__regcache_put(void *entry_)
{
    entry *e = entry_;
    if (!e)
        return;
    in_cache--;
    lock();
    if (--e->users == 0)
        pthread_cond_broadcast(&rc.idle);
    unlock();
}

int gpumem__regcache_owns(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    if (!atomic_load(&gpumem__regcache_live) || a < atomic_load(&gpumem__regcache_lo) ||
        a >= atomic_load(&gpumem__regcache_hi))
        return 0;
    int owns = 0;
    if (!atomic_load(&closing) && !holding)
        lock();
    else if (!lock_bounded())
        return 1; /* not known: a copy that takes the range for pageable memory is still right */
    for (int i = 0; i < MAX_ENTRIES && !owns; i++)
        owns = rc.e[i].state != E_FREE && rc.e[i].base <= a && a < rc.e[i].end;
    unlock();
    return owns;
}

/* Takes out of the table every entry overlapping [a, end) (its copied bytes with user, else
 * its pages) that no copy uses, counting them as released (or evicted), into victims; sets
 * *waiting when a copy (or the registration) still uses one. Locked. */
static int take_victims(uintptr_t a, uintptr_t end, int released, int user, entry **victims,
                        int *waiting)
{
    int nv = 0;
    *waiting = 0;
    for (int i = 0; i < MAX_ENTRIES; i++) {
        entry *e = &rc.e[i];
        uintptr_t lo = user ? e->ubase : e->base, hi = user ? e->uend : e->end;
        if (e->state == E_FREE || e->state == E_DYING || hi <= a || end <= lo)
            continue;
        if (e->state == E_QUEUED) { /* not registered yet: nothing to undo */
            e->state = E_FREE;
            rc.bytes -= e->end - e->base;
            publish();
            continue;
        }
        if (e->users) {
            *waiting = 1;
            continue;
        }
        retire(e);
        victims[nv++] = e;
        if (released)
            rc.n.released++;
        else
            rc.n.evicted++;
    }
    return nv;
}

/* Unregisters every entry overlapping [a, end), waiting for the copies using them. An entry
 * another thread is unregistering already is left to it: the driver accepts the
 * unregistration of a range whose memory is gone (measured), so the release need not wait
 * for it. On the exit path (the file's opening comment): bounded, without the driver, or, on
 * the thread that holds the lock, not at all. */
static void drop(uintptr_t a, uintptr_t end, int released, int user)
{
    int exiting = atomic_load(&closing);
    if (holding || (exiting && !lock_bounded())) {
        atomic_store(&broken, 1);
        return;
    }
    if (!exiting)
        lock();
    struct timespec deadline = deadline_in(EXIT_WAIT_MS);
    for (;;) {
        entry *victims[MAX_ENTRIES];
        int waiting;
        int nv = take_victims(a, end, released, user, victims, &waiting);
        if (nv && exiting) {
            /* Left registered, for the driver's teardown to end, and E_DYING for good: the
             * range is still the cache's (a copy of it is staged, not sent as pinned). */
        } else if (nv) {
            unlock();
            for (int i = 0; i < nv; i++) {
                unregister(victims[i]);
                forget(victims[i]);
            }
            lock();
        }
        if (nv)
            continue;
        if (!waiting)
            break;
        if (!exiting) {
            wait_on(&rc.idle);
        } else if (!wait_until(&rc.idle, &deadline)) {
            atomic_store(&broken, 1);
            break;
        }
    }
    unlock();
}

void gpumem__regcache_release(const void *p, size_t bytes, int block)
{
    uintptr_t a = (uintptr_t)p;
    if (in_cache || bytes == 0)
        return;
    in_cache++;
    drop(a, a + bytes < a ? UINTPTR_MAX : a + bytes, 1, block);
    in_cache--;
}

int gpumem__regcache_set_enabled(int on)
{
    lock();
    load_options();
    rc.enabled = on && rc.limit > 0;
    if (on && rc.limit == 0)
        rc.off_reason = "GPUMEM_REGCACHE=0";
    int ok = usable();
    unlock();
    return ok;
}

void gpumem__regcache_reset(void)
{
    in_cache++;
    drop(0, UINTPTR_MAX, 0, 0);
    in_cache--;
}

void gpumem__regcache_counts_get(gpumem__regcache_counts *out)
{
    lock();
    usable();
    *out = rc.n;
    out->bytes = rc.bytes;
    out->entries = 0;
    for (int i = 0; i < MAX_ENTRIES; i++)
        out->entries += rc.e[i].state == E_LIVE;
    out->off_reason = rc.off_reason;
    unlock();
}

/* fork(): the cache's lock, last of the library's: free() takes it (reghooks.c) from under
 * any other gpumem lock (fork.c). In the child, the copies and registrations of the parent's
 * other threads are gone: entries they used are idle, a range they were registering or
 * unregistering is forgotten (a later registration that overlaps it is refused, and that
 * copy is staged), ranges still queued are registered by the child's own copies (it has no
 * registrar), and the condition variables start afresh, as their waiters did not come
 * along. Without this, a free() in the child of memory a copy was using waited for ever. */
void gpumem__regcache_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE) {
        lock();
        return;
    }
    if (phase == GPUMEM__FORK_CHILD) {
        for (int i = 0; i < MAX_ENTRIES; i++) {
            entry *e = &rc.e[i];
            if (e->state == E_BUSY)
                rc.bytes -= e->end - e->base; /* retire() already took E_DYING's off */
            if (e->state == E_BUSY || e->state == E_DYING)
                e->state = E_FREE;
            e->users = 0;
        }
        rc.registrar = R_INLINE; /* no thread is started in the child: the copies register */
        publish();
        pthread_cond_init(&rc.idle, NULL);
        pthread_cond_init(&rc.work, NULL);
    }
    unlock();
}

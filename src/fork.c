/* fork(): what a child process inherits from a parent that was inside gpumem.
 *
 * fork() copies the memory of the whole process but only the thread that called it. A lock
 * another thread held at that instant stays held in the child for ever, and the data it
 * guarded may be half updated: before these handlers, a child's gpumem_stats,
 * gpumem_live_get, gpumem_report or allocation blocked on a registry shard in up to 28 of 40
 * children forked while four threads allocated. So, as POSIX intends pthread_atfork for:
 *
 * - prepare takes every lock of the library, in one fixed order (below), so that no other
 *   thread is inside any of gpumem's data when the process is copied; the order is the order
 *   in which the library's code paths already nest the locks, so taking them all cannot
 *   deadlock with a thread that holds one and waits for the next;
 * - parent releases them;
 * - child releases them and forgets what belonged to threads the child does not have: other
 *   threads' thread caches (their blocks go back to their pools), copy worker threads, copies
 *   and registrations in flight.
 *
 * The order, outermost first. The trace's lock (its handlers live in trace.c; they free
 * buffers under it). init.c's backend lock (held while a backend starts). The symbolizer's
 * lock (it only allocates under it). The thread caches: their list, then every cache held
 * still (an owner inside its cache may take a pool's lock). The pools: their list, then
 * each pool's lock (a pool takes registry locks and calls CUDA under it). The NVTX heaps'
 * lock (nvtx.c: a pool registers heaps under its own). The copy rings
 * (a copy holds its ring across its CUDA calls). The registry's shards, emptied of threads
 * rather than held (registry.c: ThreadSanitizer aborts a thread holding more than 64 locks;
 * the rest come to about 15, plus one a pool and two a copy ring). The backends' locks. The
 * error handler's. Last the registration cache's, which free() reaches from under any of the
 * others (reghooks.c).
 *
 * None of this costs the allocation and release paths anything: the handlers run only
 * around fork(). They are registered at initialization; a process that forks before using
 * gpumem holds nothing of it.
 *
 * Allocations the child inherits stay in its registry: its statistics, live counts and
 * gpumem_report show them (the memory is in its address space; on the simulated device it
 * can use and release them), but its exit-time leak report leaves them out: they are the
 * parent's to release, and the parent reports its own. An allocation is inherited when its
 * sequence number is below the first one the child hands out (inherited_seq), which
 * costs the child nothing at fork, where visiting every record would cost it time in
 * proportion to the parent's live allocations. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "internal.h"

static atomic_uint_fast64_t inherited_seq; /* 0: this process was not made by fork */

uint64_t gpumem__fork_inherited_seq(void)
{
    return atomic_load_explicit(&inherited_seq, memory_order_relaxed);
}

/* Each part in the order above; parent and child release in the reverse order, so that a
 * part's child step (the thread caches give blocks back to pools) finds the locks after it
 * free again. */
static void (*const parts[])(int phase) = {
    gpumem__trace_at_fork, gpumem__init_at_fork, gpumem__backtrace_at_fork, gpumem__tc_at_fork,
    gpumem__pool_at_fork,  gpumem__nvtx_at_fork, gpumem__copy_at_fork,      gpumem__reg_at_fork,
    gpumem__be_at_fork,    gpumem__err_at_fork,  gpumem__regcache_at_fork,
};
#define PARTS (sizeof parts / sizeof parts[0])

static void before_fork(void)
{
    for (size_t i = 0; i < PARTS; i++)
        parts[i](GPUMEM__FORK_PREPARE);
}

static void in_parent(void)
{
    for (size_t i = PARTS; i-- > 0;)
        parts[i](GPUMEM__FORK_PARENT);
}

static void in_child(void)
{
    /* Every allocation the child makes from now on has a larger number (alloc.c). */
    atomic_store_explicit(&inherited_seq, gpumem__seq_checkpoint(), memory_order_relaxed);
    for (size_t i = PARTS; i-- > 0;)
        parts[i](GPUMEM__FORK_CHILD);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void register_handlers(void)
{
    pthread_atfork(before_fork, in_parent, in_child);
}

/* Called by initialization, and by the trace when a tool opens one before initializing. */
void gpumem__fork_setup(void)
{
    pthread_once(&once, register_handlers);
}

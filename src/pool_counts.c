/* Per-thread counts of the registry's pool records (registry.c's pool blocks): a pool's
 * allocate + free pair adds to its own thread's counters only, and a statistics read sums them. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pool_counts.h"

static pthread_mutex_t pc_lock = PTHREAD_MUTEX_INITIALIZER;
static pcounts *pc_list;
static pcounts pc_gone; /* threads that ended; under pc_lock */
static pthread_key_t pc_key;
static pthread_once_t pc_once = PTHREAD_ONCE_INIT;
_Thread_local pcounts *gpumem__pc_mine;
static _Thread_local int pc_ended; /* after the thread's destructor: counts go to pc_gone */

static void pc_thread_exit(void *arg)
{
    pcounts *c = arg;
    pthread_mutex_lock(&pc_lock);
    for (int k = 0; k < 2; k++)
        for (int d = 0; d < GPUMEM_STATS_DEVICES; d++)
            for (int f = 0; f < PC_FIELDS; f++)
                gpumem__pc_add(&pc_gone.cell[k][d][f],
                               atomic_load_explicit(&c->cell[k][d][f], memory_order_relaxed));
    if (c->prev)
        c->prev->next = c->next;
    else
        pc_list = c->next;
    if (c->next)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&pc_lock);
    free(c);
    gpumem__pc_mine = NULL;
    pc_ended = 1;
}

static void pc_make_key(void)
{
    pthread_key_create(&pc_key, pc_thread_exit);
}

/* The calling thread's counters, made on first use; NULL when out of host memory or ending. */
static pcounts *pc_of_thread(void)
{
    if (GPUMEM__LIKELY(gpumem__pc_mine != NULL))
        return gpumem__pc_mine;
    if (pc_ended)
        return NULL;
    pthread_once(&pc_once, pc_make_key);
    pcounts *c = aligned_alloc(64, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    if (pthread_setspecific(pc_key, c) != 0) {
        free(c);
        return NULL;
    }
    pthread_mutex_lock(&pc_lock);
    c->next = pc_list;
    if (pc_list)
        pc_list->prev = c;
    pc_list = c;
    pthread_mutex_unlock(&pc_lock);
    return gpumem__pc_mine = c;
}

/* Counts a pool record's allocation (release 0) or release (1); an undone release is counted
 * as a release of minus its bytes. */
void gpumem__pc_count_slow(const gpumem__rec *r, int release, int64_t n)
{
    pcounts *c = pc_of_thread();
    int locked = GPUMEM__UNLIKELY(c == NULL);
    if (locked) {
        pthread_mutex_lock(&pc_lock);
        c = &pc_gone;
    }
    gpumem__pc_add_to(c, r, release, n);
    if (locked)
        pthread_mutex_unlock(&pc_lock);
}

/* Adds every thread's counts (and the ended threads') to out. */
void gpumem__pc_sum(gpumem__counts *out)
{
    pthread_mutex_lock(&pc_lock);
    for (pcounts *c = &pc_gone; c; c = c == &pc_gone ? pc_list : c->next) {
        for (int k = 0; k < 2; k++) {
            for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
                uint64_t v[PC_FIELDS];
                for (int f = 0; f < PC_FIELDS; f++)
                    v[f] = atomic_load_explicit(&c->cell[k][d][f], memory_order_relaxed);
                uint64_t live = v[PC_ALLOCS] - v[PC_RELEASES];
                uint64_t live_bytes = v[PC_ALLOC_BYTES] - v[PC_RELEASE_BYTES];
                int kind = k ? GPUMEM_KIND_PINNED : GPUMEM_KIND_DEVICE;
                out->count[kind].current += live;
                out->count[kind].total += v[PC_ALLOCS];
                out->bytes[kind] += live_bytes;
                out->total_bytes[kind] += v[PC_ALLOC_BYTES];
                out->device_count[d].current += live;
                out->device_count[d].total += v[PC_ALLOCS];
                out->device_bytes[d] += live_bytes;
                out->device_total_bytes[d] += v[PC_ALLOC_BYTES];
            }
        }
    }
    pthread_mutex_unlock(&pc_lock);
}

/* fork(): the lock is held across fork (prepare), and released in the parent and the child. */
void gpumem__pc_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        pthread_mutex_lock(&pc_lock);
    else
        pthread_mutex_unlock(&pc_lock);
}

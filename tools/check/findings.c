/* gpumem check's findings: the list kept for the JSON report, the error and suppressed
 * counters, and the suppressions matched against each. No output: engine.c reports them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "sigsafe.h"
#include "suppress.h"

static pthread_mutex_t findings_lock = PTHREAD_MUTEX_INITIALIZER;
static finding *findings;
static size_t nfindings, findings_cap;
static atomic_long error_count, suppressed_count;

long check_error_count(void)
{
    return atomic_load(&error_count);
}

long check__keep(const finding *f)
{
    long index = -1;
    pthread_mutex_lock(&findings_lock);
    if (nfindings == findings_cap) {
        /* Not realloc: the old array is wiped before it is freed, so that the leak scan finds
         * no stale copy of the addresses in it (reach.c reads freed heap memory too). */
        size_t cap = findings_cap ? findings_cap * 2 : 16;
        finding *grown = malloc(cap * sizeof *grown);
        if (grown) {
            if (findings) {
                memcpy(grown, findings, nfindings * sizeof *grown);
                memset(findings, 0, findings_cap * sizeof *findings);
            }
            free(findings);
            findings = grown;
            findings_cap = cap;
        }
    }
    if (nfindings < findings_cap) {
        index = (long)nfindings;
        findings[nfindings++] = *f;
    }
    pthread_mutex_unlock(&findings_lock);
    return index;
}

void check__findings_count_add(long index, uint64_t n)
{
    pthread_mutex_lock(&findings_lock);
    if (index >= 0 && (size_t)index < nfindings)
        findings[index].count += n;
    pthread_mutex_unlock(&findings_lock);
}

int check__suppress(finding *f)
{
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int n = f->stack ? gpumem__stack_frames(f->stack, frames, GPUMEM__STACK_MAX_FRAMES) : 0;
    f->suppressed = check_supp_match(f->kind, f->call, frames, n);
    if (f->suppressed) {
        atomic_fetch_add(&suppressed_count, 1);
        return 1;
    }
    if ((f->kind != CHECK_LEAK || f->counted) && !f->note)
        atomic_fetch_add(&error_count, 1);
    return 0;
}

int check__findings_trylock(const finding **list, size_t *n, long *budget)
{
    if (!gpumem__trylock_for(&findings_lock, budget))
        return 0;
    *list = findings;
    *n = nfindings;
    return 1;
}

void check__findings_storage(const void **p, size_t *bytes)
{
    *p = findings;
    *bytes = findings_cap * sizeof *findings;
}

void check__findings_unlock(void)
{
    pthread_mutex_unlock(&findings_lock);
}

void check__count_finding(int suppressed)
{
    atomic_fetch_add(suppressed ? &suppressed_count : &error_count, 1);
}

long check__suppressed_count(void)
{
    return atomic_load(&suppressed_count);
}

const finding *check__findings_all(size_t *n)
{
    *n = nfindings;
    return findings;
}

/* Reports f (unless suppressed) and keeps it for the JSON report. */
long check__report(finding *f)
{
    check_tls_reports++;
    if (!check__suppress(f)) {
        check__out_lock();
        check__text_finding(f);
        fflush(check__log());
        check__out_unlock();
    }
    return check__keep(f);
}

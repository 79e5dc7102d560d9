/* Worker threads that split one memcpy into parts (internal, gpumem__ prefix): the staged
 * copies' fills and drains (copy.c). */
#ifndef GPUMEM_COPY_WORKERS_H
#define GPUMEM_COPY_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* The smallest piece of a slot one thread copies: below it, waking a thread costs more than
 * the copy it would do (a wake-up is a few microseconds; 64 KiB take about 12 us on one
 * thread at 5.4 GB/s). */
#define GPUMEM__COPY_MIN_PART ((size_t)64 << 10)

/* Why the workers spin during a staged copy: measured on an H200's 16-vCPU host, a staged copy
 * of 32 MiB reached 17 GB/s where the link carries 55. Each slot's fill woke the workers
 * through a condition variable and each woken thread took the mutex in turn; in a virtual
 * machine a wake-up of an idle vCPU costs tens of microseconds, as long as a thread's share of
 * a slot takes to copy, so the caller did most parts alone. Now a staged copy opens a session
 * (busy): the workers are woken once at its start and spin between jobs until it ends, so a
 * job is picked up within a fraction of a microsecond; outside a session they sleep.
 *
 * The job protocol, without a lock: the caller writes the job's fields, then publishes its
 * number in open (and gen). A worker that sees a new gen counts itself in active, then takes
 * parts only if open still holds that number. The caller closes a job (open = 0) once every
 * part is done and waits until active is 0 before writing the next job's fields, so no late
 * worker can read fields half written or take a part of the next job. */
typedef struct gpumem__workers {
    pthread_mutex_t lock;   /* guards sleeping only */
    pthread_cond_t wake;    /* a session started */
    unsigned nthreads;      /* worker threads running (the caller works too) */
    atomic_uint sleepers;   /* workers in (or about to be in) the condition wait */
    atomic_int busy;        /* a staged copy runs: spin between jobs */
    atomic_ullong gen;      /* the last job posted */
    atomic_ullong open;     /* the job that may still be picked up; 0 when none */
    atomic_uint active;     /* workers holding a job */
    char *dst;              /* the job: written by the caller before open */
    const char *src;
    size_t len, part;
    unsigned parts;
    int stream;             /* fill with streaming stores (copy_workers.c) */
    atomic_uint next, done;
} gpumem__workers;

/* A job as the caller sees it: how many parts it has (0 when the caller copies it alone). */
typedef struct gpumem__job {
    char *dst;
    const char *src;
    size_t len, part;
    unsigned parts;
    int stream;
} gpumem__job;

/* Starts up to n workers with every signal blocked, so that the program's signals keep going
 * to its own threads. Fewer start when the system refuses: the caller does all the parts the
 * workers do not take, so any number, zero included, copies correctly. */
void gpumem__workers_start(gpumem__workers *w, unsigned n);
/* Opens (busy = 1) or closes a session: the workers spin between jobs while one is open. */
void gpumem__workers_session(gpumem__workers *w, int busy);
/* Posts memcpy(dst, src, len) to the workers, in as many parts as the size is worth, with
 * streaming stores when stream is set; the caller may do other work before gpumem__job_join.
 * A job of one part is left to the caller alone. One job at a time. */
void gpumem__job_post(gpumem__workers *w, gpumem__job *j, void *dst, const void *src, size_t len,
                      int stream);
/* Does the parts of j no worker took, waits for the others, and closes the job. */
void gpumem__job_join(gpumem__workers *w, const gpumem__job *j);

#endif

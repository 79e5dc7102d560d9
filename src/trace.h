/* The event log (GPUMEM_TRACE=FILE, `gpumem check --trace=FILE`): internal, gpumem__ prefix.
 *
 * Every allocation and release, checkpoint and failed allocation is appended to a buffer of
 * the calling thread (a few stores and one atomic add: no lock, no system call). Full buffers
 * go to a writer thread, which turns them into Chrome trace event JSON and writes them out.
 * The file is finished at process exit (or by gpumem__trace_close), without calling CUDA. The
 * format is described in docs/timeline.md. */
#ifndef GPUMEM_TRACE_H
#define GPUMEM_TRACE_H

#include <stdatomic.h>
#include <stdint.h>

#include "internal.h"

/* gpumem__hot.trace_on is non-zero while a trace is being recorded: the hooks below cost one
 * relaxed load otherwise. */
static inline int gpumem__tracing(void)
{
    return atomic_load_explicit(&gpumem__hot.trace_on, memory_order_relaxed);
}

/**
 * Starts recording to @p path ("%p" in it becomes the process id) for @p tool ("gpumem" or
 * "gpumem check", written into the file). Only the first call that succeeds opens a trace;
 * later calls return 0 and change nothing. @p writer_init, when not NULL, runs first on the
 * writer thread (gpumem check marks that thread as its own there). Registers the exit-time
 * finish. Never blocks: a FIFO that no process reads is refused. A regular file that another
 * process is writing its trace to is left to it: this process writes PATH.PID and says so.
 * Returns 0, or -1 after printing a `gpumem: error:` (or, for the FIFO, `warning:`) line that
 * names the file and why, also for a name longer than a path may be (then nothing is
 * recorded). Never calls CUDA.
 */
int gpumem__trace_open(const char *path, const char *tool, void (*writer_init)(void));
/* The process's rank in a parallel job (-1: none), noted in the trace's head when it is
 * opened after this: gpumem check's traces of a job's ranks are merged by it. */
void gpumem__trace_set_rank(long rank);

/* r just became live (its seq is the allocation's id in the trace). Thread-safe. */
void gpumem__trace_alloc(const gpumem__rec *r);
/* r (a record just taken out of the registry) was released at site; for `gpumem check`, whose
 * releases have no site of their own, call names the release call. Thread-safe. */
void gpumem__trace_release(const gpumem__rec *r, gpumem_site site, const char *call);
/* A checkpoint was taken: allocations with seq <= seq came before it. Thread-safe. */
void gpumem__trace_checkpoint(uint64_t seq);
/* A pool's reserved bytes changed (it got memory from CUDA or gave some back): a counter event
 * "KIND pool 0xADDR reserved, device N" with the reserved bytes and the bytes of its blocks in
 * use (thread caches' blocks included, as the pool counts them), which readers that know it
 * draw over time and others skip, as every counter line. Thread-safe. */
void gpumem__trace_pool(const void *pool, int kind, int device, uint64_t reserved,
                        uint64_t in_use);
/* An allocation of bytes of kind on device failed at site (stack: its stack id or 0) with
 * gpumem status code (and cuda_error, 0 when CUDA was not asked). Thread-safe. */
void gpumem__trace_failed(int kind, uint64_t bytes, int device, gpumem_site site, uint32_t stack,
                          int code, int cuda_error);

/**
 * Writes out every buffer and the end of the file (the stacks, each once, symbolized), and
 * closes it. Events recorded later are dropped. Idempotent; runs at exit by itself, where it
 * waits a bounded time only (see trace.c). Returns 0, or -1 when writing failed (reported
 * once on stderr, with the file and why: a full disk is never silent).
 */
int gpumem__trace_close(void);

/* Events written out and dropped so far, and the times a recording thread waited for the
 * writer to catch up (for tests and benchmarks). */
void gpumem__trace_counts(uint64_t *recorded, uint64_t *dropped, uint64_t *waited);

#endif

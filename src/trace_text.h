/* The trace's events as recorded and as text (internal, gpumem__ prefix): trace.c records and
 * writes, trace_text.c makes the Chrome trace event JSON. */
#ifndef GPUMEM_TRACE_TEXT_H
#define GPUMEM_TRACE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

enum { EV_ALLOC = 1, EV_RELEASE, EV_CHECKPOINT, EV_FAILED, EV_POOL };

/* One event as recorded: plain values only, strings are the caller's static literals (call
 * sites, CUDA call names), which outlive the writer. */
typedef struct {
    uint64_t ns;
    uint64_t id;    /* the allocation's seq; the checkpoint's seq */
    uint64_t bytes;
    uint64_t live;  /* live bytes of (kind, device) after the event */
    uintptr_t base, stream;
    gpumem_site site;  /* the allocation's */
    gpumem_site where; /* the release's; its func alone names gpumem check's release call */
    uint32_t stack, thread;
    int device;
    int code, cuda_error;
    unsigned char type, kind;
} trace_ev;

/* Text that grows: with malloc, or with mmap for the exit path, which must not wait for
 * malloc's lock. Out of memory, what does not fit is left out (the reader sees a cut line). */
typedef struct {
    char *p;
    size_t n, cap;
    int mapped;
} gpumem__text;

void gpumem__text_free(gpumem__text *t);
void gpumem__text_put(gpumem__text *t, const char *s);
void gpumem__text_put_i64(gpumem__text *t, int64_t v);
/* Microseconds with three decimals: the trace event format's unit, to the nanosecond. */
void gpumem__text_put_ts(gpumem__text *t, uint64_t ns);

/* The pid every event names. */
void gpumem__trace_text_pid(long pid);
/* On while the exit path formats what the writer left: it may run in a signal handler that
 * interrupted malloc, so tables grow with mmap, names are not cached and stacks are not
 * symbolized for them. */
void gpumem__trace_text_no_malloc(int on);
/* The first lines: the process's name and command line, the format, the clocks; rank < 0 for
 * none. */
void gpumem__trace_head_text(gpumem__text *t, const char *tool, uint64_t start_ns, uint64_t wall_ns,
                             long rank);
/* One event, one line. */
void gpumem__trace_event_text(gpumem__text *t, const trace_ev *e);
/* The end: the stacks events named, each once, symbolized now; the end marker with the totals;
 * the same stacks as the format's frame tree. */
void gpumem__trace_end_text(gpumem__text *t, uint64_t ns, uint64_t recorded, uint64_t dropped);

#endif

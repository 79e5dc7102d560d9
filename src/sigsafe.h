/* Async-signal-safe output (internal, gpumem__ prefix): a fixed buffer drained with write(2),
 * and formatters that neither allocate nor take a lock nor touch stdio. The exit-time report
 * and `gpumem check`'s crash-time report write through it, so they may run from a signal
 * handler that interrupted anything: printf, malloc, or gpumem itself. */
#ifndef GPUMEM_SIGSAFE_H
#define GPUMEM_SIGSAFE_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>

#include "format.h"
#include "gpumem.h"

typedef struct gpumem__sink {
    int fd;        /* written with write(2); -1 when file is used */
    FILE *file;    /* on-demand reports go to the caller's stream (not from signal handlers) */
    int error;     /* errno of the first write that failed, 0 while none did */
    size_t len;
    char buf[4096];
} gpumem__sink;

void gpumem__sink_fd(gpumem__sink *s, int fd);
void gpumem__sink_file(gpumem__sink *s, FILE *f);
void gpumem__sink_mem(gpumem__sink *s, const char *p, size_t n);
void gpumem__sink_str(gpumem__sink *s, const char *str);
void gpumem__sink_u64(gpumem__sink *s, uint64_t v);
void gpumem__sink_i64(gpumem__sink *s, int64_t v);
void gpumem__sink_hex(gpumem__sink *s, uint64_t v); /* 0x1f */
/* Right-aligns str in width columns (printf's %*s). */
void gpumem__sink_pad(gpumem__sink *s, const char *str, int width);
/* str as a JSON string, quotes included; NULL writes null. */
void gpumem__sink_json_str(gpumem__sink *s, const char *str);
/* "FILE:LINE (FUNC)", as gpumem__site_str. */
void gpumem__sink_site(gpumem__sink *s, gpumem_site site);
/* Stack id valgrind-style, as gpumem__stack_print, each line prefixed by indent. With
 * cached_only, a stack not yet symbolized is not (symbolizing allocates): returns -1. Returns
 * the frames written. */
int gpumem__sink_stack(gpumem__sink *o, uint32_t stack, const char *indent, int cached_only);
/* Writes s made visible. */
void gpumem__sink_visible(gpumem__sink *s, const char *str);
/* Writes out what is buffered; returns 0 or the errno of the first failed write (also kept
 * in s->error). */
int gpumem__sink_flush(gpumem__sink *s);

/* Waits at most *budget_ns in all for the lock: try-locks, sleeping between tries with
 * nanosleep. Returns 1 when locked; the time spent waiting comes off *budget_ns. */
int gpumem__trylock_for(pthread_mutex_t *m, long *budget_ns);

#endif

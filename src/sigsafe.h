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
/* Writes out what is buffered; returns 0 or the errno of the first failed write (also kept
 * in s->error). */
int gpumem__sink_flush(gpumem__sink *s);

/* ---- format.c: text chores shared by reports, traces and messages (also signal-safe) ---- */

/* The most bytes gpumem__json_piece writes for one piece (an escaped U+FFFD is 6). */
#define GPUMEM__JSON_PIECE_MAX 8
/* The JSON string text of the next piece of s (s[0] is not NUL): one character, escaped when
 * JSON asks (quote, backslash, control characters), or an escaped U+FFFD for a sequence that
 * is not UTF-8. Sets *took to the bytes of s it stands for; returns the bytes written to out.
 * The one JSON string escaper of gpumem: every JSON string is written with it. */
size_t gpumem__json_piece(const char *s, char out[GPUMEM__JSON_PIECE_MAX], size_t *took);
/* The most bytes gpumem__visible_piece writes for one piece (a C1 control in UTF-8 is 8). */
#define GPUMEM__VISIBLE_PIECE_MAX 8
/* The terminal-safe text of the next piece of s (s[0] is not NUL): a character as it is, or,
 * for a control character (C0, DEL, C1), its escape: \n, \t or \xNN for each of its bytes.
 * Sets *took to the bytes of s it stands for; returns the bytes written to out. The one rule
 * of gpumem's text outputs for text that comes from outside. */
size_t gpumem__visible_piece(const char *s, char out[GPUMEM__VISIBLE_PIECE_MAX], size_t *took);
/* s made visible (gpumem__visible_piece) into out, cut at a piece to fit cap bytes with the
 * NUL; returns the length written. */
size_t gpumem__visible(const char *s, char *out, size_t cap);
/* Writes s made visible. */
void gpumem__sink_visible(gpumem__sink *s, const char *str);
/* len, less a multi-byte character cut short at the end of s[0..len): where text is cut to
 * fit a buffer, this cuts it at a character boundary. */
size_t gpumem__utf8_whole(const char *s, size_t len);
/* A malloc'd copy of s that is valid UTF-8: each sequence that is not becomes U+FFFD, by the
 * rule gpumem__json_piece follows. For JSON libraries that refuse other text (jansson). Not
 * async-signal-safe (it allocates); NULL without memory. */
char *gpumem__utf8_valid_dup(const char *s);
/* pattern with every "%p" replaced by pid and, with add_pid when there is no %p, ".PID"
 * appended, into out (cap bytes, NUL included). Returns the length of the whole name; when
 * that is cap or more, out is "": a file name is never shortened into another name. */
size_t gpumem__path_expand(const char *pattern, long pid, int add_pid, char *out, size_t cap);

/* Decimal text of v into buf (at least 21 bytes); returns buf. */
char *gpumem__fmt_u64(uint64_t v, char *buf);

/* Waits at most *budget_ns in all for the lock: try-locks, sleeping between tries with
 * nanosleep. Returns 1 when locked; the time spent waiting comes off *budget_ns. */
int gpumem__trylock_for(pthread_mutex_t *m, long *budget_ns);

#endif

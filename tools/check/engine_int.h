/* What the engine's files share (engine.c, crash.c); not for the front ends, which use
 * engine.h. */
#ifndef GPUMEM_CHECK_ENGINE_INT_H
#define GPUMEM_CHECK_ENGINE_INT_H

#include <stddef.h>
#include <stdint.h>

enum { LEAK_NO, LEAK_SUMMARY, LEAK_FULL };

/* Leak kinds, as valgrind names them: bits of --show-leak-kinds / --errors-for-leak-kinds. */
enum { LEAK_DEFINITE = 1, LEAK_REACHABLE = 2 };

/* What `gpumem check` asked for (settings.def), read once by check_setup. */
typedef struct {
    int leak;
    unsigned show_kinds, error_kinds;
    int gen_supp;
    int stacks;
    int quiet; /* -q: findings only */
    long root;
    const char *log, *json, *status;
} check__options;
extern check__options check__opt;

/* valgrind's "==PID== " before each line of the report. */
extern char check__prefix[32];

typedef struct {
    int kind;
    const char *call;       /* release call, or the allocation call of a leak / failed-alloc */
    int memory;             /* gpumem kind, 0 unknown */
    uint64_t bytes, count, offset;
    uintptr_t address;
    uint32_t stack;         /* the call's (for a leak: the allocation's) */
    const char *alloc_call; /* the allocation a release concerns */
    uint32_t alloc_stack;
    const char *first_call; /* double free: the first release */
    uint32_t first_stack;
    int error;              /* failed-alloc: the CUDA error */
    const char *suppressed; /* the matching suppression's name */
    int leak_kind;          /* a leak's: LEAK_DEFINITE or LEAK_REACHABLE */
    int counted;            /* a leak: an error (its kind is in --errors-for-leak-kinds) */
    int device;             /* a leak's or failed allocation's device (the context's) */
    const char *reached_from; /* a still reachable leak: where a pointer to it was found */
} finding;

/* PATTERN with %p replaced by the pid; a child of the checked program (pid other than the
 * root's) gets ".PID" appended when PATTERN has no %p. Async-signal-safe. */
void check__expand_path(const char *pattern, char *path, size_t n);
/* Why this process runs unchecked (check_unchecked), or NULL. */
const char *check__unchecked(void);
/* The log's descriptor for the crash-time report: the log file's when it is open, -1 when
 * --log-file was asked for and is not open yet, else stderr's. */
int check__crash_log_fd(void);
/* The findings kept so far, their lock taken within *budget nanoseconds (NULL when it stayed
 * busy); check__findings_unlock gives it back. */
const finding *check__findings_trylock(size_t *n, long *budget);
void check__findings_unlock(void);
/* Counts one finding as an error, or as suppressed. Lock-free. */
void check__count_finding(int suppressed);
long check__suppressed_count(void);

/* The report of a process that signal sig ends (crash.c): async-signal-safe. */
void check__finish_signaled(int sig);

#endif

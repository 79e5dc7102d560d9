/* What the engine's files share (engine.c, events.c, findings.c, leaks.c, crash.c,
 * render_*.c); not for the front ends, which use engine.h. */
#ifndef GPUMEM_CHECK_ENGINE_INT_H
#define GPUMEM_CHECK_ENGINE_INT_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "gpumem.h"
#include "internal.h"
#include "rank.h"
#include "reach.h"

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
    int image;        /* how many programs the process ran before this one (exec) */
    check_rank rank;  /* the process's rank in a parallel job, from its launcher's variables */
    char command[256]; /* the command line, read at setup (the crash-time report cannot) */
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
    int error;              /* failed-alloc, failed-call: the CUDA error (its status) */
    const char *error_name, *error_text; /* failed-call: the status's name and text */
    int note;               /* failed-call with --failed-calls=note: shown, not counted */
    const char *suppressed; /* the matching suppression's name */
    int leak_kind;          /* a leak's: LEAK_DEFINITE or LEAK_REACHABLE */
    int counted;            /* a leak: an error (its kind is in --errors-for-leak-kinds) */
    int device;             /* a leak's or failed allocation's device (the context's) */
    const char *reached_from; /* a still reachable leak: where a pointer to it was found */
    const char *reset_call;   /* a leak found when a context was destroyed: the call that did */
    uint32_t reset_stack;     /* ... and its stack */
} finding;

/* What was left on each device at exit (statistics slots), for the per-device lines. */
typedef struct {
    uint64_t bytes[3][GPUMEM_STATS_DEVICES], count[3][GPUMEM_STATS_DEVICES]; /* by leak kind */
    uint64_t leaks[GPUMEM_STATS_DEVICES], leaked_bytes[GPUMEM_STATS_DEVICES]; /* counted ones */
} check__device_sums;

/* Reports f unless a suppression matches it, and keeps it for the JSON report (engine.c).
 * Returns its index in the findings' list (-1 when it could not be kept). */
long check__report(finding *f);
/* Failed calls so far, and their groups (call, status, stack), for the summary (calls.c). */
void check__calls_summary(uint64_t *calls, uint64_t *sites);
/* GPUMEM_CHECK_COUNT_CALLS=1: "CALLS SEEN: ..." with the most frequent calls, to the report. */
void check__calls_seen_report(void);
/* The probes seen, up to max: call, status and how often. Returns how many. */
size_t check__calls_probes(const char **call, int *status, uint64_t *count, size_t max);
/* Takes every record of the device but registered host memory out of the registry, as
 * released by call: its context is gone (events.c). */
void check__take_device(int device, const char *call);
/* The calling code's stack, or 0 when stacks are off (GPUMEM_CHECK_STACKS=0). */
uint32_t check__capture(void);
/* What the program passed: the handle or address a registry key stands for (events.c). */
uintptr_t check__key_shown(uintptr_t key);

/* ---- where virtual memory is mapped (maps.c) */
typedef struct {
    uintptr_t base;
    size_t bytes;
    unsigned long long handle; /* the handle whose memory it maps */
    uint32_t stack;            /* cuMemMap's */
} check_map;
void check__map_add(uintptr_t base, size_t bytes, unsigned long long handle, uint32_t stack);
/* The mapping p lies in, into *out: 1, or 0 for none. */
int check__map_at(uintptr_t p, check_map *out);
/* Whether a mapping starts in [base, base + bytes). */
int check__map_starts_in(uintptr_t base, size_t bytes);
/* Takes out the mappings chosen() picks; their handles (one per mapping, up to max of them)
 * into handles. Returns how many were taken. */
size_t check__map_take(int (*chosen)(const check_map *m, const void *arg), const void *arg,
                       unsigned long long *handles, size_t max);

/* ---- leaks (leaks.c) */
/* Allocations left at exit with the same call, memory kind, device, stack and leak kind. */
typedef struct {
    const char *call;
    int memory, leak_kind, device;
    uint32_t stack;
    uint64_t count, bytes, first_seq;
    check_reach_found from; /* still reachable: where the first allocation was reached from */
} leak_group;

/* The live allocations (of device, registered host memory excepted, when device >= 0; all of
 * them with -1), grouped and sorted largest first, into *out (malloc'd); scan: run the pointer
 * scan that tells the leak kinds. entry: the frame of the engine's function the program's call
 * entered (check_finish's, check_device_reset's): this thread's stack below it holds only the
 * checker's frames, with stale copies of the allocations' addresses left by earlier calls, and
 * is not read. Returns the number of groups, or -1. */
long check__leak_groups(int scan, int device, uintptr_t entry, leak_group **out, int *skipped,
                        long long *scanned);
/* Where a still reachable allocation's reference was found, in words. */
void check__describe_reach(const check_reach_found *f, char *buf, size_t n);

/* ---- the base (base.c): options, the log, the files' names ---- */
/* One line of the report, prefixed, under the output lock. */
void check__say(const char *fmt, ...) GPUMEM__FORMAT(1, 2);
/* The same, on stderr too when the log is a file: for problems with gpumem check's own files. */
void check__say_both(const char *fmt, ...) GPUMEM__FORMAT(1, 2);
/* The log, opened at the first output (a rank's header written first); under the lock. */
FILE *check__log(void);
/* Ends the log: flushed, closed and checked; a failure said on stderr. Under the lock. */
void check__close_log(void);
/* Why check__open_output failed (its errno), in words. */
const char *check__open_failure(int e);
/* The output lock every finding and the report at the end take. */
void check__out_lock(void);
/* Takes it within *budget_ns nanoseconds (1), or not (0). */
int check__out_trylock(long *budget_ns);
void check__out_unlock(void);
/* ---- a finding's text (render_text.c), under the output lock ---- */
void check__text_finding(const finding *f);
/* A stack, one frame a line, indented under the prefix ("   (no stack)" without one). */
void check__say_stack(uint32_t stack);
/* With --gen-suppressions=yes: a suppression that matches f. */
void check__gen_suppression(const finding *f);
/* 8192 -> "8,192" into buf. */
char *check__grouped(uint64_t v, char *buf, size_t n);
/* The findings' array, which the pointer scan must not read (its addresses are no pointers the
 * program holds). */
void check__findings_storage(const void **p, size_t *bytes);

/* PATTERN with %p replaced by the pid and %r by the rank; a child of the checked program (pid
 * other than the root's) gets ".PID" appended when PATTERN has neither, a later program of the
 * process (after exec) ".execN". Returns 0, or -1 when it does not fit ("" then).
 * Async-signal-safe. */
int check__expand_path(const char *pattern, char *path, size_t n);
/* The status file's name: STATUS_DIR/PID, or STATUS_DIR/PID.execN for a later program of the
 * process; "" when it does not fit. Async-signal-safe. */
void check__status_path(char *path, size_t n);
/* Opens a report file named by PATTERN for writing without ever blocking (a FIFO no process
 * reads is refused with ENXIO); the expanded name in path. Returns the descriptor, or -1 and
 * errno (ENAMETOOLONG when the name does not fit). Async-signal-safe. */
int check__open_output(const char *pattern, char *path, size_t n);
/* Set once the report's first line is written (engine.c's log opened). */
extern int check__report_started;
/* Why this process runs unchecked (check_unchecked), or NULL. */
const char *check__unchecked(void);
/* The log's descriptor for the crash-time report: the log file's when it is open, -1 when
 * --log-file was asked for and is not open yet, else stderr's. */
int check__crash_log_fd(void);
/* ---- findings (findings.c) */
/* Keeps f for the JSON report (a copy; its strings must outlive the report); returns its index,
 * or -1 when it could not be kept. */
long check__keep(const finding *f);
/* n more failures of the kept failed-call finding at index. */
void check__findings_count_add(long index, uint64_t n);
/* Matches the suppressions and counts f as suppressed or, unless it is a leak that is no
 * error, as an error. Returns 1 when it is suppressed. */
int check__suppress(finding *f);
/* Every finding kept, without the lock: for the report at exit, when events have stopped. */
const finding *check__findings_all(size_t *n);
/* The findings kept so far in *list and *n, their lock taken within *budget nanoseconds;
 * returns 0 when it stayed busy, else 1, and check__findings_unlock gives it back. */
int check__findings_trylock(const finding **list, size_t *n, long *budget);
void check__findings_unlock(void);
/* Counts one finding as an error, or as suppressed. Lock-free. */
void check__count_finding(int suppressed);
long check__suppressed_count(void);

/* ---- the JSON report (render_json.c): written through a sink, at exit and after a signal
 * alike. head, then for each finding next_finding and finding, then tail. */
struct gpumem__sink;
typedef struct {
    uint64_t leaks, leaked_bytes;   /* the leaks that are errors */
    const gpumem_stats_t *st;       /* at exit, for "devices"; NULL after a signal */
    const check__device_sums *dev;
    int complete;                   /* after a signal: 1 or 0; -1 at exit (always complete) */
} check__json_sums;
/* code_key: "exit_code", "signal" or NULL (none); ended_by: how the process ended, when that
 * is not exit() nor a signal ("_exit", "exec"), or NULL. */
void check__json_head(struct gpumem__sink *o, const char *status, const char *code_key, int code,
                      const char *ended_by);
void check__json_next_finding(struct gpumem__sink *o, size_t shown);
/* leak_stack: the leak's stack as JSON already (from crash.c's symbolizing child), or NULL.
 * cached: only stacks symbolized before are shown (after a signal). */
void check__json_finding(struct gpumem__sink *o, const finding *f, const char *leak_stack,
                         int cached);
void check__json_stack(struct gpumem__sink *o, uint32_t id, int cached);
/* peak: by gpumem kind, 0 for the kinds not allocated. */
void check__json_tail(struct gpumem__sink *o, size_t shown, const uint64_t *peak,
                      const check__json_sums *sum);

/* ---- the end of the text report (render_text.c): leaks and summaries, through a sink, at
 * exit and after a signal alike. Lines start with check__prefix. */
void check__text_line(struct gpumem__sink *o, const char *text);
void check__text_grouped(struct gpumem__sink *o, uint64_t v); /* 8192 -> "8,192" */
typedef struct {
    uint64_t bytes, count;
    int memory, device;     /* device -1: not named (one device used) */
    const char *call;
    int leak_kind;          /* LEAK_DEFINITE, LEAK_REACHABLE, or 0 after a signal */
    uint32_t stack;
    const char *stack_text; /* the stack as text already (crash.c's child), or NULL */
    const char *indent;     /* before each frame */
    int cached;             /* only stacks symbolized before (after a signal) */
} check__text_leak_args;
/* "8,192 bytes in 2 device allocations by cudaMalloc() are definitely lost" and the stack. */
void check__text_leak(struct gpumem__sink *o, const check__text_leak_args *a);
/* "LEAK SUMMARY: [definitely lost: ]8,192 bytes in 2 allocations from 1 call site (device
 * 8,192 in 2)", without the line's end. */
void check__text_leak_summary(struct gpumem__sink *o, const char *leak_kind, uint64_t bytes,
                              uint64_t blocks, uint64_t sites, const uint64_t *by_kind_bytes,
                              const uint64_t *by_kind_count);
/* "PEAK: device 8.0 KiB, pinned 4.0 KiB"; peak by gpumem kind, 0 for those not allocated. */
void check__text_peak(struct gpumem__sink *o, const uint64_t *peak);
/* "ERROR SUMMARY: 1 error (1 leak), 0 suppressed"; in a process with a rank, "ERROR SUMMARY
 * of rank 1 (pid 1234): ...". */
void check__text_errors(struct gpumem__sink *o, long errors, uint64_t leaks, long suppressed);
/* "gpumem check: rank 1 (pid 1234, local rank 1): COMMAND", the report's first line in a process
 * with a rank; nothing in one without (base.c). */
void check__text_rank_header(struct gpumem__sink *o);
/* "rank 1 (pid 1234" without the closing parenthesis (base.c). */
void check__rank_pid(struct gpumem__sink *o);

/* The status file's lines that `gpumem check` (launch.c) reads for its exit status and its
 * summary of many processes: errors, status, code (exit status or signal), leaks and
 * leaked_bytes (those that are errors), allocations (made; -1 leaves the line out, as after a
 * signal), command, and rank and local_rank in a process with a rank. Status "running" (the
 * file written when CUDA starts, check_started) has no errors, code, leaks nor allocations.
 * Async-signal-safe. */
void check__status_lines(struct gpumem__sink *o, const char *status, long errors, int code,
                         uint64_t leaks, uint64_t leaked_bytes, int64_t allocations);

/* The report of a process that signal sig ends, or (sig 0) that ends by how ("_exit", which runs
 * no exit handlers and may be called in a signal handler; or "exit", when the engine's locks
 * could not be had) with status code (crash.c): async-signal-safe. */
void check__finish_safe(int sig, int code, const char *how);

#endif

/* gpumem check's engine (engine.h): events in, findings and reports out.
 *
 * Live CUDA memory is kept in the library's registry, as gpumem's own allocations are: one
 * record per allocation with its kind, size, device, stack and a sequence number; the call
 * that made it is the record's site.func (gpumem check has no call site of its own). Releases
 * go through the registry's take, which tells a right release from a mismatched, double,
 * interior or unknown one exactly as gpumem_free does. Leaks at the end are the library's
 * grouping of live records (report.c), and the byte peaks its statistics (stats.c).
 *
 * This file holds the setup, the log and the report at exit. The events are events.c, the
 * findings' list and counters findings.c, the leak groups leaks.c; the end of the report is
 * rendered by render_text.c and render_json.c, which the report after a fatal signal
 * (crash.c) uses too; the GPUMEM_CHECK_* settings are settings.def. */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backtrace.h"
#include "check_trace.h"
#include "engine_int.h"
#include "internal.h"
#include "reach.h"
#include "settings.h"
#include "sigsafe.h"
#include "suppress.h"

_Thread_local int check_tls_busy __attribute__((tls_model("initial-exec")));
_Thread_local unsigned check_tls_reports __attribute__((tls_model("initial-exec")));

/* ---- options (settings.def, set by `gpumem check`, launch.c) ---- */

check__options check__opt;

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Output goes through one lock; the prefix is valgrind's "==PID== ". */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out_file;
static int out_fd = -1; /* out_file's descriptor, for the crash-time report */
int check__report_started;
char check__prefix[32];

static void setup(void)
{
    check_tls_busy++;
    check_trace_setup();
    gpumem__init_once();
    gpumem__report_at_exit_disable();
    snprintf(check__prefix, sizeof check__prefix, "==%ld== ", (long)getpid());
    const char *leak = check_setting_get(CHECK_SET_LEAK, "full");
    check__opt.leak = strcmp(leak, "no") == 0 ? LEAK_NO : strcmp(leak, "summary") == 0 ? LEAK_SUMMARY
                                                                                : LEAK_FULL;
    check__opt.show_kinds = (unsigned)check_leak_kinds_parse(check_setting_get(CHECK_SET_SHOW_LEAK_KINDS, "all"));
    check__opt.error_kinds = (unsigned)check_leak_kinds_parse(check_setting_get(CHECK_SET_ERRORS_FOR_LEAK_KINDS, "all"));
    check__opt.gen_supp = strcmp(check_setting_get(CHECK_SET_GEN_SUPPRESSIONS, "no"), "yes") == 0;
    check__opt.stacks = strcmp(check_setting_get(CHECK_SET_STACKS, "1"), "0") != 0;
    check__opt.quiet = strcmp(check_setting_get(CHECK_SET_QUIET, "0"), "1") == 0;
    check__opt.root = strtol(check_setting_get(CHECK_SET_ROOT, "0"), NULL, 10);
    check__opt.log = check_setting_path(CHECK_SET_LOG);
    check__opt.json = check_setting_path(CHECK_SET_JSON);
    check__opt.status = check_setting_path(CHECK_SET_STATUS);
    check__opt.image = atoi(check_setting_get(CHECK_SET_IMAGE, "0"));
    check_rank_read(&check__opt.rank);
    gpumem__command_line(check__opt.command, sizeof check__opt.command);
    /* Suppression files, separated by newlines (the launcher checked them already). */
    const char *files = check_setting_get(CHECK_SET_SUPPRESSIONS, NULL);
    if (files) {
        char *copy = strdup(files), *save = NULL;
        for (char *f = copy ? strtok_r(copy, "\n", &save) : NULL; f; f = strtok_r(NULL, "\n", &save)) {
            char err[512];
            if (check_supp_load(f, err, sizeof err) != 0)
                fprintf(stderr, "%sgpumem check: error: %s\n", check__prefix, err);
        }
        free(copy);
    }
    check_tls_busy--;
}

void check_setup(void)
{
    pthread_once(&setup_once, setup);
}

/* PATTERN with %p replaced by the pid and %r by the rank; a child of the checked program (pid
 * other than the root's) gets ".PID" appended when PATTERN has neither, so that it writes its
 * own file. */
int check__expand_path(const char *pattern, char *path, size_t n)
{
    long pid = (long)getpid();
    return check_path_expand(pattern, pid, check__opt.rank.rank,
                             check__opt.root && check__opt.root != pid, check__opt.image, path, n);
}

/* Opens one of the report's files for writing, never blocking: a FIFO no process reads is
 * refused (ENXIO) rather than waited on for ever. Returns the descriptor, or -1 with why in
 * errno (ENAMETOOLONG: the name does not fit once %p and %r are expanded; path is then the
 * pattern). */
int check__open_output(const char *pattern, char *path, size_t n)
{
    if (check__expand_path(pattern, path, n) != 0) {
        snprintf(path, n, "%s", pattern);
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd;
    do
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
            fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    return fd;
}

void check__status_path(char *path, size_t n)
{
    /* By hand: the crash-time report names it too. */
    char digits[21];
    size_t len = strlen(check__opt.status), o = 0;
    if (len + 48 > n) {
        path[0] = '\0';
        return;
    }
    memcpy(path, check__opt.status, len);
    o = len;
    path[o++] = '/';
    gpumem__fmt_u64((uint64_t)getpid(), digits);
    memcpy(path + o, digits, strlen(digits) + 1);
    o += strlen(digits);
    if (check__opt.image > 0) {
        memcpy(path + o, ".exec", 6);
        gpumem__fmt_u64((uint64_t)check__opt.image, path + o + 5);
    }
}

/* Why check__open_output failed, in words. */
static const char *open_failure(int e)
{
    return e == ENXIO          ? "it is a FIFO no process reads"
           : e == ENAMETOOLONG ? "the name is too long once %p and %r are expanded"
                               : strerror(e);
}

/* The log, opened at the first output; under out_lock. */
static FILE *out(void)
{
    if (out_file)
        return out_file;
    out_file = stderr;
    if (check__opt.log) {
        char path[4096];
        int fd = check__open_output(check__opt.log, path, sizeof path);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (f) {
            out_file = f;
            out_fd = fd;
        } else {
            int e = errno;
            if (fd >= 0)
                close(fd);
            fprintf(stderr, "%sgpumem check: warning: cannot write the log to %s (%s); writing "
                            "it here\n", check__prefix, path, open_failure(e));
        }
    }
    check__report_started = 1;
    if (!check__opt.quiet) { /* a rank's report says whose it is, before anything else */
        gpumem__sink o;
        gpumem__sink_file(&o, out_file);
        check__text_rank_header(&o);
        gpumem__sink_flush(&o);
    }
    return out_file;
}

static int log_errno; /* why the first write to the log failed */

void check__say(const char *fmt, ...)
{
    FILE *f = out();
    int before = errno;
    errno = 0;
    fputs(check__prefix, f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    if (errno && ferror(f) && !log_errno)
        log_errno = errno;
    errno = before;
}

/* A problem with gpumem check's own files: said in the log and, when the log is a file (which
 * may be the very file that failed), on stderr too. */
static void say_both(const char *fmt, ...) GPUMEM__FORMAT(1, 2);
static void say_both(const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    check__say("%s", text);
    if (out() != stderr) {
        fprintf(stderr, "%s%s\n", check__prefix, text);
        fflush(stderr); /* stderr may have been reopened, and buffered, by the program */
    }
}

/* 8192 -> "8,192". */
static char *grouped(uint64_t v, char *buf, size_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* " at file.cu:12" (or " in func") for the innermost frame of a stack; "" without one. */
static const char *where(uint32_t stack, char *buf, size_t n)
{
    gpumem__frame f;
    buf[0] = '\0';
    if (stack && gpumem__stack_frames(stack, &f, 1) == 1) {
        if (f.file)
            snprintf(buf, n, " at %s:%d", basename(f.file), f.line); /* GNU: no copy */
        else
            snprintf(buf, n, " in %s", f.func);
    }
    return buf;
}

static void say_stack(uint32_t stack)
{
    char indent[64];
    snprintf(indent, sizeof indent, "%s   ", check__prefix);
    if (stack)
        gpumem__stack_print(stack, out(), indent);
    else
        check__say("   (no stack)");
}

/* ---- findings (kept and counted by findings.c) ---- */

static void gen_suppression(const finding *f)
{
    if (!check__opt.gen_supp)
        return;
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int n = f->stack ? gpumem__stack_frames(f->stack, frames, GPUMEM__STACK_MAX_FRAMES) : 0;
    check_supp_generate(out(), f->kind, f->call, frames, n);
}

/* "device 8.0 KiB in 2, pinned 4.0 KiB in 1": the kinds with a non-zero present[k], each with
 * its bytes (formatted by fmt) and, when count is given, how many allocations; "" for none. */
static const char *kind_list(char *buf, size_t n, const uint64_t *present, const uint64_t *bytes,
                             const uint64_t *count, char *(*fmt)(uint64_t, char *, size_t))
{
    size_t o = 0;
    buf[0] = '\0';
    for (int k = 1; k < GPUMEM_KIND_COUNT_ && o + 64 < n; k++) {
        if (!present[k])
            continue;
        char b[32];
        o += (size_t)snprintf(buf + o, n - o, "%s%s %s", o ? ", " : "", gpumem_kind_name(k),
                              fmt(bytes[k], b, sizeof b));
        if (count)
            o += (size_t)snprintf(buf + o, n - o, " in %llu", (unsigned long long)count[k]);
    }
    return buf;
}

static void print_finding(const finding *f)
{
    char b1[32], b2[32], w[300];
    const char *mem = gpumem_kind_name(f->memory);
    switch (f->kind) {
    case CHECK_MISMATCHED:
        check__say("Mismatched release: %s() of %s bytes of %s memory allocated by %s%s", f->call,
            grouped(f->bytes, b1, sizeof b1), mem, f->alloc_call, where(f->alloc_stack, w, sizeof w));
        say_stack(f->stack);
        check__say(" Allocated by %s():", f->alloc_call);
        say_stack(f->alloc_stack);
        if (strcmp(f->call, "realloc") == 0)
            check__say(" %s memory is released with %s(); gpumem check gave realloc() new memory with "
                "the old contents and released the old so, and the program runs on", mem,
                check_right_release(f->memory, f->alloc_call));
        else if (strcmp(f->call, "free") == 0 || strncmp(f->call, "operator delete", 15) == 0)
            check__say(" %s memory is released with %s(); gpumem check released it so, and the program "
                "runs on", mem, check_right_release(f->memory, f->alloc_call));
        else
            check__say(" %s memory is released with %s(); CUDA refuses this call and the memory stays "
                "allocated", mem, check_right_release(f->memory, f->alloc_call));
        break;
    case CHECK_DOUBLE:
        check__say("Double release: %s() of %s bytes of %s memory at %p, already released by %s%s",
            f->call, grouped(f->bytes, b1, sizeof b1), mem, (void *)f->address, f->first_call,
            where(f->first_stack, w, sizeof w));
        say_stack(f->stack);
        check__say(" Released before by %s():", f->first_call);
        say_stack(f->first_stack);
        check__say(" Allocated by %s():", f->alloc_call);
        say_stack(f->alloc_stack);
        break;
    case CHECK_INVALID:
        check__say("Invalid release: %s() of %p, which no CUDA allocation call returned", f->call,
            (void *)f->address);
        say_stack(f->stack);
        break;
    case CHECK_INTERIOR:
        check__say("Interior release: %s() of %p, %s bytes into %s bytes of %s memory allocated by %s%s",
            f->call, (void *)f->address, grouped(f->offset, b1, sizeof b1),
            grouped(f->bytes, b2, sizeof b2), mem, f->alloc_call, where(f->alloc_stack, w, sizeof w));
        say_stack(f->stack);
        check__say(" Allocated by %s():", f->alloc_call);
        say_stack(f->alloc_stack);
        check__say(" Release the allocation's own address, %p", (void *)(f->address - f->offset));
        break;
    case CHECK_FAILED_ALLOC: {
        const char *name = gpumem__cuda_error_name(f->error);
        const char *text = gpumem__cuda_error_string(f->error);
        gpumem_live l;
        gpumem__reg_live(&l);
        char live[512];
        uint64_t live_count[GPUMEM_KIND_COUNT_];
        for (int k = 0; k < GPUMEM_KIND_COUNT_; k++)
            live_count[k] = l.count[k];
        kind_list(live, sizeof live, live_count, l.bytes, live_count, gpumem_format_bytes);
        check__say("Failed allocation: %s() of %s bytes of %s memory: %s (%s)", f->call,
            grouped(f->bytes, b1, sizeof b1), mem, name ? name : "unknown CUDA error",
            text ? text : "?");
        say_stack(f->stack);
        check__say(" Live then (seen by gpumem check): %s", *live ? live : "nothing");
        break;
    }
    case CHECK_FAILED_CALL:
        check__say("Failed call: %s() returned %s (%s)%s", f->call,
            f->error_name ? f->error_name : "an error", f->error_text ? f->error_text : "?",
            f->note ? "; a note, not counted (--failed-calls=note)" : "");
        say_stack(f->stack);
        break;
    default:
        break;
    }
    gen_suppression(f);
    check__say("%s", "");
}

/* Reports f (unless suppressed) and keeps it for the JSON report. */
long check__report(finding *f)
{
    check_tls_reports++;
    if (!check__suppress(f)) {
        pthread_mutex_lock(&out_lock);
        print_finding(f);
        fflush(out());
        pthread_mutex_unlock(&out_lock);
    }
    return check__keep(f);
}

uint32_t check__capture(void)
{
    return check__opt.stacks ? gpumem__stack_capture(1) : 0;
}

/* ---- the end ---- */

/* One line per device the program allocated on: what it left, and its peak. */
static void say_devices(const gpumem_stats_t *st, const check__device_sums *dev)
{
    char b1[32], b2[32], b3[32], b4[32];
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
        if (!st->device_count[d].total)
            continue;
        uint64_t left = dev->bytes[LEAK_DEFINITE][d] + dev->bytes[LEAK_REACHABLE][d];
        uint64_t n = dev->count[LEAK_DEFINITE][d] + dev->count[LEAK_REACHABLE][d];
        check__say("DEVICE %d%s: %s bytes left in %llu allocation%s (%s definitely lost, %s still "
            "reachable), peak %s, %llu allocation%s made",
            d, d == GPUMEM_STATS_DEVICES - 1 ? "+" : "", grouped(left, b1, sizeof b1),
            (unsigned long long)n, n == 1 ? "" : "s",
            grouped(dev->bytes[LEAK_DEFINITE][d], b2, sizeof b2),
            grouped(dev->bytes[LEAK_REACHABLE][d], b3, sizeof b3),
            gpumem_format_bytes(st->device_bytes[d].peak, b4, sizeof b4),
            (unsigned long long)st->device_count[d].total,
            st->device_count[d].total == 1 ? "" : "s");
    }
}

static atomic_int finished;
static const char *unchecked_why;

const char *check_exec_env(void)
{
    static char env[48];
    snprintf(env, sizeof env, "%s=%d", check_setting_name(CHECK_SET_IMAGE), check__opt.image + 1);
    return env;
}

void check_exec_failed(void)
{
    atomic_store(&finished, 0);
}

void check_forked(void)
{
    atomic_store(&finished, 1);
}

void check_unchecked(const char *why)
{
    check_setup();
    unchecked_why = why;
    pthread_mutex_lock(&out_lock);
    check__say("gpumem check: %s; this process runs unchecked", why);
    fflush(out());
    pthread_mutex_unlock(&out_lock);
}

const char *check__unchecked(void)
{
    return unchecked_why;
}

int check__crash_log_fd(void)
{
    if (out_file && out_file != stderr)
        return out_fd;
    return !out_file && check__opt.log ? -1 : STDERR_FILENO;
}

/* The JSON report, through the renderer the crash-time report uses too (render_json.c). */
static void write_json(const char *status, int code, const gpumem_stats_t *st,
                       const check__device_sums *dev, uint64_t leaks, uint64_t leaked_bytes)
{
    char path[4096];
    int fd = check__open_output(check__opt.json, path, sizeof path);
    if (fd < 0) {
        say_both("gpumem check: error: cannot write the JSON report to %s (%s)", path,
                 open_failure(errno));
        return;
    }
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    const char *code_key = strcmp(status, "exited") == 0     ? "exit_code"
                           : strcmp(status, "signaled") == 0 ? "signal"
                                                             : NULL;
    int exec = strcmp(status, "exec") == 0;
    check__json_head(&o, exec ? "exited" : status, exec ? "exit_code" : code_key, code,
                     exec ? "exec" : NULL);
    size_t nfindings;
    const finding *findings = check__findings_all(&nfindings);
    for (size_t i = 0; i < nfindings; i++) {
        check__json_next_finding(&o, i);
        check__json_finding(&o, &findings[i], NULL, 0);
    }
    uint64_t peak[GPUMEM_KIND_COUNT_] = {0};
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        peak[k] = st->count[k].total ? st->bytes[k].peak : 0;
    check__json_sums sum = {.leaks = leaks, .leaked_bytes = leaked_bytes, .st = st, .dev = dev,
                            .complete = -1};
    check__json_tail(&o, nfindings, peak, &sum);
    int e = gpumem__sink_flush(&o);
    if (close(fd) != 0 && !e)
        e = errno;
    if (e)
        say_both("gpumem check: error: cannot write the JSON report to %s (%s)", path,
                 strerror(e));
}

void check_started(void)
{
    check_setup();
    if (!check__opt.status || atomic_load(&finished))
        return;
    char path[4096];
    check__status_path(path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return; /* said at the end, when the report's status cannot be written either */
    check_tls_busy++;
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    check__status_lines(&o, "running", 0, 0, 0, -1);
    gpumem__sink_flush(&o);
    close(fd);
    check_tls_busy--;
}

static void write_status(const char *status, int code, const gpumem_stats_t *st,
                         const check__device_sums *dev, uint64_t leaks, uint64_t leaked_bytes)
{
    char path[4096];
    check__status_path(path, sizeof path);
    FILE *f = fopen(path, "w");
    if (!f) {
        say_both("gpumem check: warning: cannot write %s (%s): gpumem check's exit status will "
                 "not count this process", path, strerror(errno));
        return;
    }
    /* Read by `gpumem check` (launch.c): its exit status, and its summary of many processes. */
    int64_t allocations = 0;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        allocations += (int64_t)st->count[k].total;
    gpumem__sink o;
    gpumem__sink_file(&o, f);
    check__status_lines(&o, status, code, leaks, leaked_bytes, allocations);
    gpumem__sink_flush(&o);
    /* Each device the process allocated on, for the summary by device of many processes. */
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++)
        if (st->device_count[d].total)
            fprintf(f, "device %d allocations %llu leaks %llu leaked_bytes %llu peak %llu\n", d,
                    (unsigned long long)st->device_count[d].total,
                    (unsigned long long)dev->leaks[d], (unsigned long long)dev->leaked_bytes[d],
                    (unsigned long long)st->device_bytes[d].peak);
    errno = 0;
    int failed = ferror(f);
    if (fclose(f) != 0 || failed)
        say_both("gpumem check: warning: cannot write %s (%s): gpumem check's exit status will "
                 "not count this process", path, errno ? strerror(errno) : "write error");
}

/* What the leaks at exit add up to, by leak kind (1 definite, 2 reachable). */
typedef struct {
    check__device_sums dev;
    uint64_t leaks, leaked_bytes; /* the ones that are errors */
    uint64_t bytes[3], blocks[3], sites[3];
    uint64_t by_kind_bytes[3][GPUMEM_KIND_COUNT_], by_kind_count[3][GPUMEM_KIND_COUNT_];
} leak_sums;

static void add_leak(leak_sums *s, const leak_group *g)
{
    int lk = g->leak_kind, slot = gpumem__dev_slot(g->device);
    s->dev.bytes[lk][slot] += g->bytes;
    s->dev.count[lk][slot] += g->count;
    s->bytes[lk] += g->bytes;
    s->blocks[lk] += g->count;
    s->sites[lk]++;
    s->by_kind_bytes[lk][g->memory] += g->bytes;
    s->by_kind_count[lk][g->memory] += g->count;
}

/* Leaks reported when a context was destroyed (cudaDeviceReset): added to the sums at exit. */
static leak_sums reset_sums;

/* One leak, with its stack and, for still reachable memory, where a pointer to it is. */
static void say_leak(const leak_group *g, const finding *f, int per_device)
{
    char indent[64];
    snprintf(indent, sizeof indent, "%s   ", check__prefix);
    check__text_leak_args a = {.bytes = g->bytes, .count = g->count, .memory = g->memory,
                               .device = per_device ? g->device : -1, .call = f->call,
                               .leak_kind = g->leak_kind, .stack = g->stack, .indent = indent};
    gpumem__sink o;
    gpumem__sink_file(&o, out());
    check__text_leak(&o, &a);
    gpumem__sink_flush(&o);
    if (f->reached_from)
        check__say(" %s referenced from %s", g->count == 1 ? "It is" : "The first of them is",
            f->reached_from);
    if (f->reset_call) {
        check__say(" %s still allocated when %s() destroyed the device's context, which "
            "released %s:", g->count == 1 ? "It was" : "They were", f->reset_call,
            g->count == 1 ? "it" : "them");
        say_stack(f->reset_stack);
    }
    gen_suppression(f);
    check__say("%s", "");
}

/* Reports each leak group (unless suppressed) and adds them up; reset_call and reset_stack
 * name the call that destroyed the groups' context, for leaks found then (else NULL, 0). */
static void report_leaks(const leak_group *g, long ng, int per_device, leak_sums *s,
                         const char *reset_call, uint32_t reset_stack)
{
    for (long i = 0; i < ng; i++) {
        int lk = g[i].leak_kind;
        finding f = {.kind = CHECK_LEAK, .call = g[i].call ? g[i].call : "?",
                     .memory = g[i].memory, .bytes = g[i].bytes, .count = g[i].count,
                     .stack = g[i].stack, .leak_kind = lk,
                     .counted = (check__opt.error_kinds & (unsigned)lk) != 0, .device = g[i].device,
                     .reset_call = reset_call, .reset_stack = reset_stack};
        int shown = (check__opt.show_kinds & (unsigned)lk) != 0;
        if (!shown && !f.counted) {
            add_leak(s, &g[i]); /* neither listed nor an error: only the summary counts it */
            continue;
        }
        if (g[i].from.where) {
            char text[512];
            check__describe_reach(&g[i].from, text, sizeof text);
            f.reached_from = strdup(text); /* kept with the finding, for the JSON */
        }
        int quiet = check__suppress(&f);
        check__keep(&f);
        if (quiet)
            continue;
        if (f.counted) {
            s->leaks++;
            s->leaked_bytes += g[i].bytes;
            s->dev.leaks[gpumem__dev_slot(g[i].device)]++;
            s->dev.leaked_bytes[gpumem__dev_slot(g[i].device)] += g[i].bytes;
        }
        add_leak(s, &g[i]);
        if (check__opt.leak == LEAK_FULL && shown)
            say_leak(&g[i], &f, per_device);
    }
}

/* The LEAK SUMMARY lines. */
static void say_leak_summary(const leak_sums *s, long ng, long long scanned, int skipped)
{
    static const char *const names[3] = {"", "definitely lost", "still reachable"};
    gpumem__sink o;
    gpumem__sink_file(&o, out());
    for (int lk = LEAK_DEFINITE; lk <= LEAK_REACHABLE; lk++) {
        if (!s->sites[lk] || (check__opt.quiet && !(check__opt.error_kinds & (unsigned)lk)))
            continue; /* -q: only what counts as errors */
        check__text_leak_summary(&o, names[lk], s->bytes[lk], s->blocks[lk], s->sites[lk],
                                 s->by_kind_bytes[lk], s->by_kind_count[lk]);
        gpumem__sink_str(&o, (check__opt.show_kinds & (unsigned)lk) || check__opt.leak != LEAK_FULL
                                 ? "\n"
                             : lk == LEAK_REACHABLE ? "; --show-leak-kinds=all lists them\n"
                                                    : "; --show-leak-kinds=definite lists them\n");
    }
    gpumem__sink_flush(&o);
    if (!s->sites[LEAK_DEFINITE] && !s->sites[LEAK_REACHABLE]) {
        if (!check__opt.quiet)
            check__say("LEAK SUMMARY: no CUDA memory left allocated at exit");
    } else if (check__opt.leak == LEAK_SUMMARY)
        check__say("   --leak-check=full shows where each was allocated");
    if (ng > 0 && scanned < 0)
        check__say("   (no pointer scan, it could not run: every allocation left is counted as "
            "definitely lost)");
    if (skipped)
        check__say("   (incomplete: %d registry shards were held by a thread)", skipped);
}

/* How many devices the program allocated on: with more than one, leaks name their device and
 * each device gets a line. */
static int devices_used(const gpumem_stats_t *st)
{
    int n = 0;
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++)
        n += st->device_count[d].total != 0;
    return n;
}

void check_device_reset(const char *call, int device, uint32_t stack)
{
    check_setup();
    check_tls_busy++;
    if (check__opt.leak != LEAK_NO && !atomic_load(&finished)) {
        leak_group *g = NULL;
        int skipped = 0;
        long long scanned = -1;
        long ng = check__leak_groups(1, device, &g, &skipped, &scanned);
        if (ng > 0) {
            gpumem_stats_t st;
            gpumem_stats(&st);
            pthread_mutex_lock(&out_lock);
            report_leaks(g, ng, devices_used(&st) > 1, &reset_sums, call, stack);
            fflush(out());
            pthread_mutex_unlock(&out_lock);
        }
        free(g);
    }
    check__take_device(device, call);
    check_vmm_device_reset(device);
    check_tls_busy--;
}

/* The leak report: each leak, the summary and, with several devices, a line for each. */
static void finish_leaks(const gpumem_stats_t *st, leak_sums *s)
{
    leak_group *g = NULL;
    int skipped = 0;
    long long scanned = -1;
    long ng = check__opt.leak == LEAK_NO ? 0
                                          : check__leak_groups(1, -1, &g, &skipped, &scanned);
    int per_device = devices_used(st) > 1;
    *s = reset_sums; /* the leaks reported at a reset are in the summary too */
    report_leaks(g, ng, per_device, s, NULL, 0);
    if (check__opt.leak != LEAK_NO)
        say_leak_summary(s, ng, scanned, skipped);
    free(g);
    if (per_device && !check__opt.quiet)
        say_devices(st, &s->dev);
}

/* The log's end: a full disk fails a write only when the buffer goes out, so the stream and the
 * close are checked, and a failure is said where it can be read. */
static void close_log(void)
{
    errno = 0;
    int flush_errno = fflush(out()) != 0 ? errno : 0;
    if (out_file && out_file != stderr) {
        int failed = ferror(out_file);
        int e = flush_errno ? flush_errno : log_errno;
        if (fclose(out_file) != 0 && !e)
            e = errno;
        if (failed || e) {
            char path[4096];
            check__expand_path(check__opt.log, path, sizeof path);
            fprintf(stderr, "%sgpumem check: error: the log %s was not written completely (%s); "
                            "its findings are lost: run again with room on the disk, or "
                            "without --log-file\n",
                    check__prefix, path, e ? strerror(e) : "write error");
            fflush(stderr);
        }
    }
    out_file = NULL;
}

/* The program's own output before the report, where stdio's locks can be had: a stream a
 * signal handler's thread holds (exit() called in a handler that interrupted a printf) is left
 * as it is rather than waited on for ever. */
static void flush_program_output(void)
{
    FILE *streams[] = {stdout, stderr};
    for (size_t i = 0; i < sizeof streams / sizeof *streams; i++)
        if (ftrylockfile(streams[i]) == 0) {
            fflush_unlocked(streams[i]);
            funlockfile(streams[i]);
        }
}

void check_finish(const char *status, int code)
{
    if (atomic_exchange(&finished, 1))
        return;
    /* exit() called by a signal handler that interrupted gpumem check on this thread: the
     * locks the engine holds here are this thread's, and would be waited on for ever. */
    int interrupted = check_tls_busy > 0;
    check_setup();
    check_tls_busy++;
    long budget = 2L * 1000 * 1000 * 1000; /* another thread holding the output, at most 2 s */
    int locked = 0;
    if (strcmp(status, "signaled") != 0 && strcmp(status, "_exit") != 0 && !interrupted)
        locked = gpumem__trylock_for(&out_lock, &budget);
    if (!locked) {
        /* After a signal, at _exit, or where the engine's locks cannot be had: the report that
         * waits for nothing. */
        int sig = strcmp(status, "signaled") == 0 ? code : 0;
        check__finish_safe(sig, code, sig ? NULL : strcmp(status, "_exit") == 0 ? "_exit" : "exit");
        check_tls_busy--;
        return;
    }
    flush_program_output();
    if (strcmp(status, "exec") == 0)
        check__say("Process replacing its program (exec): what it did with CUDA until then; "
            "its CUDA memory goes with the program");
    if (unchecked_why)
        status = "unchecked";
    gpumem_stats_t st;
    gpumem_stats(&st);
    leak_sums s;
    finish_leaks(&st, &s);
    uint64_t peak[GPUMEM_KIND_COUNT_] = {0};
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        peak[k] = st.count[k].total ? st.bytes[k].peak : 0;
    long errors = check_error_count(), supp = check__suppressed_count();
    uint64_t calls, call_sites;
    check__calls_summary(&calls, &call_sites);
    if (calls && !check__opt.quiet)
        check__say("FAILED CALLS: %llu failed CUDA call%s at %llu call site%s%s",
            (unsigned long long)calls, calls == 1 ? "" : "s", (unsigned long long)call_sites,
            call_sites == 1 ? "" : "s",
            calls > call_sites ? " (each site shown once above; the JSON report has the counts)"
                               : "");
    gpumem__sink o;
    gpumem__sink_file(&o, out());
    if (!check__opt.quiet) {
        check__text_peak(&o, peak);
        check_supp_sink_used(&o, check__prefix);
    }
    if (!check__opt.quiet || errors || s.leaks)
        check__text_errors(&o, errors, s.leaks, supp);
    gpumem__sink_flush(&o);
    fflush(out());
    if (check__opt.json)
        write_json(status, code, &st, &s.dev, s.leaks, s.leaked_bytes);
    if (check__opt.status)
        write_status(status, code, &st, &s.dev, s.leaks, s.leaked_bytes);
    close_log(); /* a process killed by its signal next writes nothing more */
    pthread_mutex_unlock(&out_lock);
    check_tls_busy--;
}

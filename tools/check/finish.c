/* gpumem check's engine (engine.h): events in, findings and reports out; this file is its top,
 * the report at the end.
 *
 * Live CUDA memory is kept in the library's registry, as gpumem's own allocations are: one
 * record per allocation with its kind, size, device, stack and a sequence number; the call
 * that made it is the record's site.func (gpumem check has no call site of its own). Releases
 * go through the registry's take, which tells a right release from a mismatched, double,
 * interior or unknown one exactly as gpumem_free does. Leaks at the end are the library's
 * grouping of live records (report.c), and the byte peaks its statistics (stats.c).
 *
 * This file holds the report at exit (and the leaks reported when a context is destroyed), the
 * JSON and status files. Below it, none calling up into it: the events (events.c, vmm.c,
 * calls.c, graphs.c), the findings' list, counters and each finding's report (findings.c), the
 * leak groups (leaks.c), the renderers (render_text.c, render_json.c, which the report after a
 * fatal signal, crash.c, uses too) and the base they share: options, log, files' names
 * (base.c); the GPUMEM_CHECK_* settings are settings.def. */
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
            d, d == GPUMEM_STATS_DEVICES - 1 ? "+" : "", check__grouped(left, b1, sizeof b1),
            (unsigned long long)n, n == 1 ? "" : "s",
            check__grouped(dev->bytes[LEAK_DEFINITE][d], b2, sizeof b2),
            check__grouped(dev->bytes[LEAK_REACHABLE][d], b3, sizeof b3),
            gpumem_format_bytes(st->device_bytes[d].peak, b4, sizeof b4),
            (unsigned long long)st->device_count[d].total,
            st->device_count[d].total == 1 ? "" : "s");
    }
}

static atomic_int finished;
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

/* The JSON report, through the renderer the crash-time report uses too (render_json.c). */
static void write_json(const char *status, int code, const gpumem_stats_t *st,
                       const check__device_sums *dev, uint64_t leaks, uint64_t leaked_bytes)
{
    char path[4096];
    int fd = check__open_output(check__opt.json, path, sizeof path);
    if (fd < 0) {
        check__say_both("gpumem check: error: cannot write the JSON report to %s (%s)", path,
                 check__open_failure(errno));
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
        check__say_both("gpumem check: error: cannot write the JSON report to %s (%s)", path,
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
    check__status_lines(&o, "running", 0, 0, 0, 0, -1);
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
        check__say_both("gpumem check: warning: cannot write %s (%s): gpumem check's exit status will "
                 "not count this process", path, strerror(errno));
        return;
    }
    /* Read by `gpumem check` (launch.c): its exit status, and its summary of many processes. */
    int64_t allocations = 0;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        allocations += (int64_t)st->count[k].total;
    gpumem__sink o;
    gpumem__sink_file(&o, f);
    check__status_lines(&o, status, check_error_count(), code, leaks, leaked_bytes, allocations);
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
        check__say_both("gpumem check: warning: cannot write %s (%s): gpumem check's exit status will "
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
    gpumem__sink_file(&o, check__log());
    check__text_leak(&o, &a);
    gpumem__sink_flush(&o);
    if (f->reached_from)
        check__say(" %s referenced from %s", g->count == 1 ? "It is" : "The first of them is",
            f->reached_from);
    if (f->reset_call) {
        check__say(" %s still allocated when %s() destroyed the device's context, which "
            "released %s:", g->count == 1 ? "It was" : "They were", f->reset_call,
            g->count == 1 ? "it" : "them");
        check__say_stack(f->reset_stack);
    }
    check__gen_suppression(f);
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
    gpumem__sink_file(&o, check__log());
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
        long ng = check__leak_groups(1, device, (uintptr_t)__builtin_frame_address(0), &g,
                                     &skipped, &scanned);
        if (ng > 0) {
            gpumem_stats_t st;
            gpumem_stats(&st);
            check__out_lock();
            report_leaks(g, ng, devices_used(&st) > 1, &reset_sums, call, stack);
            fflush(check__log());
            check__out_unlock();
        }
        free(g);
    }
    check__take_device(device, call);
    check_vmm_device_reset(device);
    check_tls_busy--;
}

/* The leak report: each leak, the summary and, with several devices, a line for each. */
static void finish_leaks(const gpumem_stats_t *st, leak_sums *s, uintptr_t entry)
{
    leak_group *g = NULL;
    int skipped = 0;
    long long scanned = -1;
    long ng = check__opt.leak == LEAK_NO
                  ? 0
                  : check__leak_groups(1, -1, entry, &g, &skipped, &scanned);
    int per_device = devices_used(st) > 1;
    *s = reset_sums; /* the leaks reported at a reset are in the summary too */
    report_leaks(g, ng, per_device, s, NULL, 0);
    if (check__opt.leak != LEAK_NO)
        say_leak_summary(s, ng, scanned, skipped);
    free(g);
    if (per_device && !check__opt.quiet)
        say_devices(st, &s->dev);
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
        locked = check__out_trylock(&budget);
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
    if (check__unchecked())
        status = "unchecked";
    gpumem_stats_t st;
    gpumem_stats(&st);
    leak_sums s;
    finish_leaks(&st, &s, (uintptr_t)__builtin_frame_address(0));
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
    if (check_count_calls())
        check__calls_seen_report();
    gpumem__sink o;
    gpumem__sink_file(&o, check__log());
    if (!check__opt.quiet) {
        check__text_peak(&o, peak);
        check_supp_sink_used(&o, check__prefix);
    }
    if (!check__opt.quiet || errors || s.leaks)
        check__text_errors(&o, errors, s.leaks, supp);
    gpumem__sink_flush(&o);
    fflush(check__log());
    if (check__opt.json)
        write_json(status, code, &st, &s.dev, s.leaks, s.leaked_bytes);
    if (check__opt.status)
        write_status(status, code, &st, &s.dev, s.leaks, s.leaked_bytes);
    check__close_log(); /* a process killed by its signal next writes nothing more */
    check__out_unlock();
    check_tls_busy--;
}

/* The end of the text report (leaks, LEAK SUMMARY, PEAK, ERROR SUMMARY), one renderer for the
 * report at exit (engine.c) and the one after a fatal signal (crash.c). It writes through a
 * signal-safe sink (sigsafe.h): after a signal into the log's descriptor, at exit into the
 * log's stream. Each line starts with the report's "==PID== " prefix. */
#define _GNU_SOURCE
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "sigsafe.h"

void check__text_line(gpumem__sink *o, const char *text)
{
    gpumem__sink_str(o, check__prefix);
    gpumem__sink_str(o, text);
}

/* 8192 -> "8,192". */
void check__text_grouped(gpumem__sink *o, uint64_t v)
{
    char digits[21];
    gpumem__fmt_u64(v, digits);
    int len = (int)strlen(digits);
    for (int i = 0; i < len; i++) {
        if (i && (len - i) % 3 == 0)
            gpumem__sink_str(o, ",");
        gpumem__sink_mem(o, digits + i, 1);
    }
}

void check__text_leak(gpumem__sink *o, const check__text_leak_args *a)
{
    check__text_line(o, "");
    check__text_grouped(o, a->bytes);
    gpumem__sink_str(o, " bytes in ");
    gpumem__sink_u64(o, a->count);
    gpumem__sink_str(o, " ");
    gpumem__sink_str(o, gpumem_kind_name(a->memory));
    gpumem__sink_str(o, a->count == 1 ? " allocation" : " allocations");
    if (a->device >= 0) {
        gpumem__sink_str(o, " on device ");
        gpumem__sink_i64(o, a->device);
    }
    gpumem__sink_str(o, " by ");
    gpumem__sink_str(o, a->call);
    if (!a->leak_kind) /* after a signal: no pointer scan */
        gpumem__sink_str(o, "() still live at exit\n");
    else
        gpumem__sink_str(o, a->leak_kind == LEAK_DEFINITE
                                ? (a->count == 1 ? "() is definitely lost\n" : "() are definitely lost\n")
                                : (a->count == 1 ? "() is still reachable\n" : "() are still reachable\n"));
    if (!a->stack)
        check__text_line(o, "   (no stack)\n");
    else if (a->stack_text)
        gpumem__sink_str(o, a->stack_text);
    else if (gpumem__sink_stack(o, a->stack, a->indent, a->cached) < 0)
        check__text_line(o, "   (stack not shown: it cannot be symbolized safely while the "
                            "process is ending by a signal)\n");
}

void check__text_leak_summary(gpumem__sink *o, const char *leak_kind, uint64_t bytes,
                              uint64_t blocks, uint64_t sites, const uint64_t *by_kind_bytes,
                              const uint64_t *by_kind_count)
{
    check__text_line(o, "LEAK SUMMARY: ");
    if (leak_kind) {
        gpumem__sink_str(o, leak_kind);
        gpumem__sink_str(o, ": ");
    }
    check__text_grouped(o, bytes);
    gpumem__sink_str(o, " bytes in ");
    gpumem__sink_u64(o, blocks);
    gpumem__sink_str(o, blocks == 1 ? " allocation from " : " allocations from ");
    gpumem__sink_u64(o, sites);
    gpumem__sink_str(o, sites == 1 ? " call site (" : " call sites (");
    int first = 1;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        if (!by_kind_count[k])
            continue;
        gpumem__sink_str(o, first ? "" : ", ");
        gpumem__sink_str(o, gpumem_kind_name(k));
        gpumem__sink_str(o, " ");
        check__text_grouped(o, by_kind_bytes[k]);
        gpumem__sink_str(o, " in ");
        gpumem__sink_u64(o, by_kind_count[k]);
        first = 0;
    }
    gpumem__sink_str(o, ")");
}

void check__text_peak(gpumem__sink *o, const uint64_t *peak)
{
    check__text_line(o, "PEAK: ");
    int any = 0;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        if (!peak[k])
            continue;
        char b[32];
        gpumem__sink_str(o, any ? ", " : "");
        gpumem__sink_str(o, gpumem_kind_name(k));
        gpumem__sink_str(o, " ");
        gpumem__sink_str(o, gpumem_format_bytes(peak[k], b, sizeof b));
        any = 1;
    }
    gpumem__sink_str(o, any ? "\n" : "no CUDA memory allocated\n");
}

/* "rank 1 (pid 1234" without the closing parenthesis. */
static void rank_pid(gpumem__sink *o)
{
    gpumem__sink_str(o, "rank ");
    gpumem__sink_i64(o, check__opt.rank.rank);
    gpumem__sink_str(o, " (pid ");
    gpumem__sink_i64(o, (int64_t)getpid());
}

void check__text_rank_header(gpumem__sink *o)
{
    if (check__opt.rank.rank < 0)
        return;
    check__text_line(o, "gpumem check: ");
    rank_pid(o);
    if (check__opt.rank.local_rank >= 0) {
        gpumem__sink_str(o, ", local rank ");
        gpumem__sink_i64(o, check__opt.rank.local_rank);
    }
    gpumem__sink_str(o, ", from ");
    gpumem__sink_str(o, check__opt.rank.from);
    gpumem__sink_str(o, "): ");
    gpumem__sink_str(o, check__opt.command);
    gpumem__sink_str(o, "\n");
}

void check__text_errors(gpumem__sink *o, long errors, uint64_t leaks, long suppressed)
{
    if (check__opt.rank.rank >= 0) {
        check__text_line(o, "ERROR SUMMARY of ");
        rank_pid(o);
        gpumem__sink_str(o, "): ");
    } else {
        check__text_line(o, "ERROR SUMMARY: ");
    }
    gpumem__sink_i64(o, errors);
    gpumem__sink_str(o, errors == 1 ? " error (" : " errors (");
    gpumem__sink_u64(o, leaks);
    gpumem__sink_str(o, leaks == 1 ? " leak), " : " leaks), ");
    gpumem__sink_i64(o, suppressed);
    gpumem__sink_str(o, " suppressed\n");
}

/* "name value\n" */
static void status_line(gpumem__sink *o, const char *name, int64_t v)
{
    gpumem__sink_str(o, name);
    gpumem__sink_str(o, " ");
    gpumem__sink_i64(o, v);
    gpumem__sink_str(o, "\n");
}

void check__status_lines(gpumem__sink *o, const char *status, int code, uint64_t leaks,
                         uint64_t leaked_bytes, int64_t allocations)
{
    int result = strcmp(status, "running") != 0; /* "running": started, no result yet */
    if (result)
        status_line(o, "errors", check_error_count());
    gpumem__sink_str(o, "status ");
    gpumem__sink_str(o, status);
    gpumem__sink_str(o, "\n");
    if (result) {
        status_line(o, "code", code);
        status_line(o, "leaks", (int64_t)leaks);
        status_line(o, "leaked_bytes", (int64_t)leaked_bytes);
    }
    if (result && allocations >= 0)
        status_line(o, "allocations", allocations);
    gpumem__sink_str(o, "command ");
    gpumem__sink_str(o, check__opt.command);
    gpumem__sink_str(o, "\n");
    if (check__opt.rank.rank >= 0) {
        status_line(o, "rank", check__opt.rank.rank);
        status_line(o, "local_rank", check__opt.rank.local_rank);
    }
}

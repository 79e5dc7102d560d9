/* The text report: each finding as it is made (through the log's lines, check__say), and the
 * end of the report (leaks, LEAK SUMMARY, PEAK, ERROR SUMMARY), one renderer for the report at
 * exit (engine.c) and the one after a fatal signal (crash.c). It writes through a
 * signal-safe sink (sigsafe.h): after a signal into the log's descriptor, at exit into the
 * log's stream. Each line starts with the report's "==PID== " prefix. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backtrace.h"

#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "sigsafe.h"
#include "suppress.h"


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

void check__text_errors(gpumem__sink *o, long errors, uint64_t leaks, long suppressed)
{
    if (check__opt.rank.rank >= 0) {
        check__text_line(o, "ERROR SUMMARY of ");
        check__rank_pid(o);
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

void check__status_lines(gpumem__sink *o, const char *status, long errors, int code,
                         uint64_t leaks, uint64_t leaked_bytes, int64_t allocations)
{
    int result = strcmp(status, "running") != 0; /* "running": started, no result yet */
    if (result)
        status_line(o, "errors", errors);
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

/* ---- a finding, as it is made: the log's lines (check__say, under the output lock) ---- */

/* 8192 -> "8,192". */
char *check__grouped(uint64_t v, char *buf, size_t n)
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

void check__say_stack(uint32_t stack)
{
    char indent[64];
    snprintf(indent, sizeof indent, "%s   ", check__prefix);
    if (stack)
        gpumem__stack_print(stack, check__log(), indent);
    else
        check__say("   (no stack)");
}

/* ---- findings (kept and counted by findings.c) ---- */

void check__gen_suppression(const finding *f)
{
    if (!check__opt.gen_supp)
        return;
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int n = f->stack ? gpumem__stack_frames(f->stack, frames, GPUMEM__STACK_MAX_FRAMES) : 0;
    check_supp_generate(check__log(), f->kind, f->call, frames, n);
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

void check__text_finding(const finding *f)
{
    char b1[32], b2[32], w[300];
    const char *mem = gpumem_kind_name(f->memory);
    switch (f->kind) {
    case CHECK_MISMATCHED:
        check__say("Mismatched release: %s() of %s bytes of %s memory allocated by %s%s", f->call,
            check__grouped(f->bytes, b1, sizeof b1), mem, f->alloc_call, where(f->alloc_stack, w, sizeof w));
        check__say_stack(f->stack);
        check__say(" Allocated by %s():", f->alloc_call);
        check__say_stack(f->alloc_stack);
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
            f->call, check__grouped(f->bytes, b1, sizeof b1), mem, (void *)f->address, f->first_call,
            where(f->first_stack, w, sizeof w));
        check__say_stack(f->stack);
        check__say(" Released before by %s():", f->first_call);
        check__say_stack(f->first_stack);
        check__say(" Allocated by %s():", f->alloc_call);
        check__say_stack(f->alloc_stack);
        break;
    case CHECK_INVALID:
        check__say("Invalid release: %s() of %p, which no CUDA allocation call returned", f->call,
            (void *)f->address);
        check__say_stack(f->stack);
        break;
    case CHECK_INTERIOR:
        check__say("Interior release: %s() of %p, %s bytes into %s bytes of %s memory allocated by %s%s",
            f->call, (void *)f->address, check__grouped(f->offset, b1, sizeof b1),
            check__grouped(f->bytes, b2, sizeof b2), mem, f->alloc_call, where(f->alloc_stack, w, sizeof w));
        check__say_stack(f->stack);
        check__say(" Allocated by %s():", f->alloc_call);
        check__say_stack(f->alloc_stack);
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
            check__grouped(f->bytes, b1, sizeof b1), mem, name ? name : "unknown CUDA error",
            text ? text : "?");
        check__say_stack(f->stack);
        check__say(" Live then (seen by gpumem check): %s", *live ? live : "nothing");
        break;
    }
    case CHECK_FAILED_CALL:
        check__say("Failed call: %s() returned %s (%s)%s", f->call,
            f->error_name ? f->error_name : "an error", f->error_text ? f->error_text : "?",
            f->note ? "; a note, not counted (--failed-calls=note)" : "");
        check__say_stack(f->stack);
        break;
    default:
        break;
    }
    check__gen_suppression(f);
    check__say("%s", "");
}

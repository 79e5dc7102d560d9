/* The JSON report (schema gpumem-check/1), one renderer for the report at exit (engine.c) and
 * the one after a fatal signal (crash.c): both write it through a signal-safe sink
 * (sigsafe.h), so it allocates nothing and takes no lock, and the two cannot drift. A report
 * at exit symbolizes stacks as it goes; after a signal only stacks symbolized before are
 * shown (or the text a symbolizing child sent, crash.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "sigsafe.h"

void check__json_stack(gpumem__sink *o, uint32_t id, int cached)
{
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int n = !id      ? 0
            : cached ? gpumem__stack_frames_cached(id, frames, GPUMEM__STACK_MAX_FRAMES)
                     : gpumem__stack_frames(id, frames, GPUMEM__STACK_MAX_FRAMES);
    gpumem__sink_str(o, "[");
    for (int i = 0; i < n; i++) {
        gpumem__sink_str(o, i ? ", {\"function\": " : "{\"function\": ");
        gpumem__sink_json_str(o, frames[i].func);
        gpumem__sink_str(o, ", \"file\": ");
        gpumem__sink_json_str(o, frames[i].file);
        gpumem__sink_str(o, ", \"line\": ");
        gpumem__sink_i64(o, frames[i].line);
        gpumem__sink_str(o, ", \"module\": ");
        gpumem__sink_json_str(o, frames[i].object);
        gpumem__sink_str(o, frames[i].inlined ? ", \"inlined\": true}" : "}");
    }
    gpumem__sink_str(o, "]");
}

static void key_str(gpumem__sink *o, const char *key, const char *value)
{
    gpumem__sink_str(o, ", \"");
    gpumem__sink_str(o, key);
    gpumem__sink_str(o, "\": ");
    gpumem__sink_json_str(o, value);
}

static void key_u64(gpumem__sink *o, const char *key, uint64_t value)
{
    gpumem__sink_str(o, ", \"");
    gpumem__sink_str(o, key);
    gpumem__sink_str(o, "\": ");
    gpumem__sink_u64(o, value);
}

/* What a leak has that other findings do not. */
static void leak_fields(gpumem__sink *o, const finding *f)
{
    key_str(o, "alloc_call", f->call);
    key_u64(o, "count", f->count);
    if (f->leak_kind) /* after a signal there is no pointer scan, so no kind */
        key_str(o, "leak_kind", check_leak_kind_name(f->leak_kind));
    if (!f->counted)
        gpumem__sink_str(o, ", \"error\": false"); /* listed, not counted */
    if (f->reached_from)
        key_str(o, "reachable_from", f->reached_from);
    if (f->reset_call) /* found when the device's context was destroyed */
        key_str(o, "reset_call", f->reset_call);
}

/* What concerns the allocation a release or failure was about, and the kinds' extras. */
static void release_fields(gpumem__sink *o, const finding *f, int cached)
{
    if (f->alloc_call && f->kind != CHECK_LEAK) {
        key_str(o, "alloc_call", f->alloc_call);
        gpumem__sink_str(o, ", \"alloc_stack\": ");
        check__json_stack(o, f->alloc_stack, cached);
    }
    if (f->kind == CHECK_LEAK && f->reset_call) {
        gpumem__sink_str(o, ", \"reset_stack\": ");
        check__json_stack(o, f->reset_stack, cached);
    }
    if (f->kind == CHECK_DOUBLE) {
        key_str(o, "first_release_call", f->first_call);
        gpumem__sink_str(o, ", \"first_release_stack\": ");
        check__json_stack(o, f->first_stack, cached);
    }
    if (f->kind == CHECK_INTERIOR)
        key_u64(o, "offset", f->offset);
    if (f->kind == CHECK_FAILED_ALLOC) {
        const char *name = gpumem__cuda_error_name(f->error);
        key_str(o, "error", name ? name : "unknown");
    }
    if (f->kind == CHECK_FAILED_CALL) {
        key_str(o, "error", f->error_name ? f->error_name : "unknown");
        key_u64(o, "status", (uint64_t)(unsigned)f->error);
        key_u64(o, "count", f->count);
        if (f->note)
            gpumem__sink_str(o, ", \"note\": true"); /* listed, not counted */
    }
}

void check__json_finding(gpumem__sink *o, const finding *f, const char *leak_stack, int cached)
{
    gpumem__sink_str(o, "{\"kind\": ");
    gpumem__sink_json_str(o, check_kind_name(f->kind));
    if (f->kind == CHECK_LEAK)
        leak_fields(o, f);
    else
        key_str(o, "call", f->call);
    if (f->memory)
        key_str(o, "memory", gpumem_kind_name(f->memory));
    if (f->kind == CHECK_LEAK || f->kind == CHECK_FAILED_ALLOC) {
        gpumem__sink_str(o, ", \"device\": ");
        gpumem__sink_i64(o, f->device);
    }
    if (f->kind != CHECK_INVALID && f->kind != CHECK_FAILED_CALL)
        key_u64(o, "bytes", f->bytes);
    if (f->address) {
        gpumem__sink_str(o, ", \"address\": \"");
        gpumem__sink_hex(o, f->address);
        gpumem__sink_str(o, "\"");
    }
    gpumem__sink_str(o, f->kind == CHECK_LEAK ? ", \"alloc_stack\": " : ", \"stack\": ");
    if (leak_stack)
        gpumem__sink_str(o, leak_stack);
    else
        check__json_stack(o, f->stack, cached);
    release_fields(o, f, cached);
    if (f->suppressed)
        key_str(o, "suppressed", f->suppressed);
    gpumem__sink_str(o, "}");
}

/* The command line's words as JSON strings, read from /proc without stdio. */
static void command(gpumem__sink *o)
{
    int cmd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (cmd < 0)
        return;
    char arg[4096];
    size_t len = 0;
    int first = 1;
    ssize_t n;
    char c;
    while ((n = read(cmd, &c, 1)) == 1 || (n < 0 && errno == EINTR)) {
        if (n != 1)
            continue;
        if (c && len + 1 < sizeof arg) {
            arg[len++] = c;
            continue;
        }
        if (c)
            continue;
        arg[len] = '\0';
        gpumem__sink_str(o, first ? "" : ", ");
        gpumem__sink_json_str(o, arg);
        first = 0;
        len = 0;
    }
    close(cmd);
}

void check__json_head(gpumem__sink *o, const char *status, const char *code_key, int code,
                      const char *ended_by)
{
    gpumem__sink_str(o, "{\n  \"schema\": \"gpumem-check/1\",\n  \"tool\": \"gpumem check\", "
                        "\"version\": ");
    gpumem__sink_json_str(o, gpumem_version());
    gpumem__sink_str(o, ",\n  \"pid\": ");
    gpumem__sink_i64(o, (int64_t)getpid());
    if (check__opt.rank.rank >= 0) { /* a process of a parallel job */
        key_u64(o, "rank", (uint64_t)check__opt.rank.rank);
        if (check__opt.rank.local_rank >= 0)
            key_u64(o, "local_rank", (uint64_t)check__opt.rank.local_rank);
        key_str(o, "rank_from", check__opt.rank.from);
    }
    gpumem__sink_str(o, ", \"command\": [");
    command(o);
    gpumem__sink_str(o, "],\n  \"status\": ");
    gpumem__sink_json_str(o, status);
    if (code_key) {
        gpumem__sink_str(o, ", \"");
        gpumem__sink_str(o, code_key);
        gpumem__sink_str(o, "\": ");
        gpumem__sink_i64(o, code);
    }
    if (ended_by)
        key_str(o, "ended_by", ended_by);
    if (check__unchecked())
        key_str(o, "unchecked_because", check__unchecked());
    gpumem__sink_str(o, ",\n  \"findings\": [");
}

void check__json_next_finding(gpumem__sink *o, size_t shown)
{
    gpumem__sink_str(o, shown ? ",\n    " : "\n    ");
}

/* The failed calls passed over as the answers of queries (probes.def), at exit. */
static void probes(gpumem__sink *o)
{
    const char *call[64];
    int status[64];
    uint64_t count[64];
    size_t n = check__calls_probes(call, status, count, 64);
    gpumem__sink_str(o, "  \"probes\": [");
    for (size_t i = 0; i < n; i++) {
        gpumem__sink_str(o, i ? ", {\"call\": " : "{\"call\": ");
        gpumem__sink_json_str(o, call[i]);
        key_u64(o, "status", (uint64_t)(unsigned)status[i]);
        key_u64(o, "count", count[i]);
        gpumem__sink_str(o, "}");
    }
    gpumem__sink_str(o, "],\n");
}

/* One entry per device the program allocated on; "summary" is all of them merged. */
static void devices(gpumem__sink *o, const gpumem_stats_t *st, const check__device_sums *dev)
{
    gpumem__sink_str(o, "  \"devices\": [");
    int first = 1;
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++) {
        if (!st->device_count[d].total)
            continue;
        gpumem__sink_str(o, first ? "{\"device\": " : ", {\"device\": ");
        gpumem__sink_i64(o, d);
        if (d == GPUMEM_STATS_DEVICES - 1)
            gpumem__sink_str(o, ", \"and_above\": true");
        key_u64(o, "allocations", st->device_count[d].total);
        key_u64(o, "peak_bytes", st->device_bytes[d].peak);
        key_u64(o, "leaks", dev->leaks[d]);
        key_u64(o, "leaked_bytes", dev->leaked_bytes[d]);
        key_u64(o, "definitely_lost_bytes", dev->bytes[LEAK_DEFINITE][d]);
        key_u64(o, "still_reachable_bytes", dev->bytes[LEAK_REACHABLE][d]);
        gpumem__sink_str(o, "}");
        first = 0;
    }
    gpumem__sink_str(o, "],\n");
}

void check__json_tail(gpumem__sink *o, size_t shown, const uint64_t *peak,
                      const check__json_sums *sum)
{
    gpumem__sink_str(o, shown ? "\n  ],\n  \"peak\": {" : "],\n  \"peak\": {");
    int first = 1;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        if (!peak[k])
            continue;
        gpumem__sink_str(o, first ? "" : ", ");
        gpumem__sink_json_str(o, gpumem_kind_name(k));
        gpumem__sink_str(o, ": ");
        gpumem__sink_u64(o, peak[k]);
        first = 0;
    }
    gpumem__sink_str(o, "},\n");
    if (sum->st) {
        devices(o, sum->st, sum->dev);
        probes(o);
    }
    gpumem__sink_str(o, "  \"summary\": {\"errors\": ");
    gpumem__sink_i64(o, check_error_count());
    key_u64(o, "leaks", sum->leaks);
    key_u64(o, "leaked_bytes", sum->leaked_bytes);
    gpumem__sink_str(o, ", \"suppressed\": ");
    gpumem__sink_i64(o, check__suppressed_count());
    gpumem__sink_str(o, "}");
    if (sum->complete >= 0) /* after a signal: whether every finding is in it */
        gpumem__sink_str(o, sum->complete ? ",\n  \"complete\": true" : ",\n  \"complete\": false");
    gpumem__sink_str(o, "\n}\n");
}

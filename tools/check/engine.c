/* gpumem check's engine (engine.h): events in, findings and reports out.
 *
 * Live CUDA memory is kept in the library's registry, as gpumem's own allocations are: one
 * record per allocation with its kind, size, device, stack and a sequence number; the call
 * that made it is the record's site.func (gpumem check has no call site of its own). Releases
 * go through the registry's take, which tells a right release from a mismatched, double,
 * interior or unknown one exactly as gpumem_free does. Leaks at the end are the library's
 * grouping of live records (report.c), and the byte peaks its statistics (stats.c).
 *
 * The end of the report is rendered by render_text.c and render_json.c, which the report
 * after a fatal signal (crash.c) uses too; the GPUMEM_CHECK_* settings are settings.def. */
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
#include "hostmap.h"
#include "internal.h"
#include "reach.h"
#include "settings.h"
#include "sigsafe.h"
#include "suppress.h"
#include "trace.h"

_Thread_local int check_tls_busy __attribute__((tls_model("initial-exec")));

/* ---- options (settings.def, set by `gpumem check`, launch.c) ---- */

check__options check__opt;

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Output goes through one lock; the prefix is valgrind's "==PID== ". */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out_file;
static int out_fd = -1; /* out_file's descriptor, for the crash-time report */
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
    check__opt.log = check_setting_get(CHECK_SET_LOG, NULL);
    check__opt.json = check_setting_get(CHECK_SET_JSON, NULL);
    check__opt.status = check_setting_get(CHECK_SET_STATUS, NULL);
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

/* PATTERN with %p replaced by the pid; a child of the checked program (pid other than the
 * root's) gets ".PID" appended when PATTERN has no %p, so that it writes its own file. */
void check__expand_path(const char *pattern, char *path, size_t n)
{
    /* No snprintf: the crash-time report expands paths from a signal handler. */
    char pid[21];
    gpumem__fmt_u64((uint64_t)getpid(), pid);
    size_t o = 0;
    int had_pid = 0;
    for (const char *c = pattern; *c && o + 24 < n; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            for (const char *d = pid; *d; d++)
                path[o++] = *d;
            had_pid = 1;
            c++;
        } else {
            path[o++] = *c;
        }
    }
    if (!had_pid && check__opt.root && check__opt.root != (long)getpid() && o + 24 < n) {
        path[o++] = '.';
        for (const char *d = pid; *d; d++)
            path[o++] = *d;
    }
    path[o] = '\0';
}

/* The log, opened at the first output; under out_lock. */
static FILE *out(void)
{
    if (out_file)
        return out_file;
    out_file = stderr;
    if (check__opt.log) {
        char path[4096];
        check__expand_path(check__opt.log, path, sizeof path);
        FILE *f = fopen(path, "w");
        if (f) {
            out_file = f;
            out_fd = fileno(f);
        }
        else
            fprintf(stderr, "%sgpumem check: warning: cannot write the log to %s (%s); writing "
                            "it here\n", check__prefix, path, strerror(errno));
    }
    return out_file;
}

static void say(const char *fmt, ...) GPUMEM__FORMAT(1, 2);
static int log_errno; /* why the first write to the log failed */

static void say(const char *fmt, ...)
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
    say("%s", text);
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
        say("   (no stack)");
}

/* The call that releases memory of a kind (the record's site.func names how it was made). */
static const char *right_release(int kind, const char *made_by)
{
    switch (kind) {
    case GPUMEM_KIND_PINNED:
    case GPUMEM_KIND_HOST:
        return made_by && strncmp(made_by, "cuMem", 5) == 0 ? "cuMemFreeHost" : "cudaFreeHost";
    case GPUMEM_KIND_DEVICE_ASYNC:
        return made_by && strncmp(made_by, "cuMem", 5) == 0 ? "cuMemFreeAsync" : "cudaFreeAsync";
    case GPUMEM_KIND_REGISTERED:
        return made_by && strncmp(made_by, "cuMem", 5) == 0 ? "cuMemHostUnregister"
                                                             : "cudaHostUnregister";
    case GPUMEM_KIND_VIRTUAL:
        return made_by && strcmp(made_by, "cuMemCreate") == 0 ? "cuMemRelease" : "cuMemUnmap";
    case GPUMEM_KIND_ARRAY:
        return made_by && strncmp(made_by, "cuArray", 7) == 0 ? "cuArrayDestroy" : "cudaFreeArray";
    case GPUMEM_KIND_MIPMAPPED:
        return made_by && strncmp(made_by, "cuMipmapped", 11) == 0 ? "cuMipmappedArrayDestroy"
                                                                   : "cudaFreeMipmappedArray";
    case GPUMEM_KIND_GRAPH:
        return made_by && strncmp(made_by, "cuGraph", 7) == 0 ? "cuGraphAddMemFreeNode"
                                                              : "cudaGraphAddMemFreeNode";
    case GPUMEM_KIND_RESERVED:
        return "cuMemAddressFree";
    default:
        return made_by && strncmp(made_by, "cuMem", 5) == 0 ? "cuMemFree" : "cudaFree";
    }
}

/* ---- findings ---- */


static pthread_mutex_t findings_lock = PTHREAD_MUTEX_INITIALIZER;
static finding *findings;
static size_t nfindings, findings_cap;
static atomic_long error_count, suppressed_count;

long check_error_count(void)
{
    return atomic_load(&error_count);
}

static void keep(const finding *f)
{
    pthread_mutex_lock(&findings_lock);
    if (nfindings == findings_cap) {
        /* Not realloc: the old array is wiped before it is freed, so that the leak scan finds
         * no stale copy of the addresses in it (reach.c reads freed heap memory too). */
        size_t cap = findings_cap ? findings_cap * 2 : 16;
        finding *grown = malloc(cap * sizeof *grown);
        if (grown) {
            if (findings) {
                memcpy(grown, findings, nfindings * sizeof *grown);
                memset(findings, 0, findings_cap * sizeof *findings);
            }
            free(findings);
            findings = grown;
            findings_cap = cap;
        }
    }
    if (nfindings < findings_cap)
        findings[nfindings++] = *f;
    pthread_mutex_unlock(&findings_lock);
}

/* Matches the suppressions; returns 1 when the finding is suppressed. */
static int suppress(finding *f)
{
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int n = f->stack ? gpumem__stack_frames(f->stack, frames, GPUMEM__STACK_MAX_FRAMES) : 0;
    f->suppressed = check_supp_match(f->kind, f->call, frames, n);
    if (f->suppressed) {
        atomic_fetch_add(&suppressed_count, 1);
        return 1;
    }
    if (f->kind != CHECK_LEAK || f->counted)
        atomic_fetch_add(&error_count, 1);
    return 0;
}

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
        say("Mismatched release: %s() of %s bytes of %s memory allocated by %s%s", f->call,
            grouped(f->bytes, b1, sizeof b1), mem, f->alloc_call, where(f->alloc_stack, w, sizeof w));
        say_stack(f->stack);
        say(" Allocated by %s():", f->alloc_call);
        say_stack(f->alloc_stack);
        if (strcmp(f->call, "realloc") == 0)
            say(" %s memory is released with %s(); gpumem check gave realloc() new memory with "
                "the old contents and released the old so, and the program runs on", mem,
                right_release(f->memory, f->alloc_call));
        else if (strcmp(f->call, "free") == 0 || strncmp(f->call, "operator delete", 15) == 0)
            say(" %s memory is released with %s(); gpumem check released it so, and the program "
                "runs on", mem, right_release(f->memory, f->alloc_call));
        else
            say(" %s memory is released with %s(); CUDA refuses this call and the memory stays "
                "allocated", mem, right_release(f->memory, f->alloc_call));
        break;
    case CHECK_DOUBLE:
        say("Double release: %s() of %s bytes of %s memory at %p, already released by %s%s",
            f->call, grouped(f->bytes, b1, sizeof b1), mem, (void *)f->address, f->first_call,
            where(f->first_stack, w, sizeof w));
        say_stack(f->stack);
        say(" Released before by %s():", f->first_call);
        say_stack(f->first_stack);
        say(" Allocated by %s():", f->alloc_call);
        say_stack(f->alloc_stack);
        break;
    case CHECK_INVALID:
        say("Invalid release: %s() of %p, which no CUDA allocation call returned", f->call,
            (void *)f->address);
        say_stack(f->stack);
        break;
    case CHECK_INTERIOR:
        say("Interior release: %s() of %p, %s bytes into %s bytes of %s memory allocated by %s%s",
            f->call, (void *)f->address, grouped(f->offset, b1, sizeof b1),
            grouped(f->bytes, b2, sizeof b2), mem, f->alloc_call, where(f->alloc_stack, w, sizeof w));
        say_stack(f->stack);
        say(" Allocated by %s():", f->alloc_call);
        say_stack(f->alloc_stack);
        say(" Release the allocation's own address, %p", (void *)(f->address - f->offset));
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
        say("Failed allocation: %s() of %s bytes of %s memory: %s (%s)", f->call,
            grouped(f->bytes, b1, sizeof b1), mem, name ? name : "unknown CUDA error",
            text ? text : "?");
        say_stack(f->stack);
        say(" Live then (seen by gpumem check): %s", *live ? live : "nothing");
        break;
    }
    default:
        break;
    }
    gen_suppression(f);
    say("%s", "");
}

/* Reports f (unless suppressed) and keeps it for the JSON report. */
static void report(finding *f)
{
    if (!suppress(f)) {
        pthread_mutex_lock(&out_lock);
        print_finding(f);
        fflush(out());
        pthread_mutex_unlock(&out_lock);
    }
    keep(f);
}

static uint32_t capture(void)
{
    return check__opt.stacks ? gpumem__stack_capture(1) : 0;
}

/* ---- events ---- */

/* Host-visible CUDA memory (what host free() could be handed) is counted where it lies
 * (hostmap.c), so that free() of anything else costs a few loads. */
static int host_visible(int kind)
{
    return kind == GPUMEM_KIND_PINNED || kind == GPUMEM_KIND_HOST ||
           kind == GPUMEM_KIND_MANAGED || kind == GPUMEM_KIND_REGISTERED;
}

uintptr_t check_handle_key(unsigned long long handle)
{
    return ((uintptr_t)1 << 63) | ((uintptr_t)handle << 8);
}

uintptr_t check_array_key(uintptr_t array)
{
    /* Shifted as handles are: registry keys are multiples of 256 (array handles need not be). */
    return ((uintptr_t)3 << 62) | (array << 8);
}

uintptr_t check_reserve_key(uintptr_t base)
{
    return ((uintptr_t)1 << 62) | base;
}

/* What the program passed: the handle or address a registry key stands for. */
static uintptr_t key_shown(uintptr_t key)
{
    switch (key >> 62) {
    case 3:
        return (key & ~((uintptr_t)3 << 62)) >> 8;
    case 2:
        return (key & ~((uintptr_t)1 << 63)) >> 8;
    case 1:
        return key & ~((uintptr_t)1 << 62);
    default:
        return key;
    }
}

static void forget(const gpumem__rec *r)
{
    gpumem__stats_release(r->kind, r->device, r->bytes);
    gpumem__trace_release(r, (gpumem_site){0}, r->freed_site.func);
    if (host_visible(r->kind))
        check_hostmap_remove(r->base, r->bytes);
}

void check_alloc(const char *call, int kind, uintptr_t base, size_t bytes, int device,
                 int cuda_error, uint32_t stack)
{
    check_setup();
    check_tls_busy++;
    if (cuda_error) {
        finding f = {.kind = CHECK_FAILED_ALLOC, .call = call, .memory = kind, .bytes = bytes,
                     .stack = stack, .error = cuda_error, .device = device};
        gpumem__trace_failed(kind, bytes, device, (gpumem_site){NULL, call, 0}, stack,
                             gpumem__status_from_cuda(cuda_error), cuda_error);
        report(&f);
        check_tls_busy--;
        return;
    }
    /* Memory gpumem check saw no release of (released by a call it does not watch) is gone
     * when CUDA hands the address out again. */
    gpumem__rec old;
    int mismatch = 0;
    if (gpumem__reg_take((const void *)base, (gpumem_site){0}, 0, &mismatch, &old) == GPUMEM__TAKEN)
        forget(&old);
    gpumem__rec r = {.base = base, .bytes = bytes, .site = {NULL, call, 0},
                     .seq = gpumem__seq_take(), .thread = gpumem__thread_id(),
                     .device = device, .stack = stack, .kind = (unsigned char)kind};
    if (gpumem__reg_insert(&r) == 0) {
        gpumem__stats_alloc(kind, device, bytes);
        gpumem__trace_alloc(&r);
        if (host_visible(kind))
            check_hostmap_add(base, bytes);
    }
    check_tls_busy--;
}

/* Classifies a release of p by call; CHECK_GO leaves the record taken (r filled). */
static int classify(const char *call, unsigned mask, uintptr_t p, uint32_t stack, gpumem__rec *r,
                    int defer_unknown)
{
    int mismatch = 0;
    gpumem__take_result t =
        gpumem__reg_take((const void *)p, (gpumem_site){NULL, call, 0}, mask, &mismatch, r);
    if (t == GPUMEM__TAKEN) {
        gpumem__reg_set_freed_stack((const void *)p, stack);
        forget(r);
        return CHECK_GO;
    }
    finding f = {.call = call, .address = key_shown(p), .stack = stack, .memory = r->kind,
                 .bytes = r->bytes, .alloc_call = r->site.func, .alloc_stack = r->stack};
    if (mismatch) {
        f.kind = CHECK_MISMATCHED;
    } else if (t == GPUMEM__DOUBLE) {
        f.kind = CHECK_DOUBLE;
        f.first_call = r->freed_site.func ? r->freed_site.func : "?";
        f.first_stack = r->freed_stack;
    } else if (t == GPUMEM__INTERIOR) {
        f.kind = CHECK_INTERIOR;
        f.offset = p - r->base;
    } else if (defer_unknown) {
        return CHECK_UNKNOWN;
    } else {
        f = (finding){.kind = CHECK_INVALID, .call = call, .address = key_shown(p), .stack = stack};
    }
    report(&f);
    return CHECK_REPORTED;
}

void check_release_unknown_end(const char *call, uintptr_t p, uint32_t stack, int succeeded)
{
    if (succeeded)
        return;
    check_tls_busy++;
    finding f = {.kind = CHECK_INVALID, .call = call, .address = key_shown(p), .stack = stack};
    report(&f);
    check_tls_busy--;
}

int check_release_begin(const char *call, unsigned kind_mask, uintptr_t p, uint32_t stack)
{
    if (!p)
        return CHECK_IGNORED;
    check_setup();
    check_tls_busy++;
    gpumem__rec r;
    int res = classify(call, kind_mask ? kind_mask : ~0u, p, stack, &r, 1);
    /* cudaFree of a CUDA array (a handle, kept apart from addresses): a mismatched release. */
    if (res == CHECK_UNKNOWN && !(p >> 54) && gpumem__reg_find((const void *)check_array_key(p), &r) &&
        r.base == check_array_key(p))
        res = classify(call, kind_mask ? kind_mask : ~0u, check_array_key(p), stack, &r, 1);
    check_tls_busy--;
    return res;
}

void check_release_end(uintptr_t p, int succeeded)
{
    if (succeeded)
        return;
    check_tls_busy++;
    gpumem__rec r;
    gpumem__reg_untake((const void *)p);
    if (gpumem__reg_find((const void *)p, &r) && r.base == p) {
        gpumem__stats_alloc(r.kind, r.device, r.bytes);
        gpumem__trace_alloc(&r); /* live again: CUDA refused the release */
        if (host_visible(r.kind))
            check_hostmap_add(r.base, r.bytes);
    }
    check_tls_busy--;
}

int check_release_if_live(const char *call, unsigned kind_mask, uintptr_t p, uint32_t stack)
{
    check_setup();
    check_tls_busy++;
    gpumem__rec r;
    int mismatch = 0, taken = 0;
    if (gpumem__reg_take((const void *)p, (gpumem_site){NULL, call, 0}, kind_mask, &mismatch,
                         &r) == GPUMEM__TAKEN) {
        gpumem__reg_set_freed_stack((const void *)p, stack);
        forget(&r);
        taken = 1;
    }
    check_tls_busy--;
    return taken;
}

int check_host_lookup(uintptr_t p, uintptr_t *base, size_t *bytes)
{
    if (!check_hostmap_may_hold(p))
        return 0;
    check_tls_busy++;
    gpumem__rec r;
    int kind = 0;
    if (gpumem__reg_find((const void *)p, &r) && host_visible(r.kind)) {
        kind = r.kind;
        *base = r.base;
        *bytes = r.bytes;
    }
    check_tls_busy--;
    return kind;
}

int check_host_free(const char *call, uintptr_t p, uint32_t stack)
{
    if (!check_hostmap_may_hold(p))
        return 0;
    check_tls_busy++;
    gpumem__rec r;
    int kind = 0;
    if (gpumem__reg_find((const void *)p, &r) && host_visible(r.kind)) {
        if (!stack)
            stack = capture();
        if (r.base == p) {
            /* Take it out as released by this call, then report the mismatch. */
            classify(call, 1u << r.kind, p, stack, &r, 0);
            finding f = {.kind = CHECK_MISMATCHED, .call = call, .address = p, .stack = stack,
                         .memory = r.kind, .bytes = r.bytes, .alloc_call = r.site.func,
                         .alloc_stack = r.stack};
            report(&f);
            kind = r.kind;
        } else {
            classify(call, 0, p, stack, &r, 0); /* interior: reported, nothing released */
            kind = -1;
        }
    }
    check_tls_busy--;
    return kind;
}

/* Takes every live record that chosen() picks out of the registry, as released by call:
 * memory that went with a context or a range without a release call of its own. Records are
 * collected a batch at a time (the registry is walked under its locks) and taken after. */
typedef struct {
    int (*chosen)(const gpumem__rec *r, const void *arg);
    const void *arg;
    uintptr_t bases[256];
    int n;
} take_batch;

static int batch_collect(const gpumem__rec *r, void *arg)
{
    take_batch *b = arg;
    if (b->chosen(r, b->arg))
        b->bases[b->n++] = r->base;
    return b->n == (int)(sizeof b->bases / sizeof *b->bases);
}

static void take_all(int (*chosen)(const gpumem__rec *, const void *), const void *arg,
                     const char *call)
{
    check_tls_busy++;
    take_batch b;
    do {
        b = (take_batch){.chosen = chosen, .arg = arg};
        gpumem__reg_foreach(batch_collect, &b, 0);
        for (int i = 0; i < b.n; i++) {
            gpumem__rec r;
            int mismatch = 0;
            if (gpumem__reg_take((const void *)b.bases[i], (gpumem_site){NULL, call, 0}, 0,
                                 &mismatch, &r) == GPUMEM__TAKEN)
                forget(&r);
        }
    } while (b.n == (int)(sizeof b.bases / sizeof *b.bases));
    check_tls_busy--;
}

/* Mappings strictly inside (p, p + bytes): the one at p went through check_release_begin. */
static int in_unmapped_range(const gpumem__rec *r, const void *arg)
{
    const uintptr_t *range = arg;
    return r->kind == GPUMEM_KIND_VIRTUAL && r->base > range[0] && r->base < range[1];
}

void check_unmap_rest(uintptr_t p, size_t bytes)
{
    const uintptr_t range[2] = {p, p + bytes};
    take_all(in_unmapped_range, range, "cuMemUnmap");
}

/* What a device's context held: everything of it but registered host memory, which is the
 * program's own memory and stays registered until it says otherwise. */
static int of_device(const gpumem__rec *r, const void *arg)
{
    return r->device == *(const int *)arg && r->kind != GPUMEM_KIND_REGISTERED;
}

void check_device_reset(int device)
{
    check_setup();
    take_all(of_device, &device, "cudaDeviceReset");
}

/* ---- leak kinds ---- */

int check_leak_kinds_parse(const char *list)
{
    unsigned kinds = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list ? list : "");
    char *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "definite") == 0)
            kinds |= LEAK_DEFINITE;
        else if (strcmp(w, "reachable") == 0)
            kinds |= LEAK_REACHABLE;
        else if (strcmp(w, "all") == 0)
            kinds |= LEAK_DEFINITE | LEAK_REACHABLE;
        else if (strcmp(w, "none") != 0 && strcmp(w, "possible") != 0 && strcmp(w, "indirect") != 0)
            return -1; /* possible and indirect: valgrind's, never found here (none is) */
    }
    return (int)kinds;
}

const char *check_leak_kind_name(int leak_kind)
{
    return leak_kind == LEAK_DEFINITE ? "definite" : leak_kind == LEAK_REACHABLE ? "reachable" : NULL;
}

/* The frame the program's main returned to (preload.c), 0 before: the exiting thread's stack
 * below it is dead. */
static atomic_uintptr_t main_frame;

void check_main_returned(uintptr_t frame)
{
    atomic_store(&main_frame, frame);
}

/* The leak scan's lists hold the allocations' addresses, so they live outside the heap (which
 * is scanned, freed parts too): in mappings of their own, moved whole when they grow. */
static void *grow_mapping(void *old, size_t old_bytes, size_t bytes)
{
    void *p = old ? mremap(old, old_bytes, bytes, MREMAP_MAYMOVE)
                  : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

typedef struct {
    gpumem__rec *r;
    size_t n, cap;
    int oom;
} rec_list;

static int collect_rec(const gpumem__rec *r, void *arg)
{
    rec_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        gpumem__rec *grown = grow_mapping(l->r, l->cap * sizeof *grown, cap * sizeof *grown);
        if (!grown)
            return l->oom = 1;
        l->r = grown;
        l->cap = cap;
    }
    l->r[l->n++] = *r;
    return 0;
}

typedef struct {
    check_span *s;
    size_t n, cap;
} span_list;

static void add_span(const void *p, size_t bytes, void *arg)
{
    span_list *l = arg;
    if (!p || !bytes)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        check_span *grown = grow_mapping(l->s, l->cap * sizeof *grown, cap * sizeof *grown);
        if (!grown)
            return;
        l->s = grown;
        l->cap = cap;
    }
    l->s[l->n++] = (check_span){(uintptr_t)p, (uintptr_t)p + bytes};
}

typedef struct {
    const char *call;
    int memory, leak_kind, device;
    uint32_t stack;
    uint64_t count, bytes, first_seq;
    check_reach_found from; /* still reachable: where the first allocation was reached from */
} leak_group;

typedef struct {
    const gpumem__rec *r;
    int leak_kind;
    const check_reach_found *from;
} rec_kind;

static int same_call(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int by_group_key(const void *x, const void *y)
{
    const rec_kind *a = x, *b = y;
    if (a->leak_kind != b->leak_kind)
        return a->leak_kind - b->leak_kind;
    if (a->r->stack != b->r->stack)
        return a->r->stack < b->r->stack ? -1 : 1;
    if (a->r->kind != b->r->kind)
        return a->r->kind - b->r->kind;
    if (a->r->device != b->r->device)
        return a->r->device - b->r->device;
    int c = strcmp(a->r->site.func ? a->r->site.func : "", b->r->site.func ? b->r->site.func : "");
    if (c)
        return c;
    return a->r->seq < b->r->seq ? -1 : a->r->seq > b->r->seq;
}

static int by_bytes_desc(const void *x, const void *y)
{
    const leak_group *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->first_seq < b->first_seq ? -1 : a->first_seq > b->first_seq;
}

/* "reached: cudaMalloc 0x7f..: from 0x55..: 55..-55.. rw-p ... /path" (GPUMEM_CHECK_REACH_WHY).
 * Under out_lock (check_finish holds it). */
static void say_reached_from(const gpumem__rec *r, uintptr_t at)
{
    char line[512] = "?";
    FILE *maps = fopen("/proc/self/maps", "re");
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && at >= a && at < b)
            break;
        snprintf(line, sizeof line, "?");
    }
    if (maps)
        fclose(maps);
    line[strcspn(line, "\n")] = '\0';
    say("reached: %s %p from %p in %s", r->site.func ? r->site.func : "?",
        (void *)key_shown(r->base), (void *)at, line);
}

/* Where a still reachable allocation's reference was found, in words: "the global d_A in
 * /path/prog", "a live frame of the stack of the main thread", "a live frame of the stack of
 * thread 1234", "a thread-local variable of /path/lib.so (thread 1234)". */
static void describe_reach(const check_reach_found *f, char *buf, size_t n)
{
    const char *object = NULL, *name = NULL;
    char thread[48];
    if (f->tid == (long)getpid())
        snprintf(thread, sizeof thread, "the main thread");
    else
        snprintf(thread, sizeof thread, "thread %ld", f->tid);
    switch (f->where) {
    case CHECK_REACH_DATA:
        name = gpumem__symbol_of(f->at, &object);
        if (name)
            snprintf(buf, n, "the global %s in %s", name, object ? object : "?");
        else
            snprintf(buf, n, "the data of %s at %p (no symbol holds it)", object ? object : "?",
                     (void *)f->at);
        break;
    case CHECK_REACH_TLS:
        snprintf(buf, n, "a thread-local variable of %s (%s)",
                 f->object && *f->object ? f->object : "the program", thread);
        break;
    case CHECK_REACH_STACK:
        if (f->tid)
            snprintf(buf, n, "a live frame of the stack of %s", thread);
        else
            snprintf(buf, n, "the stack of a thread that was running (which one could not be "
                             "told)");
        break;
    default:
        snprintf(buf, n, "?");
    }
}

/* The live allocations, taken out of the registry into a mapping of their own. */
static int leak_records(rec_list *l, int *skipped)
{
    *skipped = gpumem__reg_foreach(collect_rec, l, 1);
    return l->oom ? -1 : 0;
}

/* The scan (reach.c): reached[i] and found[i] for each record. Everything of gpumem check's
 * that holds the allocations' addresses is left out. Returns the bytes read, or -1. */
static long long leak_scan(const rec_list *l, check_span *targets, unsigned char *reached,
                           check_reach_found *found)
{
    span_list skip = {0};
    for (size_t i = 0; i < l->n; i++) {
        const gpumem__rec *r = &l->r[i];
        uintptr_t shown = key_shown(r->base);
        int handle = (r->base >> 62) >= 2; /* cuMemCreate handles and arrays: the value */
        targets[i] = (check_span){shown, shown + (handle || !r->bytes ? 1 : r->bytes)};
        /* CUDA's own host memory is not read: managed memory would migrate. */
        if (r->kind == GPUMEM_KIND_PINNED || r->kind == GPUMEM_KIND_HOST ||
            r->kind == GPUMEM_KIND_MANAGED)
            add_span((const void *)r->base, r->bytes, &skip);
    }
    gpumem__reg_storage(add_span, &skip);
    add_span(l->r, l->cap * sizeof *l->r, &skip);
    add_span(targets, l->n * sizeof *targets, &skip);
    add_span(found, l->n * sizeof *found, &skip);
    add_span(findings, findings_cap * sizeof *findings, &skip);
    add_span(&skip, sizeof skip, &skip);
    add_span(skip.s, (skip.cap + 1) * sizeof *skip.s, &skip); /* +1: if this add grows it */
    add_span(skip.s, skip.cap * sizeof *skip.s, &skip);
    uintptr_t from = atomic_load(&main_frame);
    if (!from)
        from = (uintptr_t)__builtin_frame_address(0);
    long long scanned = check_reach_scan(targets, l->n, reached, found, skip.s, skip.n, from);
    munmap(skip.s, skip.cap * sizeof *skip.s);
    /* GPUMEM_CHECK_REACH_WHY=1: where each reached allocation was reached from. */
    for (size_t i = 0; check_setting_get(CHECK_SET_REACH_WHY, NULL) && i < l->n; i++)
        if (reached[i])
            say_reached_from(&l->r[i], found[i].at);
    return scanned;
}

/* Groups the records by leak kind, stack, memory kind, device and call into g; returns how
 * many groups, largest first. */
static long group_records(rec_kind *rk, size_t n, leak_group *g)
{
    if (n)
        qsort(rk, n, sizeof *rk, by_group_key);
    long ng = 0;
    for (size_t i = 0; i < n; i++) {
        const gpumem__rec *r = rk[i].r;
        leak_group *last = ng ? &g[ng - 1] : NULL;
        if (!last || last->leak_kind != rk[i].leak_kind || last->stack != r->stack ||
            last->memory != r->kind || last->device != r->device ||
            !same_call(last->call, r->site.func)) {
            g[ng++] = (leak_group){.call = r->site.func, .memory = r->kind,
                                   .leak_kind = rk[i].leak_kind, .device = r->device,
                                   .stack = r->stack, .first_seq = r->seq};
            last = &g[ng - 1];
            if (rk[i].from)
                last->from = *rk[i].from;
        }
        last->count++;
        last->bytes += r->bytes;
    }
    if (ng)
        qsort(g, (size_t)ng, sizeof *g, by_bytes_desc);
    return ng;
}

/* The live allocations, grouped by call, memory kind, stack and leak kind, largest first.
 * With scan, the process's memory is scanned for pointers into them (reach.c); without (after a
 * signal), or when the scan cannot run, every one is definitely lost (*scanned is then -1). */
static long leak_groups(int scan, leak_group **out, int *skipped, long long *scanned)
{
    rec_list l = {0};
    *out = NULL;
    *scanned = -1;
    int failed = leak_records(&l, skipped);
    size_t n = l.n;
    check_span *targets = n ? grow_mapping(NULL, 0, n * sizeof *targets) : NULL;
    check_reach_found *found = n ? grow_mapping(NULL, 0, n * sizeof *found) : NULL;
    unsigned char *reached = n ? calloc(n, 1) : NULL;
    rec_kind *rk = n ? malloc(n * sizeof *rk) : NULL;
    leak_group *g = n ? malloc(n * sizeof *g) : NULL;
    long ng = 0;
    if (n && !failed && targets && found && reached && rk && g) {
        if (scan)
            *scanned = leak_scan(&l, targets, reached, found);
        for (size_t i = 0; i < n; i++) {
            int reach = *scanned >= 0 && reached[i];
            rk[i] = (rec_kind){&l.r[i], reach ? LEAK_REACHABLE : LEAK_DEFINITE,
                               reach ? &found[i] : NULL};
        }
        ng = group_records(rk, n, g);
        *out = g;
        g = NULL;
    }
    /* rk pointed into the records: wiped with the rest of what holds addresses. */
    if (rk)
        memset(rk, 0, n * sizeof *rk);
    if (l.r)
        munmap(l.r, l.cap * sizeof *l.r);
    if (targets)
        munmap(targets, n * sizeof *targets);
    if (found)
        munmap(found, n * sizeof *found);
    free(reached), free(rk), free(g);
    return ng;
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
        say("DEVICE %d%s: %s bytes left in %llu allocation%s (%s definitely lost, %s still "
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

void check_forked(void)
{
    atomic_store(&finished, 1);
}

void check_unchecked(const char *why)
{
    check_setup();
    unchecked_why = why;
    pthread_mutex_lock(&out_lock);
    say("gpumem check: %s; this process runs unchecked", why);
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

int check__findings_trylock(const finding **list, size_t *n, long *budget)
{
    if (!gpumem__trylock_for(&findings_lock, budget))
        return 0;
    *list = findings;
    *n = nfindings;
    return 1;
}

void check__findings_unlock(void)
{
    pthread_mutex_unlock(&findings_lock);
}

void check__count_finding(int suppressed)
{
    atomic_fetch_add(suppressed ? &suppressed_count : &error_count, 1);
}

long check__suppressed_count(void)
{
    return atomic_load(&suppressed_count);
}

/* The JSON report, through the renderer the crash-time report uses too (render_json.c). */
static void write_json(const char *status, int code, const gpumem_stats_t *st,
                       const check__device_sums *dev, uint64_t leaks, uint64_t leaked_bytes)
{
    char path[4096];
    check__expand_path(check__opt.json, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
        say_both("gpumem check: error: cannot write the JSON report to %s (%s)", path,
                 strerror(errno));
        return;
    }
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    const char *code_key = strcmp(status, "exited") == 0     ? "exit_code"
                           : strcmp(status, "signaled") == 0 ? "signal"
                                                             : NULL;
    check__json_head(&o, status, code_key, code);
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

static void write_status(const char *status, int code, const gpumem_stats_t *st,
                         const check__device_sums *dev, uint64_t leaks, uint64_t leaked_bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%ld", check__opt.status, (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f) {
        say_both("gpumem check: warning: cannot write %s (%s): gpumem check's exit status will "
                 "not count this process", path, strerror(errno));
        return;
    }
    char cmd[256];
    gpumem__command_line(cmd, sizeof cmd);
    /* Read by `gpumem check` (launch.c): its exit status, and its summary of many processes. */
    fprintf(f, "errors %ld\nstatus %s\ncode %d\nleaks %llu\nleaked_bytes %llu\ncommand %s\n",
            atomic_load(&error_count), status, code, (unsigned long long)leaks,
            (unsigned long long)leaked_bytes, cmd);
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
        say(" %s referenced from %s", g->count == 1 ? "It is" : "The first of them is",
            f->reached_from);
    gen_suppression(f);
    say("%s", "");
}

/* Reports each leak group (unless suppressed) and adds them up. */
static void report_leaks(const leak_group *g, long ng, int per_device, leak_sums *s)
{
    for (long i = 0; i < ng; i++) {
        int lk = g[i].leak_kind;
        finding f = {.kind = CHECK_LEAK, .call = g[i].call ? g[i].call : "?",
                     .memory = g[i].memory, .bytes = g[i].bytes, .count = g[i].count,
                     .stack = g[i].stack, .leak_kind = lk,
                     .counted = (check__opt.error_kinds & (unsigned)lk) != 0, .device = g[i].device};
        int shown = (check__opt.show_kinds & (unsigned)lk) != 0;
        if (!shown && !f.counted) {
            add_leak(s, &g[i]); /* neither listed nor an error: only the summary counts it */
            continue;
        }
        if (g[i].from.where) {
            char text[512];
            describe_reach(&g[i].from, text, sizeof text);
            f.reached_from = strdup(text); /* kept with the finding, for the JSON */
        }
        int quiet = suppress(&f);
        keep(&f);
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
            say("LEAK SUMMARY: no CUDA memory left allocated at exit");
    } else if (check__opt.leak == LEAK_SUMMARY)
        say("   --leak-check=full shows where each was allocated");
    if (ng > 0 && scanned < 0)
        say("   (no pointer scan, it could not run: every allocation left is counted as "
            "definitely lost)");
    if (skipped)
        say("   (incomplete: %d registry shards were held by a thread)", skipped);
}

/* The leak report: each leak, the summary and, with several devices, a line for each. */
static void finish_leaks(const gpumem_stats_t *st, leak_sums *s)
{
    leak_group *g = NULL;
    int skipped = 0;
    long long scanned = -1;
    long ng = check__opt.leak == LEAK_NO ? 0 : leak_groups(1, &g, &skipped, &scanned);
    /* With more than one device, leaks name their device and each device gets a line. */
    int devices_used = 0;
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++)
        devices_used += st->device_count[d].total != 0;
    int per_device = devices_used > 1;
    memset(s, 0, sizeof *s);
    report_leaks(g, ng, per_device, s);
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

void check_finish(const char *status, int code)
{
    if (atomic_exchange(&finished, 1))
        return;
    check_setup();
    check_tls_busy++;
    if (strcmp(status, "signaled") == 0) {
        check__finish_signaled(code);
        check_tls_busy--;
        return;
    }
    int locked = pthread_mutex_lock(&out_lock) == 0;
    fflush(NULL);
    if (unchecked_why)
        status = "unchecked";
    gpumem_stats_t st;
    gpumem_stats(&st);
    leak_sums s;
    finish_leaks(&st, &s);
    uint64_t peak[GPUMEM_KIND_COUNT_] = {0};
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        peak[k] = st.count[k].total ? st.bytes[k].peak : 0;
    long errors = atomic_load(&error_count), supp = atomic_load(&suppressed_count);
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
    if (locked)
        pthread_mutex_unlock(&out_lock);
    check_tls_busy--;
}

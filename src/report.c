/* Reports of live allocations: at exit, on demand (gpumem_report), and the grouping by call
 * site that checkpoints and out-of-memory messages share.
 *
 * The exit-time report works from the registry alone and never calls CUDA: by the time
 * exit handlers run, the CUDA runtime may have torn its context down. It must not hang
 * either, also when exit() is called from a signal handler that interrupted gpumem, printf or
 * malloc: so it is async-signal-safe by construction. Registry shards are try-locked with a
 * bounded wait (one that stays busy is left out, and the report says so), the grouping lives
 * in memory of its own from mmap, sorting is an in-place heap sort, and text and JSON are
 * formatted by hand into a buffer written with write(2) to the report's own file descriptor
 * (sigsafe.h). No stdio but a try-locked flush of stdout, no malloc. The one exception is a stack not yet
 * symbolized with GPUMEM_BACKTRACE=1: symbolizing it allocates. On-demand reports take the
 * same path, with blocking locks and the caller's stream. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, fflush_unlocked */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backtrace.h"
#include "internal.h"
#include "sigsafe.h"

typedef struct {
    gpumem__group *g;
    size_t n, cap;    /* groups in g */
    size_t *index;    /* open addressing over g: index + 1, 0 empty */
    size_t index_cap; /* power of two, > 2 n */
    uint64_t min_seq;
    int oom;
    int mapped;       /* memory from mmap (signal-safe), else from malloc */
    int group;        /* 0: only count (a summary needs no groups) */
    int at_exit;      /* leave out blocks of pools a runtime owns (GPUMEM_POOL_RUNTIME_OWNED):
                         the exit report's summary; the full report lists them */
    gpumem_live live; /* counted from the same records, so totals and groups agree */
} grouping;

/* Memory of the grouping: zeroed, grown by copying. mmap is a system call, safe where
 * malloc is not (its lock may be held by the code a signal interrupted). */
static void *mem_get(const grouping *gr, size_t bytes)
{
    if (!gr->mapped)
        return calloc(1, bytes);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void mem_put(const grouping *gr, void *p, size_t bytes)
{
    if (!p)
        return;
    if (gr->mapped)
        munmap(p, bytes);
    else
        free(p);
}

static size_t group_hash(gpumem_site s, int kind, uint32_t stack, int device)
{
    uint64_t h = ((uint64_t)(uintptr_t)s.file + stack) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uintptr_t)s.func + (uint64_t)s.line * 31 + (uint64_t)kind +
          ((uint64_t)(unsigned)device << 8)) *
         0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

static int same_group(const gpumem__group *g, gpumem_site s, int kind, uint32_t stack,
                      int device)
{
    if (g->stack != stack || g->device != device)
        return 0;
    /* Sites are the caller's string literals: equal pointers, or equal text when a compiler
     * did not merge identical literals across translation units. */
    return g->kind == kind && g->site.line == s.line &&
           (g->site.file == s.file || (g->site.file && s.file && !strcmp(g->site.file, s.file))) &&
           (g->site.func == s.func || (g->site.func && s.func && !strcmp(g->site.func, s.func)));
}

static int grow_index(grouping *gr)
{
    size_t cap = gr->index_cap ? gr->index_cap * 2 : 256;
    size_t *idx = mem_get(gr, cap * sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < gr->n; i++) {
        size_t h = group_hash(gr->g[i].site, gr->g[i].kind, gr->g[i].stack, gr->g[i].device) &
                   (cap - 1);
        while (idx[h])
            h = (h + 1) & (cap - 1);
        idx[h] = i + 1;
    }
    mem_put(gr, gr->index, gr->index_cap * sizeof *idx);
    gr->index = idx;
    gr->index_cap = cap;
    return 0;
}

static int grow_groups(grouping *gr)
{
    size_t cap = gr->cap ? gr->cap * 2 : 64;
    gpumem__group *ng = mem_get(gr, cap * sizeof *ng);
    if (!ng)
        return -1;
    if (gr->n)
        memcpy(ng, gr->g, gr->n * sizeof *ng);
    mem_put(gr, gr->g, gr->cap * sizeof *ng);
    gr->g = ng;
    gr->cap = cap;
    return 0;
}

static void note_seq(gpumem__group *g, uint64_t seq)
{
    /* Keep the five smallest, ascending. count already includes this one; pos starts at the
     * slot it takes if it is the largest kept. */
    size_t pos;
    if (g->count > 5) {
        if (seq >= g->first_seq[4])
            return;
        pos = 4; /* the largest of the five drops out */
    } else {
        pos = (size_t)g->count - 1;
    }
    while (pos > 0 && g->first_seq[pos - 1] > seq) {
        g->first_seq[pos] = g->first_seq[pos - 1];
        pos--;
    }
    g->first_seq[pos] = seq;
}

static int add_record(const gpumem__rec *r, void *arg)
{
    grouping *gr = arg;
    if (r->seq <= gr->min_seq || (gr->at_exit && r->pool && gpumem__pool_runtime_owned(r->pool)))
        return 0;
    gr->live.count[r->kind]++;
    gr->live.bytes[r->kind] += r->bytes;
    if (!gr->group || gr->oom)
        return 0;
    if ((gr->n + 1) * 2 >= gr->index_cap && grow_index(gr) != 0)
        return gr->oom = 1;
    size_t h = group_hash(r->site, r->kind, r->stack, r->device) & (gr->index_cap - 1);
    while (gr->index[h] &&
           !same_group(&gr->g[gr->index[h] - 1], r->site, r->kind, r->stack, r->device))
        h = (h + 1) & (gr->index_cap - 1);
    gpumem__group *g;
    if (gr->index[h]) {
        g = &gr->g[gr->index[h] - 1];
    } else {
        if (gr->n == gr->cap && grow_groups(gr) != 0)
            return gr->oom = 1;
        g = &gr->g[gr->n++];
        memset(g, 0, sizeof *g);
        g->site = r->site;
        g->kind = r->kind;
        g->stack = r->stack;
        g->device = r->device;
        gr->index[h] = gr->n;
    }
    g->count++;
    g->bytes += r->bytes;
    note_seq(g, r->seq);
    return 0;
}

/* Largest first; equal sizes by their first allocation (sequence numbers are unique, so the
 * order is total and the same whatever the sort). */
static int before(const gpumem__group *x, const gpumem__group *y)
{
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes;
    return x->first_seq[0] < y->first_seq[0];
}

static void sift_down(gpumem__group *g, size_t i, size_t n)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            return;
        if (c + 1 < n && before(&g[c], &g[c + 1]))
            c++;
        if (!before(&g[i], &g[c]))
            return;
        gpumem__group t = g[i];
        g[i] = g[c];
        g[c] = t;
        i = c;
    }
}

/* In place and without allocation (qsort may call malloc). */
static void sort_groups(gpumem__group *g, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(g, i, n);
    for (size_t end = n; end-- > 1;) {
        gpumem__group t = g[0];
        g[0] = g[end];
        g[end] = t;
        sift_down(g, 0, end);
    }
}

static void grouping_done(grouping *gr)
{
    mem_put(gr, gr->index, gr->index_cap * sizeof *gr->index);
    mem_put(gr, gr->g, gr->cap * sizeof *gr->g);
    gr->index = NULL;
    gr->g = NULL;
}

/* Visits the live records once: counts them and, when asked, groups them. Returns the shards
 * left out (try_only), or -1 when out of memory for the groups (the counts stand). */
static int grouping_run(grouping *gr, int try_only)
{
    if (gr->group && grow_index(gr) != 0)
        gr->oom = 1;
    int skipped = gpumem__reg_foreach(add_record, gr, try_only);
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        gr->live.count[0] += gr->live.count[k];
        gr->live.bytes[0] += gr->live.bytes[k];
    }
    if (gr->n)
        sort_groups(gr->g, gr->n);
    return skipped;
}

long gpumem__group_live(uint64_t min_seq, int try_only, gpumem__group **groups, int *skipped)
{
    grouping gr;
    memset(&gr, 0, sizeof gr);
    gr.min_seq = min_seq;
    gr.group = 1;
    int sk = grouping_run(&gr, try_only);
    if (skipped)
        *skipped = sk;
    if (gr.oom) {
        grouping_done(&gr);
        return -1;
    }
    mem_put(&gr, gr.index, gr.index_cap * sizeof *gr.index);
    *groups = gr.g;
    return (long)gr.n;
}

long gpumem__group_live_mapped(gpumem__group **groups, size_t *map_bytes, int *skipped)
{
    grouping gr;
    memset(&gr, 0, sizeof gr);
    gr.mapped = 1;
    gr.group = 1;
    *skipped = grouping_run(&gr, 1);
    if (gr.oom) {
        grouping_done(&gr);
        return -1;
    }
    mem_put(&gr, gr.index, gr.index_cap * sizeof *gr.index);
    *groups = gr.g;
    *map_bytes = gr.cap * sizeof *gr.g;
    return (long)gr.n;
}

void gpumem__group_unmap(gpumem__group *groups, size_t map_bytes)
{
    if (groups)
        munmap(groups, map_bytes);
}

/* ---- text ---- */

static void write_summary(gpumem__sink *o, const gpumem_live *live, int at_exit,
                          const char *tail, long sites)
{
    char total[32];
    gpumem__sink_str(o, "gpumem: ");
    gpumem__sink_u64(o, live->count[0]);
    gpumem__sink_str(o, live->count[0] == 1 ? " allocation (" : " allocations (");
    gpumem__sink_str(o, gpumem_format_bytes(live->bytes[0], total, sizeof total));
    gpumem__sink_str(o, ") still live");
    if (at_exit)
        gpumem__sink_str(o, " at exit");
    if (sites >= 0) {
        gpumem__sink_str(o, ", from ");
        gpumem__sink_i64(o, sites);
        gpumem__sink_str(o, sites == 1 ? " call site:" : " call sites:");
    }
    gpumem__sink_str(o, tail);
    gpumem__sink_str(o, "\n");
}

/* Whether the groups are on more than one device (then each line names its device). */
static int several_devices(const gpumem__group *g, long n)
{
    for (long i = 1; i < n; i++)
        if (g[i].device != g[0].device)
            return 1;
    return 0;
}

static void write_groups_text(gpumem__sink *o, const gpumem__group *g, long n)
{
    int name_device = several_devices(g, n);
    for (long i = 0; i < n; i++) {
        char size[32];
        gpumem__sink_str(o, "  ");
        gpumem__sink_pad(o, gpumem_format_bytes(g[i].bytes, size, sizeof size), 10);
        gpumem__sink_str(o, " in ");
        gpumem__sink_u64(o, g[i].count);
        gpumem__sink_str(o, " ");
        gpumem__sink_str(o, gpumem_kind_name(g[i].kind));
        gpumem__sink_str(o, g[i].count == 1 ? " allocation " : " allocations ");
        if (name_device) {
            gpumem__sink_str(o, "on device ");
            gpumem__sink_i64(o, g[i].device);
            gpumem__sink_str(o, " ");
        }
        gpumem__sink_str(o, "at ");
        gpumem__sink_site(o, g[i].site);
        gpumem__sink_str(o, ": #");
        size_t shown = g[i].count < 5 ? (size_t)g[i].count : 5;
        for (size_t k = 0; k < shown; k++) {
            if (k)
                gpumem__sink_str(o, ", #");
            gpumem__sink_u64(o, g[i].first_seq[k]);
        }
        gpumem__sink_str(o, g[i].count > 5 ? ", ...\n" : "\n");
        gpumem__sink_stack(o, g[i].stack, "      ", 0);
    }
}

static void write_incomplete(gpumem__sink *o, int skipped, const char *indent)
{
    gpumem__sink_str(o, indent);
    gpumem__sink_str(o, "gpumem: report incomplete: ");
    gpumem__sink_i64(o, skipped);
    gpumem__sink_str(o, skipped == 1 ? " registry shard" : " registry shards");
    gpumem__sink_str(o, " busy (held by a thread inside gpumem); their allocations are not "
                        "counted\n");
}

/* ---- JSON (schema gpumem.report, version 1), laid out as jansson's JSON_INDENT(2) ---- */

static void json_key(gpumem__sink *o, int depth, const char *key, int *first)
{
    gpumem__sink_str(o, *first ? "\n" : ",\n");
    *first = 0;
    for (int i = 0; i < depth; i++)
        gpumem__sink_str(o, "  ");
    if (key) {
        gpumem__sink_json_str(o, key);
        gpumem__sink_str(o, ": ");
    }
}

static void json_close(gpumem__sink *o, int depth, int empty, const char *bracket)
{
    if (!empty) {
        gpumem__sink_str(o, "\n");
        for (int i = 0; i < depth; i++)
            gpumem__sink_str(o, "  ");
    }
    gpumem__sink_str(o, bracket);
}

/* A site's stack as JSON frames (the value of its "stack" key). */
static void write_json_stack(gpumem__sink *o, uint32_t stack)
{
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int nf = gpumem__stack_frames(stack, frames, GPUMEM__STACK_MAX_FRAMES);
    gpumem__sink_str(o, "[");
    int ffirst = 1;
    for (int k = 0; k < nf; k++) {
        json_key(o, 4, NULL, &ffirst);
        int ff = 1;
        gpumem__sink_str(o, "{");
        json_key(o, 5, "function", &ff);
        gpumem__sink_json_str(o, frames[k].func);
        json_key(o, 5, "file", &ff);
        gpumem__sink_json_str(o, frames[k].file);
        json_key(o, 5, "line", &ff);
        gpumem__sink_i64(o, frames[k].line);
        json_close(o, 4, 0, "}");
    }
    json_close(o, 3, ffirst, "]");
}

/* One call site's live allocations, an element of "sites". */
static void write_json_site(gpumem__sink *o, const gpumem__group *g)
{
    int f = 1;
    gpumem__sink_str(o, "{");
    json_key(o, 3, "file", &f);
    gpumem__sink_json_str(o, g->site.file);
    json_key(o, 3, "line", &f);
    gpumem__sink_i64(o, g->site.line);
    json_key(o, 3, "function", &f);
    gpumem__sink_json_str(o, g->site.func);
    json_key(o, 3, "kind", &f);
    gpumem__sink_json_str(o, gpumem_kind_name(g->kind));
    json_key(o, 3, "device", &f);
    gpumem__sink_i64(o, g->device);
    json_key(o, 3, "count", &f);
    gpumem__sink_u64(o, g->count);
    json_key(o, 3, "bytes", &f);
    gpumem__sink_u64(o, g->bytes);
    json_key(o, 3, "first_seq", &f);
    gpumem__sink_str(o, "[");
    int qfirst = 1;
    size_t shown = g->count < 5 ? (size_t)g->count : 5;
    for (size_t k = 0; k < shown; k++) {
        json_key(o, 4, NULL, &qfirst);
        gpumem__sink_u64(o, g->first_seq[k]);
    }
    json_close(o, 3, qfirst, "]");
    if (g->stack) {
        json_key(o, 3, "stack", &f);
        write_json_stack(o, g->stack);
    }
    json_close(o, 2, 0, "}");
}

static void write_json(gpumem__sink *o, const gpumem_live *live, const gpumem__group *g, long n,
                       int skipped, const char *when)
{
    int first = 1;
    gpumem__sink_str(o, "{");
    json_key(o, 1, "schema", &first);
    gpumem__sink_json_str(o, "gpumem.report");
    json_key(o, 1, "version", &first);
    gpumem__sink_str(o, "1");
    json_key(o, 1, "when", &first);
    gpumem__sink_json_str(o, when);
    json_key(o, 1, "pid", &first);
    gpumem__sink_i64(o, (int64_t)getpid());
    json_key(o, 1, "live_allocations", &first);
    gpumem__sink_u64(o, live->count[0]);
    json_key(o, 1, "live_bytes", &first);
    gpumem__sink_u64(o, live->bytes[0]);
    json_key(o, 1, "by_kind", &first);
    gpumem__sink_str(o, "{");
    int kfirst = 1;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        if (!live->count[k])
            continue;
        json_key(o, 2, gpumem_kind_name(k), &kfirst);
        int vfirst = 1;
        gpumem__sink_str(o, "{");
        json_key(o, 3, "count", &vfirst);
        gpumem__sink_u64(o, live->count[k]);
        json_key(o, 3, "bytes", &vfirst);
        gpumem__sink_u64(o, live->bytes[k]);
        json_close(o, 2, 0, "}");
    }
    json_close(o, 1, kfirst, "}");
    json_key(o, 1, "sites", &first);
    gpumem__sink_str(o, "[");
    int sfirst = 1;
    for (long i = 0; i < n; i++) {
        json_key(o, 2, NULL, &sfirst);
        write_json_site(o, &g[i]);
    }
    json_close(o, 1, sfirst, "]");
    json_key(o, 1, "complete", &first);
    gpumem__sink_str(o, skipped ? "false" : "true");
    if (skipped) {
        json_key(o, 1, "busy_shards", &first);
        gpumem__sink_i64(o, skipped);
    }
    json_close(o, 0, 0, "}\n");
}

/* At exit, a child made by fork() reports only its own allocations: those it inherited are
 * its parent's to release and to report (fork.c). The largest sequence number to leave out. */
static uint64_t inherited_below(void)
{
    uint64_t first_own = gpumem__fork_inherited_seq();
    return first_own ? first_own - 1 : 0;
}

/* The one report both paths print. Returns the live count, or a negative status. With
 * try_only the registry is read without waiting long and the grouping uses mmap: the exit
 * path, which may run in a signal handler. */
static int report(gpumem__sink *o, unsigned flags, int try_only, const char *when)
{
    grouping gr;
    memset(&gr, 0, sizeof gr);
    gr.mapped = try_only;
    gr.group = (flags & (GPUMEM_REPORT_FULL | GPUMEM_REPORT_JSON)) != 0;
    gr.min_seq = strcmp(when, "exit") == 0 ? inherited_below() : 0;
    gr.at_exit = strcmp(when, "exit") == 0 && !(flags & GPUMEM_REPORT_FULL);
    int skipped = grouping_run(&gr, try_only);
    const gpumem_live *live = &gr.live;
    int oom = gr.oom;
    long n = oom ? 0 : (long)gr.n;
    int rc = oom ? GPUMEM_ENOMEM : (int)live->count[0];
    if (flags & GPUMEM_REPORT_JSON) {
        write_json(o, live, gr.g, n, skipped, when);
    } else if (live->count[0] || skipped) {
        int at_exit = strcmp(when, "exit") == 0;
        if (!gr.group || oom) {
            write_summary(o, live, at_exit,
                          (flags & GPUMEM_REPORT_FULL)
                              ? "; out of host memory to group them by call site"
                              : "; GPUMEM_LEAK_REPORT=full shows where",
                          -1);
        } else {
            write_summary(o, live, at_exit, "", n);
            write_groups_text(o, gr.g, n);
        }
        if (skipped)
            write_incomplete(o, skipped, gr.group && !oom ? "  " : "");
    }
    grouping_done(&gr);
    return rc;
}

int gpumem_report(FILE *out, unsigned flags)
{
    if (!out)
        return GPUMEM_EINVAL;
    gpumem__init_once();
    gpumem__sink o;
    gpumem__sink_file(&o, out);
    int rc = report(&o, flags, 0, "on demand");
    int written = gpumem__err_stream(out, gpumem__sink_flush(&o), "gpumem_report");
    return written != GPUMEM_OK ? written : rc;
}

/* A few errno values in words: strerror may consult the locale and allocate. */
static const char *errno_words(int e)
{
    switch (e) {
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EFBIG: return "file too large";
    case EIO: return "input/output error";
    case EPIPE: return "broken pipe";
    case EBADF: return "bad file descriptor";
    case EACCES: return "permission denied";
    case ENOENT: return "no such file or directory";
    case EROFS: return "read-only file system";
    case EISDIR: return "is a directory";
    case ENXIO: return "a FIFO that no process reads";
    case EAGAIN: return "its reader took nothing for 2 s";
    case EBUSY: return "in use by another process";
    default: return NULL;
    }
}

static void sink_errno(gpumem__sink *o, int e)
{
    const char *w = errno_words(e);
    if (w) {
        gpumem__sink_str(o, w);
    } else {
        gpumem__sink_str(o, "errno ");
        gpumem__sink_i64(o, e);
    }
}

/* Who set the exit report up, and when: a process with another pid is a child made by fork()
 * without exec; a report file written since then was written by another process of this run. */
static long setup_pid;
static struct timespec setup_time;

/* "cannot write the report to PATH (WHY, else errno e's words); writing it WHERE", and a hint
 * line when hint is not NULL. */
static void warn_report_file(const char *path, const char *why, int e, const char *where,
                             const char *hint)
{
    gpumem__sink w;
    gpumem__sink_fd(&w, STDERR_FILENO);
    gpumem__sink_str(&w, "gpumem: warning: cannot write the report to ");
    gpumem__sink_visible(&w, path);
    gpumem__sink_str(&w, " (");
    if (why)
        gpumem__sink_str(&w, why);
    else
        sink_errno(&w, e);
    gpumem__sink_str(&w, "); writing it ");
    gpumem__sink_str(&w, where);
    gpumem__sink_str(&w, "\n");
    if (hint) {
        gpumem__sink_str(&w, "  hint: ");
        gpumem__sink_str(&w, hint);
        gpumem__sink_str(&w, "\n");
    }
    gpumem__sink_flush(&w);
}

/* Whether the regular file f is another process's report: locked by it now, or written since
 * this process set its report up. Otherwise f stays locked by this process until closed. */
static int report_of_another(int f, const struct stat *st)
{
    if (flock(f, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK)
        return 1;
    const struct timespec *m = &st->st_mtim, *t = &setup_time;
    return st->st_size > 0 &&
           (m->tv_sec > t->tv_sec || (m->tv_sec == t->tv_sec && m->tv_nsec >= t->tv_nsec));
}

/* Opens path for the report without blocking: a FIFO needs a reader (ENXIO otherwise), and
 * stays non-blocking (the sink waits a bounded time for it). With mine_only, a regular file
 * that is another process's report is left alone: -2. Else the descriptor, or -1 with errno. */
static int open_report_path(const char *path, int mine_only)
{
    int f;
    do
        f = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
    while (f < 0 && errno == EINTR);
    struct stat st;
    if (f < 0 || fstat(f, &st) != 0 || !S_ISREG(st.st_mode))
        return f;
    if (mine_only && report_of_another(f, &st)) {
        close(f);
        return -2;
    }
    if (ftruncate(f, 0) != 0) {
        int e = errno;
        close(f);
        errno = e;
        return -1;
    }
    return f;
}

/* GPUMEM_REPORT_FILE with %p replaced by the process id, opened with open(2); -1 means the
 * report goes to stderr (said there when the file could not be opened). Without %p, each
 * process of a run keeps its own report: a child made by fork() writes PATH.PID, and so does a
 * process that finds PATH written by another since it started (said on stderr). */
static int open_report_file(char *path, size_t cap)
{
    const char *pattern = gpumem__opt_str(GPUMEM__OPT_REPORT_FILE);
    if (!*pattern)
        return -1;
    long me = (long)getpid();
    int child = me != setup_pid;
    if (gpumem__path_expand(pattern, me, child, path, cap) >= cap) {
        warn_report_file("GPUMEM_REPORT_FILE", "the name is longer than a path may be, with %p "
                         "replaced", 0, "here", "choose a shorter name");
        return -1;
    }
    int fd = open_report_path(path, !strstr(pattern, "%p") && !child);
    if (fd == -2) {
        char shared[4096];
        memcpy(shared, path, strlen(path) + 1);
        if (gpumem__path_expand(pattern, me, 1, path, cap) >= cap) {
            warn_report_file(shared, "another process wrote its report there, and the name "
                             "with .PID is longer than a path may be", 0, "here",
                             "choose a shorter name");
            return -1;
        }
        fd = open_report_path(path, 0);
        if (fd >= 0)
            warn_report_file(shared, "another process wrote its report there", 0, path,
                             "put %p in GPUMEM_REPORT_FILE to give each process a file of its "
                             "own");
    }
    if (fd < 0)
        warn_report_file(path, NULL, fd == -2 ? EBUSY : errno, "here", NULL);
    return fd;
}

static atomic_int exit_report_off;
static atomic_int exit_report_done;
static atomic_int leak_exitcode; /* GPUMEM_LEAK_EXITCODE when it is 1 to 255, else 0 */

void gpumem__report_at_exit_disable(void)
{
    atomic_store(&exit_report_off, 1);
}

/* The program's buffered standard output first, so that the report comes after what was
 * written before it. Only when its lock is free: a thread stopped inside printf holds it, and
 * fflush would wait for ever. (When the signal interrupted printf on this very thread, the
 * lock is this thread's and the flush goes ahead: a line may then be written twice, never
 * waited for.) fflush(NULL) is not safe at all: it takes the lock of every stream. */
static void flush_stdout(void)
{
    if (ftrylockfile(stdout) != 0)
        return;
    fflush_unlocked(stdout);
    funlockfile(stdout);
}

/* Runs in an exit handler, possibly inside a signal handler: async-signal-safe (see the top
 * of this file), but for flush_stdout's one stream. */
static void report_at_exit(void)
{
    if (atomic_load(&exit_report_off) || atomic_exchange(&exit_report_done, 1))
        return;
    const char *mode = gpumem__opt_str(GPUMEM__OPT_LEAK_REPORT);
    if (strcmp(mode, "off") == 0)
        return;
    unsigned flags = strcmp(mode, "full") == 0 ? GPUMEM_REPORT_FULL : GPUMEM_REPORT_SUMMARY;
    if (strcmp(gpumem__opt_str(GPUMEM__OPT_REPORT_FORMAT), "json") == 0)
        flags |= GPUMEM_REPORT_JSON;
    /* A clean process writes nothing, not even an empty report file: count first. */
    grouping probe;
    memset(&probe, 0, sizeof probe);
    probe.min_seq = inherited_below();
    probe.at_exit = !(flags & GPUMEM_REPORT_FULL);
    int busy = grouping_run(&probe, 1);
    if (!probe.live.count[0] && !busy)
        return;
    flush_stdout();
    char path[4096];
    int fd = open_report_file(path, sizeof path);
    gpumem__sink o;
    gpumem__sink_fd(&o, fd >= 0 ? fd : STDERR_FILENO);
    int live = report(&o, flags, 1, "exit");
    int e = gpumem__sink_flush(&o);
    if (fd >= 0 && close(fd) != 0 && !e && errno != EINTR)
        e = errno;
    if (e) {
        gpumem__sink w;
        gpumem__sink_fd(&w, STDERR_FILENO);
        gpumem__sink_str(&w, "gpumem: error: the exit report was not written completely to ");
        gpumem__sink_visible(&w, fd >= 0 ? path : "stderr");
        gpumem__sink_str(&w, " (");
        sink_errno(&w, e);
        gpumem__sink_str(&w, "); it would have said: ");
        gpumem__sink_u64(&w, probe.live.count[0]);
        gpumem__sink_str(&w, probe.live.count[0] == 1 ? " allocation" : " allocations");
        gpumem__sink_str(&w, " still live at exit\n");
        gpumem__sink_flush(&w);
    }
    int code = atomic_load(&leak_exitcode);
    if (code && live > 0) {
#ifdef __GLIBC__
        /* glibc lets an exit handler call exit again: the handlers not run yet still run (the
         * program's own, C++ destructors, the dynamic linker's destructors, coverage output),
         * and the process ends with the new status. */
        exit(code);
#else
        _exit(code); /* elsewhere that is undefined: end here, as asked */
#endif
    }
}

void gpumem__report_at_exit_setup(void)
{
    uint64_t code = gpumem__opt_u64(GPUMEM__OPT_LEAK_EXITCODE);
    if (code > 255) {
        fprintf(stderr, "gpumem: warning: GPUMEM_LEAK_EXITCODE=%s is not an exit status (1 to "
                        "255; the system keeps only the low 8 bits, so %llu would read as %llu); "
                        "a leak leaves the exit status alone\n",
                gpumem__opt_str(GPUMEM__OPT_LEAK_EXITCODE), (unsigned long long)code,
                (unsigned long long)(code & 0xff));
        code = 0;
    }
    atomic_store(&leak_exitcode, (int)code);
    setup_pid = (long)getpid();
    clock_gettime(CLOCK_REALTIME, &setup_time);
    atexit(report_at_exit);
}

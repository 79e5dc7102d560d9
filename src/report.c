/* Reports of live allocations: at exit, on demand (gpumem_report), and the grouping by call
 * site that checkpoints and out-of-memory messages share.
 *
 * The exit-time report works from the registry alone and never calls CUDA: by the time
 * exit handlers run, the CUDA runtime may have torn its context down. It must not hang
 * either, so it skips registry shards that another thread holds locked and says so. JSON goes
 * through jansson when gpumem was built with it. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GPUMEM_HAVE_JANSSON
#include <jansson.h>
#endif

#include "backtrace.h"
#include "internal.h"

typedef struct {
    gpumem__group *g;
    size_t n, cap;    /* groups in g */
    size_t *index;    /* open addressing over g: index + 1, 0 empty */
    size_t index_cap; /* power of two, > 2 n */
    uint64_t min_seq;
    int oom;
} grouping;

static size_t group_hash(gpumem_site s, int kind, uint32_t stack)
{
    uint64_t h = ((uint64_t)(uintptr_t)s.file + stack) * 0x9E3779B97F4A7C15ull;
    h ^= ((uint64_t)(uintptr_t)s.func + (uint64_t)s.line * 31 + (uint64_t)kind) *
         0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29));
}

static int same_group(const gpumem__group *g, gpumem_site s, int kind, uint32_t stack)
{
    if (g->stack != stack)
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
    size_t *idx = calloc(cap, sizeof *idx);
    if (!idx)
        return -1;
    for (size_t i = 0; i < gr->n; i++) {
        size_t h = group_hash(gr->g[i].site, gr->g[i].kind, gr->g[i].stack) & (cap - 1);
        while (idx[h])
            h = (h + 1) & (cap - 1);
        idx[h] = i + 1;
    }
    free(gr->index);
    gr->index = idx;
    gr->index_cap = cap;
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
    if (r->seq <= gr->min_seq)
        return 0;
    if ((gr->n + 1) * 2 >= gr->index_cap && grow_index(gr) != 0)
        return gr->oom = 1;
    size_t h = group_hash(r->site, r->kind, r->stack) & (gr->index_cap - 1);
    while (gr->index[h] && !same_group(&gr->g[gr->index[h] - 1], r->site, r->kind, r->stack))
        h = (h + 1) & (gr->index_cap - 1);
    gpumem__group *g;
    if (gr->index[h]) {
        g = &gr->g[gr->index[h] - 1];
    } else {
        if (gr->n == gr->cap) {
            size_t cap = gr->cap ? gr->cap * 2 : 64;
            gpumem__group *ng = realloc(gr->g, cap * sizeof *ng);
            if (!ng)
                return gr->oom = 1;
            gr->g = ng;
            gr->cap = cap;
        }
        g = &gr->g[gr->n++];
        memset(g, 0, sizeof *g);
        g->site = r->site;
        g->kind = r->kind;
        g->stack = r->stack;
        gr->index[h] = gr->n;
    }
    g->count++;
    g->bytes += r->bytes;
    note_seq(g, r->seq);
    return 0;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const gpumem__group *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return x->first_seq[0] < y->first_seq[0] ? -1 : x->first_seq[0] > y->first_seq[0];
}

long gpumem__group_live(uint64_t min_seq, int try_only, gpumem__group **groups, int *skipped)
{
    grouping gr = {NULL, 0, 0, NULL, 0, min_seq, 0};
    if (grow_index(&gr) != 0)
        return -1;
    int sk = gpumem__reg_foreach(add_record, &gr, try_only);
    free(gr.index);
    if (skipped)
        *skipped = sk;
    if (gr.oom) {
        free(gr.g);
        return -1;
    }
    if (gr.n)
        qsort(gr.g, gr.n, sizeof *gr.g, by_bytes_desc);
    *groups = gr.g;
    return (long)gr.n;
}

/* ---- text ---- */

static void write_summary(FILE *out, const gpumem_live *live, int at_exit, const char *tail)
{
    char total[32];
    fprintf(out, "gpumem: %llu allocation%s (%s) still live%s%s\n",
            (unsigned long long)live->count[0], live->count[0] == 1 ? "" : "s",
            gpumem_format_bytes(live->bytes[0], total, sizeof total), at_exit ? " at exit" : "",
            tail);
}

static void write_groups_text(FILE *out, const gpumem__group *g, long n)
{
    for (long i = 0; i < n; i++) {
        char size[32], where[256];
        fprintf(out, "  %10s in %llu %s allocation%s at %s: #", gpumem_format_bytes(g[i].bytes, size, sizeof size),
                (unsigned long long)g[i].count, gpumem_kind_name(g[i].kind),
                g[i].count == 1 ? "" : "s", gpumem__site_str(g[i].site, where, sizeof where));
        size_t shown = g[i].count < 5 ? (size_t)g[i].count : 5;
        for (size_t k = 0; k < shown; k++)
            fprintf(out, "%s%llu", k ? ", #" : "", (unsigned long long)g[i].first_seq[k]);
        fprintf(out, "%s\n", g[i].count > 5 ? ", ..." : "");
        gpumem__stack_print(g[i].stack, out, "      ");
    }
}

#ifdef GPUMEM_HAVE_JANSSON
static int write_json(FILE *out, const gpumem_live *live, const gpumem__group *g, long n,
                      int skipped, const char *when)
{
    json_t *root = json_object();
    json_t *kinds = json_object();
    json_t *arr = json_array();
    if (!root || !kinds || !arr) {
        json_decref(root);
        json_decref(kinds);
        json_decref(arr);
        return -1;
    }
    json_object_set_new(root, "schema", json_string("gpumem.report"));
    json_object_set_new(root, "version", json_integer(1));
    json_object_set_new(root, "when", json_string(when));
    json_object_set_new(root, "pid", json_integer((json_int_t)getpid()));
    json_object_set_new(root, "live_allocations", json_integer((json_int_t)live->count[0]));
    json_object_set_new(root, "live_bytes", json_integer((json_int_t)live->bytes[0]));
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        if (!live->count[k])
            continue;
        json_t *kv = json_object();
        json_object_set_new(kv, "count", json_integer((json_int_t)live->count[k]));
        json_object_set_new(kv, "bytes", json_integer((json_int_t)live->bytes[k]));
        json_object_set_new(kinds, gpumem_kind_name(k), kv);
    }
    json_object_set_new(root, "by_kind", kinds);
    for (long i = 0; i < n; i++) {
        json_t *o = json_object();
        json_t *seqs = json_array();
        size_t shown = g[i].count < 5 ? (size_t)g[i].count : 5;
        for (size_t k = 0; k < shown; k++)
            json_array_append_new(seqs, json_integer((json_int_t)g[i].first_seq[k]));
        json_object_set_new(o, "file", g[i].site.file ? json_string(g[i].site.file) : json_null());
        json_object_set_new(o, "line", json_integer(g[i].site.line));
        json_object_set_new(o, "function", g[i].site.func ? json_string(g[i].site.func) : json_null());
        json_object_set_new(o, "kind", json_string(gpumem_kind_name(g[i].kind)));
        json_object_set_new(o, "count", json_integer((json_int_t)g[i].count));
        json_object_set_new(o, "bytes", json_integer((json_int_t)g[i].bytes));
        json_object_set_new(o, "first_seq", seqs);
        if (g[i].stack) {
            gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
            int nf = gpumem__stack_frames(g[i].stack, frames, GPUMEM__STACK_MAX_FRAMES);
            json_t *st = json_array();
            for (int f = 0; f < nf; f++) {
                json_t *fr = json_object();
                json_object_set_new(fr, "function", json_string(frames[f].func));
                json_object_set_new(fr, "file",
                                    frames[f].file ? json_string(frames[f].file) : json_null());
                json_object_set_new(fr, "line", json_integer(frames[f].line));
                json_array_append_new(st, fr);
            }
            json_object_set_new(o, "stack", st);
        }
        json_array_append_new(arr, o);
    }
    json_object_set_new(root, "sites", arr);
    json_object_set_new(root, "complete", json_boolean(skipped == 0));
    int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(root);
    return rc;
}
#endif

/* The one report both paths print. Returns the live count, or a negative status. */
static int report(FILE *out, unsigned flags, int try_only, const char *when)
{
    gpumem_live live;
    gpumem__reg_live(&live);
    gpumem__group *g = NULL;
    int skipped = 0;
    long n = 0;
    int want_groups = (flags & (GPUMEM_REPORT_FULL | GPUMEM_REPORT_JSON)) && live.count[0];
    if (want_groups)
        n = gpumem__group_live(0, try_only, &g, &skipped);
#ifdef GPUMEM_HAVE_JANSSON
    if (flags & GPUMEM_REPORT_JSON) {
        int rc = n < 0 ? -1 : write_json(out, &live, g, n, skipped, when);
        free(g);
        return rc == 0 ? (int)live.count[0] : GPUMEM_ENOMEM;
    }
#else
    if (flags & GPUMEM_REPORT_JSON)
        fprintf(out, "gpumem: warning: JSON reports need gpumem built with jansson "
                     "(libjansson-dev); writing text\n");
#endif
    int at_exit = strcmp(when, "exit") == 0;
    if (!live.count[0]) {
        free(g);
        return 0;
    }
    if (!want_groups || n < 0) {
        write_summary(out, &live, at_exit, (flags & GPUMEM_REPORT_FULL)
                                      ? "; out of host memory to group them by call site"
                                      : "; GPUMEM_LEAK_REPORT=full shows where");
        free(g);
        return n < 0 ? GPUMEM_ENOMEM : (int)live.count[0];
    }
    char tail[64];
    snprintf(tail, sizeof tail, ", from %ld call site%s:", n, n == 1 ? "" : "s");
    write_summary(out, &live, at_exit, tail);
    write_groups_text(out, g, n);
    if (skipped)
        fprintf(out, "  (incomplete: %d registry shards were locked by a thread still inside "
                     "gpumem)\n",
                skipped);
    free(g);
    return (int)live.count[0];
}

int gpumem_report(FILE *out, unsigned flags)
{
    if (!out)
        return GPUMEM_EINVAL;
    gpumem__init_once();
    return report(out, flags, 0, "on demand");
}

/* GPUMEM_REPORT_FILE with %p replaced by the process id; NULL means stderr. */
static FILE *open_report_file(int *opened)
{
    const char *pattern = gpumem__opt_str(GPUMEM__OPT_REPORT_FILE);
    *opened = 0;
    if (!*pattern)
        return stderr;
    char path[4096];
    size_t o = 0;
    for (const char *c = pattern; *c && o + 24 < sizeof path; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof path - o, "%ld", (long)getpid());
            c++;
        } else {
            path[o++] = *c;
        }
    }
    path[o] = '\0';
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "gpumem: warning: cannot write the report to %s; writing it here\n",
                path);
        return stderr;
    }
    *opened = 1;
    return f;
}

static atomic_int exit_report_off;

void gpumem__report_at_exit_disable(void)
{
    atomic_store(&exit_report_off, 1);
}

static void report_at_exit(void)
{
    if (atomic_load(&exit_report_off))
        return;
    const char *mode = gpumem__opt_str(GPUMEM__OPT_LEAK_REPORT);
    gpumem_live live;
    gpumem__reg_live(&live);
    if (!live.count[0] || strcmp(mode, "off") == 0)
        return;
    fflush(NULL); /* the program's own buffered output comes first, as it was written first */
    unsigned flags = strcmp(mode, "full") == 0 ? GPUMEM_REPORT_FULL : GPUMEM_REPORT_SUMMARY;
    if (strcmp(gpumem__opt_str(GPUMEM__OPT_REPORT_FORMAT), "json") == 0)
        flags |= GPUMEM_REPORT_JSON;
    int opened;
    FILE *out = open_report_file(&opened);
    report(out, flags, 1, "exit");
    if (opened)
        fclose(out);
    else
        fflush(out);
    uint64_t code = gpumem__opt_u64(GPUMEM__OPT_LEAK_EXITCODE);
    if (code) {
        /* exit() may not be called again from an exit handler; flush and leave as asked. */
        fflush(NULL);
        _exit((int)(code & 0xff));
    }
}

void gpumem__report_at_exit_setup(void)
{
    atexit(report_at_exit);
}

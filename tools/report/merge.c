/* `gpumem report --merge`: the reports and traces of every process of a job as one.
 *
 * A job's ranks each write their own JSON report (gpumem check --json=check.%r.json) and trace
 * (--trace=trace.%r.json). Reports are merged into one line per rank, worst first, and one
 * entry per finding, the same finding of several ranks shown once with its ranks: the same
 * kind, call, memory kind and innermost frames (file and line, else function and module), as
 * a leak of one line of the training script is the same bug in every rank that runs it.
 * Traces are merged into one trace, loadable where each is (Perfetto, gpumem report --html):
 * each rank is a process of its own (its rank as its pid), with its times moved onto one clock
 * (the wall clock each trace notes beside its monotonic start, so that ranks of different
 * machines line up as far as their clocks agree), its allocation and stack ids made unique. */
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpumem.h"
#include "tool.h"

static void merge_usage(FILE *out)
{
    fprintf(out,
            "usage: gpumem report --merge [--json=OUT.json] [-o OUT_TRACE.json] FILE...\n"
            "\n"
            "Merges what the processes of one job wrote: the JSON reports of gpumem check\n"
            "(--json=check.%%r.json) into one report, a line per rank with the worst first and\n"
            "each finding once with the ranks that had it; and their traces (--trace), if any\n"
            "are given, into one trace (-o) whose ranks share one clock, for Perfetto or\n"
            "gpumem report --html. Files are told apart by their contents.\n"
            "\n"
            "options (each as --opt VALUE or --opt=VALUE):\n"
            "  --json=FILE         also write the merged report as JSON (schema\n"
            "                      gpumem-check-merged/1)\n"
            "  -o, --output=FILE   where the merged trace goes (required when traces are given)\n"
            "  -h, --help, --version\n"
            "\n"
            "exit status: 0 no errors in any rank; 3 errors in some rank; 1 a file cannot be\n"
            "read or written; 2 usage error.\n");
}

/* ---- reports ---- */

typedef struct {
    const char *path;
    json_t *doc;
    long rank; /* -1: none */
    long long pid, errors, leaked_bytes;
} rank_report;

typedef struct {
    json_t *finding; /* the first rank's */
    char key[1024];
    long *ranks;
    size_t nranks;
    uint64_t bytes_min, bytes_max, bytes_sum, count;
} merged_finding;

static long long num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* The frames that make two ranks' findings the same bug: the first three with a file (a
 * program's own), else the first three. */
static void frames_key(json_t *stack, char *buf, size_t n)
{
    size_t o = 0, with_file = 0, i;
    json_t *fr;
    json_array_foreach(stack, i, fr) if (*str(fr, "file")) with_file++;
    int taken = 0;
    json_array_foreach(stack, i, fr)
    {
        if (taken == 3 || o + 2 >= n)
            break;
        if (with_file && !*str(fr, "file"))
            continue;
        int w = with_file ? snprintf(buf + o, n - o, "|%s:%lld", str(fr, "file"), num(fr, "line"))
                          : snprintf(buf + o, n - o, "|%s@%s", str(fr, "function"), str(fr, "module"));
        o += w > 0 ? (size_t)w : 0;
        if (o >= n)
            o = n - 1;
        taken++;
    }
    buf[o] = '\0';
}

static void finding_key(json_t *f, char *buf, size_t n)
{
    const char *kind = str(f, "kind");
    int leak = strcmp(kind, "leak") == 0;
    char frames[700];
    frames_key(json_object_get(f, leak ? "alloc_stack" : "stack"), frames, sizeof frames);
    snprintf(buf, n, "%s|%s|%s|%s|%s", kind, leak ? str(f, "alloc_call") : str(f, "call"),
             str(f, "memory"), str(f, "error"), frames);
}

/* Whether f is an error of its rank: not suppressed, not a leak or note that is no error. */
static int is_error(json_t *f)
{
    return !json_object_get(f, "suppressed") && json_object_get(f, "error") != json_false() &&
           !json_is_true(json_object_get(f, "note"));
}

typedef struct {
    rank_report *ranks;
    size_t nranks;
    merged_finding *found;
    size_t nfound, found_cap;
} merge_state;

static int add_finding(merge_state *m, json_t *f, long rank)
{
    char key[1024];
    finding_key(f, key, sizeof key);
    merged_finding *g = NULL;
    for (size_t i = 0; i < m->nfound && !g; i++)
        if (strcmp(m->found[i].key, key) == 0)
            g = &m->found[i];
    if (!g) {
        if (m->nfound == m->found_cap) {
            size_t cap = m->found_cap ? m->found_cap * 2 : 16;
            merged_finding *grown = realloc(m->found, cap * sizeof *grown);
            if (!grown)
                return -1;
            m->found = grown;
            m->found_cap = cap;
        }
        g = &m->found[m->nfound++];
        memset(g, 0, sizeof *g);
        g->finding = f;
        snprintf(g->key, sizeof g->key, "%s", key);
        g->bytes_min = UINT64_MAX;
    }
    long *grown = realloc(g->ranks, (g->nranks + 1) * sizeof *grown);
    if (!grown)
        return -1;
    g->ranks = grown;
    g->ranks[g->nranks++] = rank;
    uint64_t b = (uint64_t)num(f, "bytes");
    g->bytes_min = b < g->bytes_min ? b : g->bytes_min;
    g->bytes_max = b > g->bytes_max ? b : g->bytes_max;
    g->bytes_sum += b;
    g->count += json_object_get(f, "count") ? (uint64_t)num(f, "count") : 1;
    return 0;
}

/* The worst rank first: the most errors, then the most bytes leaked, then by rank. */
static int worst_first(const void *a, const void *b)
{
    const rank_report *x = a, *y = b;
    if (x->errors != y->errors)
        return x->errors > y->errors ? -1 : 1;
    if (x->leaked_bytes != y->leaked_bytes)
        return x->leaked_bytes > y->leaked_bytes ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Most ranks first, then the most bytes. */
static int widest_first(const void *a, const void *b)
{
    const merged_finding *x = a, *y = b;
    if (x->nranks != y->nranks)
        return x->nranks > y->nranks ? -1 : 1;
    return x->bytes_sum > y->bytes_sum ? -1 : x->bytes_sum < y->bytes_sum;
}

/* "ranks 0-3, 5" from a list of ranks (sorted here); "pid 1234" entries for no rank. */
static void ranks_text(long *r, size_t n, char *buf, size_t size)
{
    for (size_t i = 1; i < n; i++) /* insertion sort: a job has a few thousand ranks at most */
        for (size_t j = i; j > 0 && r[j] < r[j - 1]; j--) {
            long t = r[j];
            r[j] = r[j - 1];
            r[j - 1] = t;
        }
    size_t o = (size_t)snprintf(buf, size, "%s ", n == 1 ? "rank" : "ranks");
    for (size_t i = 0; i < n && o + 24 < size; i++) {
        size_t j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1)
            j++;
        o += (size_t)snprintf(buf + o, size - o, "%s%ld", i ? ", " : "", r[i]);
        if (j > i)
            o += (size_t)snprintf(buf + o, size - o, "-%ld", r[j]);
        i = j;
    }
}

static const char *how(json_t *doc, char *buf, size_t n)
{
    const char *status = str(doc, "status");
    if (strcmp(status, "signaled") == 0)
        snprintf(buf, n, "killed by signal %lld", num(doc, "signal"));
    else if (strcmp(status, "killed") == 0)
        snprintf(buf, n, "killed by signal %lld before its report", num(doc, "signal"));
    else if (strcmp(status, "exited") == 0)
        snprintf(buf, n, "exited %lld", num(doc, "exit_code"));
    else
        snprintf(buf, n, "%s", status);
    return buf;
}

static void print_rank(FILE *out, const rank_report *r)
{
    char b[32], h[64];
    json_t *sum = json_object_get(r->doc, "summary");
    if (r->rank >= 0)
        fprintf(out, "  rank %ld (pid %lld): ", r->rank, r->pid);
    else
        fprintf(out, "  pid %lld (no rank): ", r->pid);
    fprintf(out, "%lld error%s (%lld leak%s, %s leaked), %s\n", r->errors, r->errors == 1 ? "" : "s",
            num(sum, "leaks"), num(sum, "leaks") == 1 ? "" : "s",
            report_bytes((int64_t)r->leaked_bytes, b, sizeof b), how(r->doc, h, sizeof h));
}

static void print_finding(FILE *out, merged_finding *g, size_t nranks)
{
    json_t *f = g->finding;
    int leak = strcmp(str(f, "kind"), "leak") == 0;
    char rt[512], b1[32], b2[32];
    ranks_text(g->ranks, g->nranks, rt, sizeof rt);
    fprintf(out, "  %s %s() %s%s%s", str(f, "kind"), leak ? str(f, "alloc_call") : str(f, "call"),
            str(f, "memory"), *str(f, "error") ? " " : "", str(f, "error"));
    if (g->bytes_max)
        fprintf(out, ", %s%s%s each", report_bytes((int64_t)g->bytes_min, b1, sizeof b1),
                g->bytes_min != g->bytes_max ? " to " : "",
                g->bytes_min != g->bytes_max ? report_bytes((int64_t)g->bytes_max, b2, sizeof b2) : "");
    fprintf(out, ": in %s (%zu of %zu)\n", rt, g->nranks, nranks);
    json_t *stack = json_object_get(f, leak ? "alloc_stack" : "stack");
    size_t i;
    json_t *fr;
    int shown = 0;
    json_array_foreach(stack, i, fr)
    {
        if (shown == 4)
            break;
        if (*str(fr, "file"))
            fprintf(out, "      %s %s (%s:%lld)\n", shown ? "by" : "at", str(fr, "function"),
                    str(fr, "file"), num(fr, "line"));
        else
            fprintf(out, "      %s %s (in %s)\n", shown ? "by" : "at", str(fr, "function"),
                    str(fr, "module"));
        shown++;
    }
}

static int write_merged_json(const char *path, merge_state *m)
{
    json_t *doc = json_pack("{s:s, s:i}", "schema", "gpumem-check-merged/1", "processes",
                            (json_int_t)m->nranks);
    json_t *ranks = json_array(), *found = json_array();
    long long errors = 0, leaked = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        rank_report *r = &m->ranks[i];
        json_t *e = json_pack("{s:I, s:I, s:I, s:s, s:s}", "pid", (json_int_t)r->pid, "errors",
                              (json_int_t)r->errors, "leaked_bytes", (json_int_t)r->leaked_bytes,
                              "status", str(r->doc, "status"), "file", r->path);
        if (r->rank >= 0)
            json_object_set_new(e, "rank", json_integer(r->rank));
        json_array_append_new(ranks, e);
        errors = report_add_sat(errors, r->errors);
        leaked = report_add_sat(leaked, r->leaked_bytes);
    }
    for (size_t i = 0; i < m->nfound; i++) {
        json_t *e = json_deep_copy(m->found[i].finding);
        json_t *rl = json_array();
        for (size_t k = 0; k < m->found[i].nranks; k++)
            json_array_append_new(rl, json_integer(m->found[i].ranks[k]));
        json_object_set_new(e, "ranks", rl);
        json_object_set_new(e, "bytes_in_all", json_integer((json_int_t)m->found[i].bytes_sum));
        json_array_append_new(found, e);
    }
    json_object_set_new(doc, "ranks", ranks);
    json_object_set_new(doc, "findings", found);
    json_object_set_new(doc, "summary", json_pack("{s:I, s:I}", "errors", (json_int_t)errors,
                                                  "leaked_bytes", (json_int_t)leaked));
    int rc = json_dump_file(doc, path, JSON_INDENT(1));
    json_decref(doc);
    return rc;
}

/* The merged report, on stdout (and as JSON). Returns 0 no errors, 3 errors, 1 failure. */
static int merge_reports(merge_state *m, const char *json_out)
{
    long long errors = 0, leaked = 0;
    for (size_t i = 0; i < m->nranks; i++) {
        rank_report *r = &m->ranks[i];
        json_t *sum = json_object_get(r->doc, "summary");
        r->errors = num(sum, "errors");
        r->leaked_bytes = num(sum, "leaked_bytes");
        errors = report_add_sat(errors, r->errors);
        leaked = report_add_sat(leaked, r->leaked_bytes);
        size_t k;
        json_t *f;
        json_array_foreach(json_object_get(r->doc, "findings"), k, f)
        {
            if (is_error(f) && add_finding(m, f, r->rank >= 0 ? r->rank : -(long)r->pid) != 0)
                return 1;
        }
    }
    qsort(m->ranks, m->nranks, sizeof *m->ranks, worst_first);
    if (m->nfound)
        qsort(m->found, m->nfound, sizeof *m->found, widest_first);
    size_t bad = 0;
    for (size_t i = 0; i < m->nranks; i++)
        bad += m->ranks[i].errors > 0;
    char b[32];
    printf("gpumem report: %zu process%s of one job, %zu with errors; the worst first:\n",
           m->nranks, m->nranks == 1 ? "" : "es", bad);
    for (size_t i = 0; i < m->nranks; i++)
        print_rank(stdout, &m->ranks[i]);
    if (m->nfound) {
        printf("\nfindings, each once with the ranks that had it (%zu distinct):\n", m->nfound);
        for (size_t i = 0; i < m->nfound; i++)
            print_finding(stdout, &m->found[i], m->nranks);
    }
    printf("\ntotal: %lld error%s, %s leaked, in %zu process%s\n", errors, errors == 1 ? "" : "s",
           report_bytes(leaked, b, sizeof b), m->nranks, m->nranks == 1 ? "" : "es");
    if (json_out && write_merged_json(json_out, m) != 0) {
        fprintf(stderr, "gpumem report: error: cannot write %s\n", json_out);
        return 1;
    }
    return errors ? 3 : 0;
}

/* ---- traces ---- */

typedef struct {
    const char *path;
    long pid, rank, new_pid;
    double shift;        /* microseconds added to each time */
    uint64_t id_add;     /* added to each allocation id */
    uint64_t stack_add;  /* added to each stack id */
    int wall_clock;      /* the trace noted the wall clock at its start */
} trace_input;

/* The head of a trace: its pid, rank and clocks, from its first lines. */
static int trace_head(trace_input *in, double *start)
{
    FILE *f = fopen(in->path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    in->rank = -1;
    *start = NAN;
    for (int i = 0; i < 8 && getline(&line, &cap, f) > 0; i++) {
        if (strncmp(line, "{\"ph\":\"M\"", 9) != 0)
            continue;
        size_t len = strcspn(line, "\n");
        while (len && (line[len - 1] == ',' || line[len - 1] == ' '))
            len--;
        json_t *e = json_loadb(line, len, 0, NULL);
        if (!e)
            continue;
        json_t *args = json_object_get(e, "args");
        if (strcmp(str(e, "name"), "gpumem_trace") == 0) {
            in->pid = (long)num(e, "pid");
            *start = json_number_value(json_object_get(args, "start_ts"));
            json_t *wall = json_object_get(args, "realtime_ts");
            in->wall_clock = json_is_number(wall);
            in->shift = in->wall_clock ? json_number_value(wall) - *start : 0;
            if (json_is_integer(json_object_get(args, "rank")))
                in->rank = (long)json_integer_value(json_object_get(args, "rank"));
        }
        json_decref(e);
    }
    free(line);
    fclose(f);
    return isnan(*start) ? -1 : 0;
}

static void add_hex_id(json_t *e, const char *key, uint64_t add)
{
    const char *v = json_string_value(json_object_get(e, key));
    if (!v)
        return;
    char buf[32];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)(strtoull(v, NULL, 16) + add));
    json_object_set_new(e, key, json_string(buf));
}

/* "S.K" -> "S'.K": a stack frame's name in the stackFrames table. */
static void frame_id(const char *v, uint64_t add, char *buf, size_t n)
{
    char *dot;
    unsigned long long s = strtoull(v, &dot, 10);
    snprintf(buf, n, "%llu%s", (unsigned long long)(s + add), dot ? dot : "");
}

static void add_time(json_t *o, const char *key, double shift)
{
    json_t *v = json_object_get(o, key);
    if (json_is_number(v))
        json_object_set_new(o, key, json_real(json_number_value(v) + shift));
}

/* One event of input in, on the merged clock and ids. */
static void rewrite_event(json_t *e, const trace_input *in)
{
    json_object_set_new(e, "pid", json_integer(in->new_pid));
    add_time(e, "ts", in->shift);
    add_hex_id(e, "id", in->id_add);
    json_t *args = json_object_get(e, "args");
    json_t *st = json_object_get(args, "stack");
    if (json_is_integer(st) && json_integer_value(st))
        json_object_set_new(args, "stack", json_integer(json_integer_value(st) + (json_int_t)in->stack_add));
    const char *sf = json_string_value(json_object_get(e, "sf"));
    if (sf) {
        char buf[48];
        frame_id(sf, in->stack_add, buf, sizeof buf);
        json_object_set_new(e, "sf", json_string(buf));
    }
    const char *name = str(e, "name");
    if (strcmp(str(e, "ph"), "M") != 0)
        return;
    if (strcmp(name, "process_name") == 0 && in->rank >= 0) {
        char label[2048];
        snprintf(label, sizeof label, "rank %ld (pid %ld): %s", in->rank, in->pid, str(args, "name"));
        json_object_set_new(args, "name", json_string(label));
    } else if (strcmp(name, "gpumem_trace") == 0) {
        add_time(args, "start_ts", in->shift);
    } else if (strcmp(name, "gpumem_end") == 0) {
        add_time(args, "end_ts", in->shift);
    } else if (strcmp(name, "gpumem_stacks") == 0) {
        json_t *stacks = json_object_get(args, "stacks"), *moved = json_object();
        const char *key;
        json_t *v;
        json_object_foreach(stacks, key, v) {
            char buf[32];
            snprintf(buf, sizeof buf, "%llu", strtoull(key, NULL, 10) + (unsigned long long)in->stack_add);
            json_object_set(moved, buf, v);
        }
        json_object_set_new(args, "stacks", moved);
    }
}

/* Copies input in's events (frames 0) or its stackFrames entries (frames 1) to out, each line
 * rewritten; *first says whether a line was written before. Returns 0, or -1. */
static int copy_trace(FILE *out, const trace_input *in, int frames, int *first)
{
    FILE *f = fopen(in->path, "r");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int in_frames = 0, rc = 0;
    ssize_t got;
    while ((got = getline(&line, &cap, f)) > 0) {
        size_t len = strcspn(line, "\n");
        while (len && (line[len - 1] == ',' || line[len - 1] == ' '))
            len--;
        if (strncmp(line, "\"stackFrames\"", 13) == 0) {
            in_frames = 1;
            continue;
        }
        json_t *e = NULL;
        if (!frames && !in_frames && strncmp(line, "{\"ph\"", 5) == 0) {
            e = json_loadb(line, len, 0, NULL);
            if (e)
                rewrite_event(e, in);
        } else if (frames && in_frames && line[0] == '"') {
            /* "S.K":{"name":..., "parent":"S.K+1"} */
            char *colon = strstr(line, "\":{");
            if (!colon)
                continue;
            char key[64], buf[64];
            snprintf(key, sizeof key, "%.*s", (int)(colon - line - 1), line + 1);
            json_t *v = json_loadb(colon + 2, len - (size_t)(colon + 2 - line), 0, NULL);
            if (!v)
                continue;
            const char *parent = json_string_value(json_object_get(v, "parent"));
            if (parent) {
                frame_id(parent, in->stack_add, buf, sizeof buf);
                json_object_set_new(v, "parent", json_string(buf));
            }
            frame_id(key, in->stack_add, buf, sizeof buf);
            e = json_pack("{s:o}", buf, v);
        }
        if (!e)
            continue;
        char *text = json_dumps(e, JSON_COMPACT | JSON_REAL_PRECISION(17));
        json_decref(e);
        if (!text)
            continue;
        if (frames) /* an object of one member: its inside is the table's entry */
            text[strlen(text) - 1] = '\0';
        if (fprintf(out, "%s%s", *first ? "" : ",\n", frames ? text + 1 : text) < 0)
            rc = -1;
        *first = 0;
        free(text);
    }
    free(line);
    fclose(f);
    return rc;
}

/* The merged trace into path. Returns 0, or 1 (said). */
static int merge_traces(trace_input *ins, size_t n, const char *path)
{
    double base = INFINITY;
    int wall = 1;
    for (size_t k = 0; k < n; k++) {
        double start;
        if (trace_head(&ins[k], &start) != 0) {
            fprintf(stderr, "gpumem report: error: %s: no gpumem trace head (gpumem_trace) in its "
                            "first lines\n", ins[k].path);
            return 1;
        }
        wall &= ins[k].wall_clock;
        ins[k].id_add = (uint64_t)(k + 1) << 40;
        ins[k].stack_add = (uint64_t)(k + 1) << 32;
        ins[k].new_pid = ins[k].rank >= 0 ? ins[k].rank : ins[k].pid;
        for (size_t j = 0; j < k; j++)
            if (ins[j].new_pid == ins[k].new_pid)
                ins[k].new_pid = 10000000 + (long)k; /* the same rank or pid twice */
        if (start + ins[k].shift < base)
            base = start + ins[k].shift;
    }
    if (!wall) /* one machine's monotonic clock is every trace's: times as they are */
        for (size_t k = 0; k < n; k++)
            ins[k].shift = 0;
    else
        for (size_t k = 0; k < n; k++)
            ins[k].shift -= base - 0.0; /* onto the wall clock, the earliest start at its time */
    FILE *out = fopen(path, "w");
    if (!out) {
        fprintf(stderr, "gpumem report: error: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    int first = 1, rc = 0;
    fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    for (size_t k = 0; k < n && rc == 0; k++)
        rc = copy_trace(out, &ins[k], 0, &first);
    fprintf(out, "%s{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"gpumem_merge\",\"args\":"
                 "{\"traces\":%zu,\"clock\":\"%s\"}}\n],\n\"stackFrames\":{\n",
            first ? "" : ",\n", n, wall ? "CLOCK_REALTIME" : "CLOCK_MONOTONIC");
    first = 1;
    for (size_t k = 0; k < n && rc == 0; k++)
        rc = copy_trace(out, &ins[k], 1, &first);
    fprintf(out, "\n}}\n");
    if (fclose(out) != 0 || rc != 0) {
        fprintf(stderr, "gpumem report: error: cannot write %s\n", path);
        return 1;
    }
    fprintf(stderr, "gpumem report: %zu traces merged into %s (%s)\n", n, path,
            wall ? "times on the wall clock each trace noted at its start"
                 : "times on one machine's monotonic clock, as recorded");
    return 0;
}

/* ---- the command ---- */

/* What a file is: 1 a gpumem check JSON report, 2 a trace, 0 neither. */
static int file_kind(const char *path, json_t **doc)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char head[64] = {0};
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    if (n && strstr(head, "\"traceEvents\""))
        return 2;
    json_error_t err;
    *doc = json_load_file(path, 0, &err);
    if (*doc && strncmp(str(*doc, "schema"), "gpumem-check/", 13) == 0)
        return 1;
    json_decref(*doc);
    *doc = NULL;
    return 0;
}

/* One file to merge, put among the ranks' reports (m) or the traces, by what it holds; an
 * input that is also an output is refused. Returns 0, or the exit status (said). */
static int sort_input(const char *path, const char *output, const char *json_out, merge_state *m,
                      trace_input *traces, size_t *ntraces)
{
    for (const char *o = output ? output : json_out; o; o = o == output ? json_out : NULL)
        if (tool_same_file(path, o)) {
            fprintf(stderr, "gpumem report: error: %s is both an input and an output\n", path);
            return 2;
        }
    json_t *doc = NULL;
    int kind = file_kind(path, &doc);
    if (kind == 1) {
        json_t *rank = json_object_get(doc, "rank");
        m->ranks[m->nranks++] =
            (rank_report){path, doc, json_is_integer(rank) ? (long)json_integer_value(rank) : -1,
                          num(doc, "pid"), 0, 0};
        return 0;
    }
    if (kind == 2) {
        traces[(*ntraces)++].path = path;
        return 0;
    }
    fprintf(stderr, "gpumem report: error: %s: %s\n", path,
            kind < 0 ? strerror(errno) : "neither a gpumem check JSON report nor a trace");
    return 1;
}

int report_merge_main(int argc, char **argv)
{
    const char *json_out = NULL, *output = NULL;
    enum { OPT_MERGE, OPT_JSON, OPT_OUTPUT };
    static const cli_opt opts[] = {{"--merge", 0, CLI_FLAG, OPT_MERGE},
                                   {"--json", 0, CLI_VALUE, OPT_JSON},
                                   {"--output", 'o', CLI_VALUE, OPT_OUTPUT}};
    static const cli_cmd cmd = {"report", opts, CLI_COUNT(opts), merge_usage, CLI_OPERANDS};
    cli c;
    cli_start(&c, &cmd, argc, argv);
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int nfiles = 0;
    if (!files)
        return 1;
    for (int id; (id = cli_next(&c)) != CLI_DONE;) {
        if (id == CLI_EXIT) {
            free(files);
            return c.status;
        }
        if ((id == OPT_JSON || id == OPT_OUTPUT || id == CLI_OPERAND) && !*c.value) {
            free(files);
            return cli_usage_error(&c, "%s needs a path", id == CLI_OPERAND ? "a file" : c.opt);
        }
        if (id == OPT_JSON)
            json_out = c.value;
        else if (id == OPT_OUTPUT)
            output = c.value;
        else if (id == CLI_OPERAND)
            files[nfiles++] = c.value;
    }
    for (int i = c.next; c.after_dashes && i < argc; i++)
        files[nfiles++] = argv[i];
    if (nfiles < 1) {
        free(files);
        return cli_usage_error(&c, "%s", "--merge needs the files to merge (check.*.json, "
                                         "trace.*.json)");
    }
    merge_state m = {0};
    trace_input *traces = calloc((size_t)nfiles, sizeof *traces);
    m.ranks = calloc((size_t)nfiles, sizeof *m.ranks);
    size_t ntraces = 0;
    int rc = traces && m.ranks ? 0 : 1;
    for (int i = 0; i < nfiles && rc == 0; i++)
        rc = sort_input(files[i], output, json_out, &m, traces, &ntraces);
    if (rc == 0 && ntraces && !output)
        rc = cli_usage_error(&c, "%s", "traces were given: -o FILE names the merged trace");
    if (rc == 0 && !ntraces && output)
        rc = cli_usage_error(&c, "%s", "-o names the merged trace, and no trace was given");
    if (rc == 0 && m.nranks)
        rc = merge_reports(&m, json_out);
    if ((rc == 0 || rc == 3) && ntraces && merge_traces(traces, ntraces, output) != 0)
        rc = 1;
    for (size_t i = 0; i < m.nranks; i++)
        json_decref(m.ranks[i].doc);
    for (size_t i = 0; i < m.nfound; i++)
        free(m.found[i].ranks);
    free(m.found);
    free(m.ranks);
    free(traces);
    free(files);
    return rc;
}

/* Reading a trace (report.h). The trace is one JSON event a line (src/trace.c writes it so):
 * each line is parsed on its own with jansson, so that a trace cut short by a crash reads up to
 * where it stops, and counter lines (which the reader recomputes) are skipped unparsed. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpumem.h"
#include "report.h"
#include "sigsafe.h" /* gpumem__visible_piece */

/* ---- small maps: site names and allocation ids to indexes ---- */

typedef struct {
    uint64_t *keys; /* 0 marks an empty slot; key 0 itself lives in zero_val */
    uint32_t *vals;
    size_t cap, n;
    uint32_t zero_val;
    int zero_used;
} u64map;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int map_grow(u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    uint64_t *k = calloc(cap, sizeof *k);
    uint32_t *v = calloc(cap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        size_t j = mix(m->keys[i]) & (cap - 1);
        while (k[j])
            j = (j + 1) & (cap - 1);
        k[j] = m->keys[i];
        v[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = v;
    m->cap = cap;
    return 0;
}

/* Returns the value slot of key; *found says if it existed. */
static uint32_t *map_slot(u64map *m, uint64_t key, int *found)
{
    if (key == 0) { /* the empty slots' mark: kept beside the table */
        *found = m->zero_used;
        m->zero_used = 1;
        return &m->zero_val;
    }
    if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0)
        return NULL;
    size_t j = mix(key) & (m->cap - 1);
    while (m->keys[j] && m->keys[j] != key)
        j = (j + 1) & (m->cap - 1);
    *found = m->keys[j] == key;
    if (!*found) {
        m->keys[j] = key;
        m->n++;
    }
    return &m->vals[j];
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | 1;
}

/* ---- growable arrays ---- */

#define GROW(arr, n, cap)                                                                        \
    ((n) < (cap) || grow_array((void **)&(arr), &(cap), sizeof *(arr)) == 0)

static int grow_array(void **arr, size_t *cap, size_t size)
{
    size_t c = *cap ? *cap * 2 : 256;
    void *p = realloc(*arr, c * size);
    if (!p)
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

/* The memory kinds a report counts: every kind but reserved address ranges
 * (cuMemAddressReserve), which hold no memory (what is mapped into them is virtual memory,
 * counted as such). */
static int kind_of(const char *name)
{
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        if (name && k != GPUMEM_KIND_RESERVED && strcmp(gpumem_kind_name(k), name) == 0)
            return k;
    return 0;
}

typedef struct {
    report_trace *t;
    u64map site_map, alloc_map, track_map, release_map;
    size_t sites_cap, tracks_cap, events_cap, allocs_cap, failures_cap, cp_cap, stacks_cap;
    size_t release_cap;
    int64_t t_last;
    int have_pid;
} loader;

/* An allocation ('b') or release ('e') line's fields. */
typedef struct {
    char ph;
    int64_t ts;
    const char *cat, *name, *id, *released_at;
    int64_t bytes;
    int device;
    uint64_t stack, address, stream;
    uint32_t tid;
} span;

/* While a trace is read, times are the trace's own (ns) and a release not yet seen is
 * NOT_RELEASED; at the end they are counted from the earliest event, whatever order the
 * threads' events were written in, and NOT_RELEASED becomes -1. */
#define NOT_RELEASED INT64_MIN

/* A copy of text from the trace that is safe to print on a terminal: each control character
 * (C0, DEL and C1, whose CSI starts escape sequences, also as a lone byte 0x80 to 0x9F that
 * an 8-bit terminal reads as C1), as gpumem's text outputs tell them (gpumem__visible_piece),
 * becomes '?' for each of its bytes. */
static char *dup_clean(const char *text)
{
    char *c = strdup(text);
    char piece[GPUMEM__VISIBLE_PIECE_MAX];
    for (size_t i = 0, took; c && c[i]; i += took)
        if (gpumem__visible_piece(c + i, piece, &took) != took || memcmp(piece, c + i, took) != 0)
            memset(c + i, '?', took);
    return c;
}

static uint32_t site_index(loader *L, const char *name, int kind, uint64_t stack)
{
    report_trace *t = L->t;
    uint64_t h = str_hash(name);
    /* Names are compared too: two names with one hash are told apart by probing on. */
    for (uint64_t salt = 0;; salt++) {
        int found;
        uint32_t *v = map_slot(&L->site_map, mix(h + salt) | 1, &found);
        if (!v)
            return UINT32_MAX;
        if (found) {
            if (strcmp(t->sites[*v].name, name) == 0) {
                if (!t->sites[*v].stack)
                    t->sites[*v].stack = stack;
                return *v;
            }
            continue;
        }
        if (!GROW(t->sites, t->nsites, L->sites_cap))
            return UINT32_MAX;
        report_site *s = &t->sites[t->nsites];
        memset(s, 0, sizeof *s);
        s->name = dup_clean(name);
        s->kind = kind;
        s->stack = stack;
        *v = (uint32_t)t->nsites;
        return (uint32_t)t->nsites++;
    }
}

/* Where allocations were released, each name once (a trace has few: the release calls and
 * their sites). UINT32_MAX when there is none, or no memory for it. */
static uint32_t release_index(loader *L, const char *name)
{
    report_trace *t = L->t;
    if (!name)
        return UINT32_MAX;
    uint64_t h = str_hash(name);
    for (uint64_t salt = 0;; salt++) {
        int found;
        uint32_t *v = map_slot(&L->release_map, mix(h + salt) | 1, &found);
        if (!v)
            return UINT32_MAX;
        if (found) {
            if (strcmp(t->release_names[*v], name) == 0)
                return *v;
            continue;
        }
        char *copy = dup_clean(name);
        if (!copy || !GROW(t->release_names, t->nrelease_names, L->release_cap)) {
            free(copy);
            return UINT32_MAX;
        }
        t->release_names[t->nrelease_names] = copy;
        *v = (uint32_t)t->nrelease_names;
        return (uint32_t)t->nrelease_names++;
    }
}

/* A track per kind and device, found by a map: a trace may name many devices. */
static uint32_t track_index(loader *L, int kind, int device)
{
    report_trace *t = L->t;
    int found;
    uint32_t *v = map_slot(&L->track_map, (uint64_t)kind << 32 | (uint32_t)device, &found);
    if (!v)
        return UINT32_MAX;
    if (found)
        return *v;
    if (!GROW(t->tracks, t->ntracks, L->tracks_cap))
        return UINT32_MAX;
    t->tracks[t->ntracks] = (report_track){.kind = kind, .device = device};
    *v = (uint32_t)t->ntracks;
    return (uint32_t)t->ntracks++;
}

/* A timestamp in microseconds as ns; 0 with *bad set when it is no time (NaN, infinite, or
 * more than 142 years from 0, so that the difference of any two fits in 64 bits of ns). */
static int64_t ns_of(double us, int *bad)
{
    if (!isfinite(us) || fabs(us) > 4.5e15) {
        *bad = 1;
        return 0;
    }
    return (int64_t)llround(us * 1000.0);
}

static int64_t ts_of(json_t *e, int *bad)
{
    json_t *v = json_object_get(e, "ts");
    if (!json_is_number(v)) {
        *bad = 1;
        return 0;
    }
    return ns_of(json_is_real(v) ? json_real_value(v) : (double)json_integer_value(v), bad);
}

/* An allocation (ph 'b') or its release ('e'). Returns 0, or -1 when out of memory. */
static int take_span(loader *L, const span *x)
{
    report_trace *t = L->t;
    int kind = kind_of(x->cat);
    if (x->ts > L->t_last)
        L->t_last = x->ts;
    if (!x->id || !x->name || !kind || x->bytes <= 0)
        return 0;
    uint64_t id = strtoull(x->id, NULL, 16) + 1;
    int found;
    uint32_t *slot = map_slot(&L->alloc_map, id, &found);
    if (!slot)
        return -1;
    uint32_t site = site_index(L, x->name, kind, x->stack);
    uint32_t track = track_index(L, kind, x->device);
    if (site == UINT32_MAX || track == UINT32_MAX)
        return -1;
    if (x->ph == 'b') {
        if (!GROW(t->allocs, t->nallocs, L->allocs_cap))
            return -1;
        t->allocs[t->nallocs] = (report_alloc){
            .site = site, .track = track, .bytes = x->bytes, .t_alloc = x->ts,
            .t_release = NOT_RELEASED, .address = x->address, .stream = x->stream,
            .stack = (uint32_t)x->stack, .thread = x->tid, .released_at = UINT32_MAX};
        *slot = (uint32_t)t->nallocs++;
    } else if (!found || *slot == UINT32_MAX || t->allocs[*slot].t_release != NOT_RELEASED) {
        /* A release without its allocation: a trace that began late. The id is in the map now:
         * marked, so that another release of it is not taken for allocation 0's. */
        if (!found)
            *slot = UINT32_MAX;
        t->unmatched_releases++;
        return 0;
    } else {
        report_alloc *a = &t->allocs[*slot];
        a->t_release = x->ts;
        a->release_thread = x->tid;
        a->released_at = release_index(L, x->released_at);
    }
    if (!GROW(t->events, t->nevents, L->events_cap))
        return -1;
    t->events[t->nevents++] =
        (report_event){x->ts, x->ph == 'b' ? x->bytes : -x->bytes, site, track, *slot};
    if (x->ph == 'b') {
        t->sites[site].count++;
        uint64_t *sum = &t->sites[site].total;
        *sum = *sum > UINT64_MAX - (uint64_t)x->bytes ? UINT64_MAX : *sum + (uint64_t)x->bytes;
    }
    return 0;
}

/* The text after "key" in line, or NULL. */
static const char *after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? p + strlen(key) : NULL;
}

/* A string value starting at p (just after its opening quote) into buf; NULL when too long. */
static const char *string_at(const char *p, char *buf, size_t n)
{
    const char *q = p ? strchr(p, '"') : NULL;
    if (!q || (size_t)(q - p) >= n)
        return NULL;
    memcpy(buf, p, (size_t)(q - p));
    buf[q - p] = '\0';
    return buf;
}

/* The trace's process id, from its first event that has one. */
static void take_pid(loader *L, long pid)
{
    if (!L->have_pid) {
        L->t->pid = pid;
        L->have_pid = 1;
    }
}

/* The allocation and release lines that gpumem writes (the bulk of a trace), read without a
 * JSON parser: their keys come in a known order and, when the line has no backslash, no string
 * holds a quote. Returns 1 when taken, 0 to leave the line to jansson, -1 out of memory. */
static int take_fast(loader *L, const char *line)
{
    if (strncmp(line, "{\"ph\":\"", 7) != 0 || (line[7] != 'b' && line[7] != 'e') ||
        line[8] != '"' || strchr(line, '\\'))
        return 0;
    char cat[32], name[1024], id[32], released[1024];
    span x = {.ph = line[7]};
    const char *ts = after(line, ",\"ts\":");
    x.cat = string_at(after(line, ",\"cat\":\""), cat, sizeof cat);
    x.name = string_at(after(line, ",\"name\":\""), name, sizeof name);
    const char *args = after(line, ",\"args\":{");
    x.id = string_at(after(line, ",\"id\":\""), id, sizeof id);
    if (!ts || !x.cat || !x.name || !x.id || !args)
        return 0;
    const char *b = after(args, "\"bytes\":"), *d = after(args, "\"device\":");
    const char *st = x.ph == 'b' ? after(args, "\"stack\":") : NULL;
    const char *addr = after(args, "\"address\":\"");
    const char *stream = x.ph == 'b' ? after(args, "\"stream\":\"") : NULL;
    const char *tid = after(line, ",\"tid\":"), *pid = after(line, ",\"pid\":");
    if (!b || !d)
        return 0;
    int bad = 0;
    x.ts = ns_of(strtod(ts, NULL), &bad);
    if (bad) {
        L->t->bad_times++;
        return 1;
    }
    if (pid)
        take_pid(L, strtol(pid, NULL, 10));
    x.bytes = strtoll(b, NULL, 10);
    x.device = (int)strtol(d, NULL, 10);
    x.stack = st ? strtoull(st, NULL, 10) : 0;
    x.address = addr ? strtoull(addr, NULL, 16) : 0;
    x.stream = stream ? strtoull(stream, NULL, 16) : 0;
    x.tid = tid ? (uint32_t)strtoul(tid, NULL, 10) : 0;
    if (x.ph == 'e')
        x.released_at = string_at(after(args, "\"released_at\":\""), released, sizeof released);
    return take_span(L, &x) == 0 ? 1 : -1;
}

/* A hexadecimal string field of args ("0x7f..."), 0 when absent. */
static uint64_t hex_arg(json_t *args, const char *key)
{
    const char *v = json_string_value(json_object_get(args, key));
    return v ? strtoull(v, NULL, 16) : 0;
}

static char *dup_or(const char *s, const char *fallback)
{
    return dup_clean(s ? s : fallback);
}

static int read_stacks(loader *L, json_t *stacks)
{
    report_trace *t = L->t;
    const char *key;
    json_t *frames;
    json_object_foreach(stacks, key, frames) {
        if (!GROW(t->stack_ids, t->nstacks, L->stacks_cap))
            return -1;
        /* stack_frames grows with stack_ids: same capacity. */
        char ***grown = realloc(t->stack_frames, L->stacks_cap * sizeof *grown);
        if (!grown)
            return -1;
        t->stack_frames = grown;
        size_t n = json_array_size(frames);
        char **list = calloc(n + 1, sizeof *list);
        if (!list)
            return -1;
        for (size_t i = 0; i < n; i++)
            list[i] = dup_or(json_string_value(json_array_get(frames, i)), "?");
        t->stack_ids[t->nstacks] = strtoull(key, NULL, 10);
        t->stack_frames[t->nstacks++] = list;
    }
    return 0;
}

/* One event line; returns 0, or -1 when out of memory. */
static int take_event(loader *L, json_t *e)
{
    report_trace *t = L->t;
    const char *ph = json_string_value(json_object_get(e, "ph"));
    const char *name = json_string_value(json_object_get(e, "name"));
    json_t *args = json_object_get(e, "args");
    if (!ph || !name)
        return 0;
    if (ph[0] == 'M') {
        if (strcmp(name, "process_name") == 0 && !t->process)
            t->process = dup_or(json_string_value(json_object_get(args, "name")), "?");
        else if (strcmp(name, "gpumem_trace") == 0 && !t->tool)
            t->tool = dup_or(json_string_value(json_object_get(args, "tool")), "gpumem");
        else if (strcmp(name, "gpumem_stacks") == 0)
            return read_stacks(L, json_object_get(args, "stacks"));
        else if (strcmp(name, "gpumem_end") == 0) {
            t->complete = 1;
            json_int_t dropped = json_integer_value(json_object_get(args, "dropped"));
            t->dropped = dropped > 0 ? (uint64_t)dropped : 0;
        }
        return 0;
    }
    int bad = 0;
    int64_t ts = ts_of(e, &bad);
    if (bad) {
        t->bad_times++;
        return 0;
    }
    if (ts > L->t_last)
        L->t_last = ts;
    json_t *pid = json_object_get(e, "pid");
    if (json_is_integer(pid))
        take_pid(L, (long)json_integer_value(pid));
    if ((ph[0] == 'b' || ph[0] == 'e') && ph[1] == '\0') {
        span x = {
            .ph = ph[0],
            .ts = ts,
            .cat = json_string_value(json_object_get(e, "cat")),
            .name = name,
            .id = json_string_value(json_object_get(e, "id")),
            .released_at = json_string_value(json_object_get(args, "released_at")),
            .bytes = json_integer_value(json_object_get(args, "bytes")),
            .device = (int)json_integer_value(json_object_get(args, "device")),
            .stack = (uint64_t)json_integer_value(json_object_get(args, "stack")),
            .address = hex_arg(args, "address"),
            .stream = hex_arg(args, "stream"),
            .tid = (uint32_t)json_integer_value(json_object_get(e, "tid")),
        };
        if (take_span(L, &x) != 0)
            return -1;
    } else if (ph[0] == 'i' && strcmp(name, "checkpoint") == 0) {
        if (!GROW(t->checkpoints, t->ncheckpoints, L->cp_cap))
            return -1;
        t->checkpoints[t->ncheckpoints++] = ts;
    } else if (ph[0] == 'i') {
        if (!GROW(t->failures, t->nfailures, L->failures_cap))
            return -1;
        const char *cuda = json_string_value(json_object_get(args, "cuda_error"));
        t->failures[t->nfailures++] = (report_failure){
            .t = ts,
            .bytes = json_integer_value(json_object_get(args, "bytes")),
            .kind = kind_of(json_string_value(json_object_get(args, "kind"))),
            .device = (int)json_integer_value(json_object_get(args, "device")),
            .site = dup_or(json_string_value(json_object_get(args, "site")), "?"),
            .what = dup_clean(name),
            .cuda_error = cuda ? dup_clean(cuda) : NULL,
        };
    }
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const report_event *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    /* Same nanosecond: allocation before release of the same allocation, else as read. */
    if (x->alloc == y->alloc)
        return x->bytes > 0 ? -1 : 1;
    return x->alloc < y->alloc ? -1 : 1;
}

typedef struct {
    uint64_t id;
    char **frames;
} stack_entry;

static int by_stack_id(const void *a, const void *b)
{
    uint64_t x = ((const stack_entry *)a)->id, y = ((const stack_entry *)b)->id;
    return (x > y) - (x < y);
}

/* Stacks by id, so that each site's is found by bisection, not a walk over all of them. */
static int sort_stacks(report_trace *t)
{
    if (t->nstacks < 2)
        return 0;
    stack_entry *e = malloc(t->nstacks * sizeof *e);
    if (!e)
        return -1;
    for (size_t i = 0; i < t->nstacks; i++)
        e[i] = (stack_entry){t->stack_ids[i], t->stack_frames[i]};
    qsort(e, t->nstacks, sizeof *e, by_stack_id);
    for (size_t i = 0; i < t->nstacks; i++) {
        t->stack_ids[i] = e[i].id;
        t->stack_frames[i] = e[i].frames;
    }
    free(e);
    return 0;
}

/* Counts every time from the earliest event read (threads write their events in their own
 * order, so the first line need not be the earliest). */
static void rebase_times(report_trace *t, loader *L)
{
    int64_t t0 = INT64_MAX;
    for (size_t i = 0; i < t->nevents; i++)
        t0 = t->events[i].t < t0 ? t->events[i].t : t0;
    for (size_t i = 0; i < t->nfailures; i++)
        t0 = t->failures[i].t < t0 ? t->failures[i].t : t0;
    for (size_t i = 0; i < t->ncheckpoints; i++)
        t0 = t->checkpoints[i] < t0 ? t->checkpoints[i] : t0;
    for (size_t i = 0; i < t->npool_samples; i++)
        t0 = t->pool_samples[i].t < t0 ? t->pool_samples[i].t : t0;
    if (t0 == INT64_MAX)
        t0 = 0;
    t->t0 = t0;
    for (size_t i = 0; i < t->nevents; i++)
        t->events[i].t -= t0;
    for (size_t i = 0; i < t->nfailures; i++)
        t->failures[i].t -= t0;
    for (size_t i = 0; i < t->ncheckpoints; i++)
        t->checkpoints[i] -= t0;
    for (size_t i = 0; i < t->nallocs; i++) {
        t->allocs[i].t_alloc -= t0;
        t->allocs[i].t_release =
            t->allocs[i].t_release == NOT_RELEASED ? -1 : t->allocs[i].t_release - t0;
    }
    L->t_last -= t0;
    report_pools_rebase(t, t0);
}

int64_t report_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* Live bytes over time: site and track peaks, the overall peak and what was live then. */
static void analyse(report_trace *t)
{
    if (t->nevents)
        qsort(t->events, t->nevents, sizeof *t->events, by_time);
    int64_t total = 0;
    t->peak_bytes = 0;
    t->peak_t = 0;
    t->peak_index = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        const report_event *e = &t->events[i];
        report_site *s = &t->sites[e->site];
        report_track *k = &t->tracks[e->track];
        s->live = report_add_sat(s->live, e->bytes);
        if (s->live > s->peak)
            s->peak = s->live;
        k->live = report_add_sat(k->live, e->bytes);
        if (k->live > k->peak) {
            k->peak = k->live;
            k->peak_t = e->t;
        }
        total = report_add_sat(total, e->bytes);
        if (total > t->peak_bytes) {
            t->peak_bytes = total;
            t->peak_t = e->t;
            t->peak_index = i + 1;
        }
    }
    /* What was live at the peak: allocations made by then and not released by then. */
    for (size_t i = 0; i < t->nsites; i++) {
        t->sites[i].at_peak = 0;
        t->sites[i].count_at_peak = 0;
    }
    for (size_t i = 0; i < t->nallocs; i++) {
        const report_alloc *a = &t->allocs[i];
        report_site *s = &t->sites[a->site];
        if (t->peak_bytes && a->t_alloc <= t->peak_t &&
            (a->t_release < 0 || a->t_release > t->peak_t)) {
            s->at_peak = report_add_sat(s->at_peak, a->bytes);
            s->count_at_peak++;
        }
        if (a->t_release < 0) {
            s->leaked = report_add_sat(s->leaked, a->bytes);
            s->leaked_count++;
            t->leaked_bytes = report_add_sat(t->leaked_bytes, a->bytes);
            t->leaked_count++;
        }
    }
    for (size_t i = 0; i < t->nsites; i++)
        t->leaked_sites += t->sites[i].leaked_count > 0;
    t->duration = t->nevents ? t->events[t->nevents - 1].t : 0;
}

/* The longest line read: the stacks table is one line, and a trace of a program with
 * hundreds of thousands of stacks stays well under it; endless input without a newline (a
 * pipe from /dev/zero) is refused here instead of filling memory. */
#define MAX_LINE ((size_t)256 << 20)

/* Like getline, but -2 past MAX_LINE bytes. */
static ssize_t read_line(FILE *f, char **buf, size_t *cap)
{
    size_t n = 0;
    for (;;) {
        if (*cap - n < 2) {
            size_t c = *cap ? *cap * 2 : 4096;
            char *grown = c <= MAX_LINE + 4096 ? realloc(*buf, c) : NULL;
            if (!grown)
                return -2;
            *buf = grown;
            *cap = c;
        }
        if (!fgets(*buf + n, (int)(*cap - n), f))
            return n ? (ssize_t)n : -1;
        n += strlen(*buf + n);
        if (n && (*buf)[n - 1] == '\n')
            return (ssize_t)n;
    }
}

/* Opens a trace: a regular file or a pipe, not a folder or a device. */
static FILE *open_trace(const char *path, char *err, size_t errn)
{
    FILE *f = fopen(path, "r");
    struct stat st;
    if (f && fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
        fclose(f);
        snprintf(err, errn, "%s is %s, not a trace file; name the file that GPUMEM_TRACE=FILE "
                            "or `gpumem check --trace=FILE` wrote", path,
                 S_ISDIR(st.st_mode) ? "a folder" : "a device or other special file");
        return NULL;
    }
    if (!f) {
        int e = errno;
        snprintf(err, errn, "cannot read the trace %s: %s%s", path, strerror(e),
                 e == ENOENT ? " (a program writes its trace once it first allocates through "
                               "gpumem or, under gpumem check, uses CUDA)"
                             : "");
    }
    return f;
}

/* Cuts the line ending off line (len bytes); returns the length left. */
static ssize_t chomp(char *line, ssize_t len)
{
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = '\0';
    return len;
}

/* After the end of traceEvents: the stackFrames table follows, for other viewers. The report
 * does not need it, but a file cut inside it is cut all the same. Returns whether it closes. */
static int frames_closed(FILE *f, char **line, size_t *cap)
{
    int closed = 0;
    ssize_t len;
    while ((len = read_line(f, line, cap)) > 0)
        if ((len = chomp(*line, len)) > 0)
            closed = strcmp(*line, "}}") == 0;
    return closed;
}

/* One line of traceEvents. Returns 0, 1 for a line that is not JSON, or -1 without memory;
 * *header is set once the gpumem_trace event is read. */
static int take_line(loader *L, char *line, ssize_t len, int *header)
{
    if (strncmp(line, "{\"ph\":\"C\"", 9) == 0) /* counters: recomputed from the allocations; */
        return report_take_pool_counter(L->t, line) < 0 ? -1 : 0; /* pools' reserved kept */
    if (len > 0 && line[len - 1] == ',')
        line[--len] = '\0';
    if (*header && len > 2 && line[len - 1] == '}') {
        int fast = take_fast(L, line);
        if (fast)
            return fast < 0 ? -1 : 0;
    }
    json_error_t jerr;
    json_t *e = json_loads(line, 0, &jerr);
    if (!e)
        return 1;
    if (!*header) {
        const char *name = json_string_value(json_object_get(e, "name"));
        *header = name && strcmp(name, "gpumem_trace") == 0;
    }
    int r = take_event(L, e);
    json_decref(e);
    return r != 0 ? -1 : 0;
}

static void loader_free(loader *L)
{
    free(L->site_map.keys);
    free(L->site_map.vals);
    free(L->alloc_map.keys);
    free(L->alloc_map.vals);
    free(L->track_map.keys);
    free(L->track_map.vals);
    free(L->release_map.keys);
    free(L->release_map.vals);
}

/* What is wrong with a trace read to its end (lines, header, the last read's status len), or
 * NULL; the text goes to err. */
static const char *whole_trace(const char *path, long lineno, ssize_t len, int header, char *err,
                               size_t errn)
{
    if (len == -2)
        snprintf(err, errn, "%s:%ld: a line longer than %zu MiB (or no memory for it): not a "
                            "gpumem trace", path, lineno + 1, MAX_LINE >> 20);
    else if (lineno == 0)
        snprintf(err, errn, "%s is empty: the program may have been killed before gpumem "
                            "started the trace", path);
    else if (!header)
        snprintf(err, errn, "%s is not a gpumem trace (no gpumem_trace event); gpumem report "
                            "reads the traces that GPUMEM_TRACE=FILE and `gpumem check "
                            "--trace=FILE` write", path);
    else
        return NULL;
    return err;
}

int report_load(const char *path, report_trace *t, char *err, size_t errn)
{
    memset(t, 0, sizeof *t);
    FILE *f = open_trace(path, err, errn);
    if (!f)
        return -1;
    loader L = {.t = t};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = -1, header = 0, bad_tail = 0;
    while ((len = read_line(f, &line, &cap)) > 0) {
        lineno++;
        len = chomp(line, len);
        if (lineno == 1) {
            if (strncmp(line, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 39) != 0) {
                snprintf(err, errn,
                         "%s is not a gpumem trace (it does not begin as one: %s); gpumem "
                         "report reads the traces that GPUMEM_TRACE=FILE and `gpumem check "
                         "--trace=FILE` write",
                         path, len ? "other content" : "an empty first line");
                goto out;
            }
            continue;
        }
        if (len == 0)
            continue;
        if (line[0] == ']') { /* the end of traceEvents */
            t->frames_cut = !frames_closed(f, &line, &cap);
            break;
        }
        if (bad_tail) { /* a line that did not parse, and more after it: not truncation */
            snprintf(err, errn, "%s:%ld: not a JSON event (the trace is damaged)", path,
                     lineno - 1);
            goto out;
        }
        int taken = take_line(&L, line, len, &header);
        if (taken < 0) {
            snprintf(err, errn, "out of memory reading %s (line %ld)", path, lineno);
            goto out;
        }
        bad_tail = taken;
    }
    if (whole_trace(path, lineno, len, header, err, errn))
        goto out;
    if (bad_tail)
        t->complete = 0; /* a cut last line */
    rebase_times(t, &L);
    if (sort_stacks(t) != 0) {
        snprintf(err, errn, "out of memory reading %s", path);
        goto out;
    }
    analyse(t);
    rc = 0;
out:
    free(line);
    fclose(f);
    loader_free(&L);
    if (rc != 0)
        report_free(t); /* what was read before the error */
    return rc;
}

void report_free(report_trace *t)
{
    for (size_t i = 0; i < t->nsites; i++)
        free(t->sites[i].name);
    for (size_t i = 0; i < t->nfailures; i++) {
        free(t->failures[i].site);
        free(t->failures[i].what);
        free(t->failures[i].cuda_error);
    }
    for (size_t i = 0; i < t->nstacks; i++) {
        for (char **f = t->stack_frames[i]; *f; f++)
            free(*f);
        free(t->stack_frames[i]);
    }
    for (size_t i = 0; i < t->nrelease_names; i++)
        free(t->release_names[i]);
    free(t->release_names);
    free(t->stack_frames);
    free(t->stack_ids);
    free(t->sites);
    free(t->tracks);
    free(t->events);
    free(t->allocs);
    free(t->failures);
    free(t->checkpoints);
    free(t->process);
    free(t->tool);
    report_pools_free(t);
    memset(t, 0, sizeof *t);
}

long report_stack_index(const report_trace *t, uint64_t id)
{
    size_t lo = 0, hi = t->nstacks; /* sorted by id (sort_stacks) */
    while (id && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->stack_ids[mid] == id)
            return (long)mid;
        if (t->stack_ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

char **report_stack(const report_trace *t, uint64_t id)
{
    long i = report_stack_index(t, id);
    return i < 0 ? NULL : t->stack_frames[i];
}

const char *report_track_name(const report_trace *t, size_t i, char *buf, size_t n)
{
    snprintf(buf, n, "%s memory, device %d", gpumem_kind_name(t->tracks[i].kind),
             t->tracks[i].device);
    return buf;
}

static const report_trace *rank_trace;

static int by_rank(const void *a, const void *b)
{
    const report_site *x = &rank_trace->sites[*(const uint32_t *)a];
    const report_site *y = &rank_trace->sites[*(const uint32_t *)b];
    if (x->at_peak != y->at_peak)
        return x->at_peak > y->at_peak ? -1 : 1;
    if (x->peak != y->peak)
        return x->peak > y->peak ? -1 : 1;
    return strcmp(x->name, y->name);
}

uint32_t *report_sites_ranked(const report_trace *t)
{
    uint32_t *idx = malloc((t->nsites + 1) * sizeof *idx);
    if (!idx)
        return NULL;
    for (size_t i = 0; i < t->nsites; i++)
        idx[i] = (uint32_t)i;
    rank_trace = t;
    qsort(idx, t->nsites, sizeof *idx, by_rank);
    return idx;
}

const char *report_bytes(int64_t v, char *buf, size_t n)
{
    return gpumem_format_bytes((uint64_t)(v < 0 ? 0 : v), buf, n);
}

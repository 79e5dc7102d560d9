/* Traces in Perfetto's own format (report.h): a protobuf Trace of TracePackets carrying
 * TrackEvents, as Perfetto's "Writing TrackEvent protos synthetically" describes. Perfetto
 * calls its JSON reader legacy and best effort, and a browser holds a JSON trace in memory
 * several times over; this format has units (counters in bytes), interning, and flows.
 *
 * Each trace (process) is one packet sequence and shows as one process:
 *  - a counter track per memory kind and device ("device memory, device 0"), in bytes: the live
 *    bytes, updated on each allocation and release (as extra counter values of its slice);
 *    and two per pool, where the trace has them: what it reserved from CUDA and what its
 *    blocks in use hold (the difference is its fragmentation);
 *  - a track per call site: a slice per allocation, from the allocation to its release, named
 *    by its memory kind, with bytes, address, stream and stack as arguments (the stack's frames
 *    on the first allocation with that stack, its id on every one). Slices on one track must
 *    nest, and allocations overlap, so each site has as many tracks (lanes) as it had
 *    allocations live at once, all of one name, which Perfetto's UI shows as one;
 *  - a track per thread of the program ("thread 1", gpumem's numbering), with an instant where
 *    the thread allocated (named by the call site) and where it released (named by where),
 *    and an arrow (a flow) from each allocation to its release;
 *  - instants for checkpoints and failed allocations on the process's track.
 * Times are the trace's own (CLOCK_MONOTONIC), so the processes of one machine line up. They
 * are given in Perfetto's default clock: naming CLOCK_MONOTONIC (timestamp_clock_id) would make
 * trace_processor convert them, which it can only do with a clock snapshot that relates the
 * two, and a trace of one clock needs none.
 * The field numbers are those of Perfetto's public protos (tests/report/perfetto_trace.proto
 * lists the ones used, and the test decodes the output with it). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "protobuf.h"
#include "report.h"

/* Field numbers (protos/perfetto/trace/...). */
enum {
    TRACE_PACKET = 1,
    PACKET_TIMESTAMP = 8, PACKET_SEQUENCE_ID = 10, PACKET_TRACK_EVENT = 11,
    PACKET_INTERNED_DATA = 12, PACKET_SEQUENCE_FLAGS = 13, PACKET_TRACK_DESCRIPTOR = 60,
    TRACK_UUID = 1, TRACK_NAME = 2, TRACK_PROCESS = 3, TRACK_PARENT_UUID = 5, TRACK_COUNTER = 8,
    PROCESS_PID = 1, PROCESS_NAME = 6,
    COUNTER_UNIT = 3,
    EVENT_ANNOTATIONS = 4, EVENT_TYPE = 9, EVENT_NAME_IID = 10, EVENT_TRACK_UUID = 11,
    EVENT_COUNTER_VALUE = 30,
    EVENT_EXTRA_COUNTER_VALUES = 12, EVENT_EXTRA_COUNTER_TRACKS = 31, EVENT_FLOW_IDS = 47,
    EVENT_TERMINATING_FLOW_IDS = 48,
    ANNOTATION_NAME_IID = 1, ANNOTATION_UINT = 3, ANNOTATION_INT = 4, ANNOTATION_STRING = 6,
    ANNOTATION_POINTER = 7,
    INTERNED_EVENT_NAMES = 2, INTERNED_ANNOTATION_NAMES = 3, INTERNED_IID = 1,
    INTERNED_NAME = 2,
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3, COUNTER = 4 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };
enum { UNIT_SIZE_BYTES = 3 };

/* Argument names, interned once per sequence (iid = the enum's value). */
enum { A_BYTES = 1, A_ADDRESS, A_STREAM, A_DEVICE, A_STACK_ID, A_STACK, A_SITE, A_COUNT };
static const char *const arg_name[A_COUNT] = {"", "bytes", "address", "stream", "device",
                                              "stack id", "stack", "site"};

/* Names of events, interned: the text (owned by the trace) and its iid. */
typedef struct {
    const char **key;
    uint64_t *iid;
    size_t cap, n;
} name_map;

typedef struct {
    FILE *f;
    pb_buf b;
    const report_trace *t;
    uint32_t seq;           /* the packet sequence, 1 + the process's index */
    uint64_t next_track;    /* the next track's number in the process (uuid() below) */
    name_map names;
    const char *pending[4]; /* names first used by the packet being written */
    uint64_t pending_iid[4];
    int npending;
    int64_t *live;          /* per track */
    uint32_t *lane_of;      /* per allocation: its lane, numbered over the whole process */
    uint64_t *lane_uuid;    /* per lane, 0 until declared */
    unsigned char *stack_seen;
    size_t nlanes;
    uint32_t *threads;      /* thread numbers + 1 whose track is declared (a set, 0: empty) */
    uint64_t *thread_uuid;  /* beside threads: their tracks */
    size_t threads_cap, nthreads;
} pf;

/* Tracks are numbered in each process as they are declared, and a uuid is that number and the
 * process's sequence: small numbers, which are short varints in every event. */
#define SEQ_BITS 11 /* sequences 1 to REPORT_MAX_TRACES, 1024 */
_Static_assert(REPORT_MAX_TRACES < (1 << SEQ_BITS), "a sequence fits its bits");

static uint64_t uuid(const pf *w, uint64_t track)
{
    return track << SEQ_BITS | w->seq;
}

static uint64_t uuid_process(const pf *w)
{
    return uuid(w, 0);
}

static uint64_t uuid_counter(const pf *w, size_t track)
{
    return uuid(w, 1 + track);
}

/* A pool's two counters, after the kinds': its reserved bytes (in_use 0) and its blocks'. */
static uint64_t uuid_pool(const pf *w, size_t pool, int in_use)
{
    return uuid(w, 1 + w->t->ntracks + 2 * pool + (uint64_t)in_use);
}

static uint64_t hash_text(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The iid of name, new ones queued for the packet's interned data. 0 when out of memory. */
static uint64_t name_iid(pf *w, const char *name)
{
    name_map *m = &w->names;
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        const char **k = calloc(cap, sizeof *k);
        uint64_t *v = calloc(cap, sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            return 0;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->key[i]) {
                size_t j = hash_text(m->key[i]) & (cap - 1);
                while (k[j])
                    j = (j + 1) & (cap - 1);
                k[j] = m->key[i];
                v[j] = m->iid[i];
            }
        free(m->key);
        free(m->iid);
        m->key = k;
        m->iid = v;
        m->cap = cap;
    }
    size_t j = hash_text(name) & (m->cap - 1);
    while (m->key[j] && strcmp(m->key[j], name) != 0)
        j = (j + 1) & (m->cap - 1);
    if (m->key[j])
        return m->iid[j];
    m->key[j] = name;
    m->iid[j] = ++m->n;
    w->pending[w->npending] = name;
    w->pending_iid[w->npending++] = m->iid[j];
    return m->iid[j];
}

/* Ends the packet being written: its new names, then out to the file. */
static int packet_end(pf *w)
{
    if (w->npending) {
        size_t d = pb_open(&w->b, PACKET_INTERNED_DATA);
        for (int i = 0; i < w->npending; i++) {
            size_t e = pb_open(&w->b, INTERNED_EVENT_NAMES);
            pb_uint(&w->b, INTERNED_IID, w->pending_iid[i]);
            pb_string(&w->b, INTERNED_NAME, w->pending[i]);
            pb_close(&w->b, e);
        }
        pb_close(&w->b, d);
        w->npending = 0;
    }
    return pb_flush_as(&w->b, TRACE_PACKET, w->f);
}

static void packet_begin(pf *w, int64_t ts)
{
    pb_uint(&w->b, PACKET_TIMESTAMP, (uint64_t)(ts < 0 ? 0 : ts));
    pb_uint(&w->b, PACKET_SEQUENCE_ID, w->seq);
    pb_uint(&w->b, PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_STATE);
}

/* A track descriptor packet: uuid, name, parent; counter: a counter track in bytes. */
static int declare(pf *w, uint64_t uuid, const char *name, uint64_t parent, int counter)
{
    pb_uint(&w->b, PACKET_SEQUENCE_ID, w->seq);
    size_t d = pb_open(&w->b, PACKET_TRACK_DESCRIPTOR);
    pb_uint(&w->b, TRACK_UUID, uuid);
    pb_string(&w->b, TRACK_NAME, name);
    pb_uint(&w->b, TRACK_PARENT_UUID, parent);
    if (counter) {
        size_t c = pb_open(&w->b, TRACK_COUNTER);
        pb_uint(&w->b, COUNTER_UNIT, UNIT_SIZE_BYTES);
        pb_close(&w->b, c);
    }
    pb_close(&w->b, d);
    return pb_flush_as(&w->b, TRACE_PACKET, w->f);
}

/* Each pool's counters (the trace's "device pool 0x55d0c0 reserved, device 0"): what it
 * reserved from CUDA, and beside it what its blocks in use hold ("... in use, device 0"). */
static int declare_pools(pf *w)
{
    const report_trace *t = w->t;
    for (size_t p = 0; p < t->npools; p++) {
        const char *name = t->pool_names[p], *at = strstr(name, " reserved, device ");
        char in_use[1100];
        if (at)
            snprintf(in_use, sizeof in_use, "%.*s in use, device %s", (int)(at - name), name,
                     at + strlen(" reserved, device "));
        else
            snprintf(in_use, sizeof in_use, "%s, in use", name);
        if (declare(w, uuid_pool(w, p, 0), name, uuid_process(w), 1) != 0 ||
            declare(w, uuid_pool(w, p, 1), in_use, uuid_process(w), 1) != 0)
            return -1;
    }
    return 0;
}

/* The sequence's first packet: the argument names and the process. */
static int declare_process(pf *w, const char *file, size_t k, size_t n)
{
    const report_trace *t = w->t;
    pb_uint(&w->b, PACKET_TIMESTAMP, (uint64_t)t->t0);
    pb_uint(&w->b, PACKET_SEQUENCE_ID, w->seq);
    pb_uint(&w->b, PACKET_SEQUENCE_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE);
    size_t d = pb_open(&w->b, PACKET_INTERNED_DATA);
    for (int a = 1; a < A_COUNT; a++) {
        size_t e = pb_open(&w->b, INTERNED_ANNOTATION_NAMES);
        pb_uint(&w->b, INTERNED_IID, (uint64_t)a);
        pb_string(&w->b, INTERNED_NAME, arg_name[a]);
        pb_close(&w->b, e);
    }
    pb_close(&w->b, d);
    d = pb_open(&w->b, PACKET_TRACK_DESCRIPTOR);
    pb_uint(&w->b, TRACK_UUID, uuid_process(w));
    size_t p = pb_open(&w->b, TRACK_PROCESS);
    pb_uint(&w->b, PROCESS_PID, t->pid > 0 ? (uint64_t)t->pid : k + 1);
    /* Several processes (a job's ranks) are told apart by their trace files too. */
    char name[2048];
    const char *what = t->process ? t->process : "gpumem trace";
    if (n > 1)
        snprintf(name, sizeof name, "%s [%s]", what, file);
    else
        snprintf(name, sizeof name, "%s", what);
    pb_string(&w->b, PROCESS_NAME, name);
    pb_close(&w->b, p);
    pb_close(&w->b, d);
    if (pb_flush_as(&w->b, TRACE_PACKET, w->f) != 0)
        return -1;
    for (size_t i = 0; i < t->ntracks; i++) {
        char track[64];
        if (declare(w, uuid_counter(w, i), report_track_name(t, i, track, sizeof track),
                    uuid_process(w), 1) != 0)
            return -1;
    }
    return declare_pools(w);
}

/* The slot of thread tid in the set of declared thread tracks (tid + 1 there, or 0 where it
 * would go); the set grows when half full. SIZE_MAX when out of memory. */
static size_t thread_slot(pf *w, uint32_t tid)
{
    if ((w->nthreads + 1) * 2 > w->threads_cap) {
        size_t cap = w->threads_cap ? w->threads_cap * 2 : 64;
        uint32_t *s = calloc(cap, sizeof *s);
        uint64_t *u = calloc(cap, sizeof *u);
        if (!s || !u) {
            free(s);
            free(u);
            return SIZE_MAX;
        }
        for (size_t i = 0; i < w->threads_cap; i++) {
            if (!w->threads[i])
                continue;
            size_t j = (w->threads[i] * 2654435761u) & (cap - 1);
            while (s[j])
                j = (j + 1) & (cap - 1);
            s[j] = w->threads[i];
            u[j] = w->thread_uuid[i];
        }
        free(w->threads);
        free(w->thread_uuid);
        w->threads = s;
        w->thread_uuid = u;
        w->threads_cap = cap;
    }
    uint32_t v = tid + 1;
    size_t j = (v * 2654435761u) & (w->threads_cap - 1);
    while (w->threads[j] && w->threads[j] != v)
        j = (j + 1) & (w->threads_cap - 1);
    return j;
}

/* The track of thread tid, declared the first time it is used; 0 when out of memory. */
static uint64_t thread_track(pf *w, uint32_t tid)
{
    size_t j = thread_slot(w, tid);
    if (j == SIZE_MAX)
        return 0;
    if (w->threads[j])
        return w->thread_uuid[j];
    w->threads[j] = tid + 1;
    w->thread_uuid[j] = uuid(w, w->next_track++);
    w->nthreads++;
    char name[32];
    snprintf(name, sizeof name, "thread %u", tid);
    return declare(w, w->thread_uuid[j], name, uuid_process(w), 0) == 0 ? w->thread_uuid[j] : 0;
}

/* ---- lanes: the tracks of a call site, as many as it had allocations live at once ---- */

typedef struct {
    int64_t end;
    uint32_t lane;
} lane_end;

typedef struct {
    lane_end *v;
    size_t n, cap;
} lane_heap; /* a site's lanes in use, the one that frees first on top */

static void heap_down(lane_heap *h, size_t i)
{
    for (;;) {
        size_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < h->n && h->v[l].end < h->v[m].end)
            m = l;
        if (r < h->n && h->v[r].end < h->v[m].end)
            m = r;
        if (m == i)
            return;
        lane_end x = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = x;
        i = m;
    }
}

static int heap_push(lane_heap *h, lane_end e)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 4;
        lane_end *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    h->v[i] = e;
    while (i && h->v[(i - 1) / 2].end > h->v[i].end) {
        lane_end x = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = x;
        i = (i - 1) / 2;
    }
    return 0;
}

/* Each allocation on a lane of its site that was free before it began (a slice ending at the
 * same nanosecond as another begins would nest in it), else on a new one. */
static int assign_lanes(pf *w)
{
    const report_trace *t = w->t;
    lane_heap *heaps = calloc(t->nsites + 1, sizeof *heaps);
    w->lane_of = malloc((t->nallocs + 1) * sizeof *w->lane_of);
    int rc = heaps && w->lane_of ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < t->nevents; i++) {
        const report_event *e = &t->events[i];
        if (e->bytes < 0)
            continue;
        const report_alloc *a = &t->allocs[e->alloc];
        lane_heap *h = &heaps[a->site];
        uint32_t lane;
        if (h->n && h->v[0].end < a->t_alloc) {
            lane = h->v[0].lane;
            h->v[0] = h->v[--h->n];
            heap_down(h, 0);
        } else {
            lane = (uint32_t)w->nlanes++;
        }
        w->lane_of[e->alloc] = lane;
        rc = heap_push(h, (lane_end){a->t_release < 0 ? INT64_MAX : a->t_release, lane});
    }
    for (size_t i = 0; heaps && i < t->nsites; i++)
        free(heaps[i].v);
    free(heaps);
    w->lane_uuid = rc == 0 ? calloc(w->nlanes + 1, sizeof *w->lane_uuid) : NULL;
    return w->lane_uuid ? 0 : -1;
}

/* ---- events ---- */

static void arg_uint(pf *w, int name, uint64_t v, unsigned type)
{
    size_t d = pb_open(&w->b, EVENT_ANNOTATIONS);
    pb_uint(&w->b, ANNOTATION_NAME_IID, (uint64_t)name);
    pb_uint(&w->b, type, v);
    pb_close(&w->b, d);
}

static void arg_string(pf *w, int name, const char *v)
{
    size_t d = pb_open(&w->b, EVENT_ANNOTATIONS);
    pb_uint(&w->b, ANNOTATION_NAME_IID, (uint64_t)name);
    pb_string(&w->b, ANNOTATION_STRING, v);
    pb_close(&w->b, d);
}

/* The stack's frames as one text, innermost first, one a line. */
static void arg_stack(pf *w, char **frames)
{
    size_t n = 1;
    for (int i = 0; frames[i]; i++)
        n += strlen(frames[i]) + 1;
    char *text = malloc(n), *p = text;
    if (!text)
        return;
    *p = '\0';
    for (int i = 0; frames[i]; i++)
        p += sprintf(p, "%s%s", i ? "\n" : "", frames[i]);
    arg_string(w, A_STACK, text);
    free(text);
}

/* The slice's begin or end on its lane, with the live bytes of its kind and device after it. */
static int slice(pf *w, const report_event *e)
{
    const report_trace *t = w->t;
    const report_alloc *a = &t->allocs[e->alloc];
    uint32_t lane = w->lane_of[e->alloc];
    if (!w->lane_uuid[lane]) {
        w->lane_uuid[lane] = uuid(w, w->next_track++);
        if (declare(w, w->lane_uuid[lane], t->sites[a->site].name, uuid_process(w), 0) != 0)
            return -1;
    }
    w->live[e->track] = report_add_sat(w->live[e->track], e->bytes);
    uint64_t kind = e->bytes > 0 ? name_iid(w, gpumem_kind_name(t->tracks[e->track].kind)) : 0;
    packet_begin(w, t->t0 + e->t);
    size_t d = pb_open(&w->b, PACKET_TRACK_EVENT);
    pb_uint(&w->b, EVENT_TYPE, e->bytes > 0 ? SLICE_BEGIN : SLICE_END);
    pb_uint(&w->b, EVENT_TRACK_UUID, w->lane_uuid[lane]);
    pb_uint(&w->b, EVENT_EXTRA_COUNTER_TRACKS, uuid_counter(w, e->track));
    pb_uint(&w->b, EVENT_EXTRA_COUNTER_VALUES, (uint64_t)(w->live[e->track] < 0 ? 0 : w->live[e->track]));
    if (e->bytes > 0) {
        pb_uint(&w->b, EVENT_NAME_IID, kind);
        arg_uint(w, A_BYTES, (uint64_t)a->bytes, ANNOTATION_UINT);
        arg_uint(w, A_ADDRESS, a->address, ANNOTATION_POINTER);
        if (a->stream)
            arg_uint(w, A_STREAM, a->stream, ANNOTATION_POINTER);
        arg_uint(w, A_DEVICE, (uint64_t)t->tracks[e->track].device, ANNOTATION_INT);
        long s = report_stack_index(t, a->stack);
        if (s >= 0) {
            arg_uint(w, A_STACK_ID, a->stack, ANNOTATION_UINT);
            if (!w->stack_seen[s]) {
                w->stack_seen[s] = 1;
                arg_stack(w, t->stack_frames[s]);
            }
        }
    }
    pb_close(&w->b, d);
    return packet_end(w);
}

/* Where the thread allocated or released, with the flow between the two. */
static int call(pf *w, const report_event *e, uint64_t flow)
{
    const report_trace *t = w->t;
    const report_alloc *a = &t->allocs[e->alloc];
    int alloc = e->bytes > 0;
    uint64_t track = thread_track(w, alloc ? a->thread : a->release_thread);
    if (!track)
        return -1;
    const char *what = alloc ? t->sites[a->site].name
                       : a->released_at != UINT32_MAX ? t->release_names[a->released_at]
                                                      : "release";
    uint64_t name = name_iid(w, what);
    packet_begin(w, t->t0 + e->t);
    size_t d = pb_open(&w->b, PACKET_TRACK_EVENT);
    pb_uint(&w->b, EVENT_TYPE, INSTANT);
    pb_uint(&w->b, EVENT_TRACK_UUID, track);
    pb_uint(&w->b, EVENT_NAME_IID, name);
    arg_uint(w, A_BYTES, (uint64_t)a->bytes, ANNOTATION_UINT);
    pb_fixed64(&w->b, alloc ? EVENT_FLOW_IDS : EVENT_TERMINATING_FLOW_IDS, flow);
    pb_close(&w->b, d);
    return packet_end(w);
}

/* A pool's reserved bytes and its blocks' in use, when they changed. */
static int pool_sample(pf *w, const report_pool_sample *s)
{
    packet_begin(w, w->t->t0 + s->t);
    size_t d = pb_open(&w->b, PACKET_TRACK_EVENT);
    pb_uint(&w->b, EVENT_TYPE, COUNTER);
    pb_uint(&w->b, EVENT_TRACK_UUID, uuid_pool(w, s->pool, 0));
    pb_uint(&w->b, EVENT_COUNTER_VALUE, s->reserved);
    pb_uint(&w->b, EVENT_EXTRA_COUNTER_TRACKS, uuid_pool(w, s->pool, 1));
    pb_uint(&w->b, EVENT_EXTRA_COUNTER_VALUES, s->in_use);
    pb_close(&w->b, d);
    return packet_end(w);
}

/* A checkpoint or a failed allocation: an instant on the process's track. */
static int mark(pf *w, int64_t ts, const char *what, const report_failure *f)
{
    uint64_t name = name_iid(w, what);
    packet_begin(w, w->t->t0 + ts);
    size_t d = pb_open(&w->b, PACKET_TRACK_EVENT);
    pb_uint(&w->b, EVENT_TYPE, INSTANT);
    pb_uint(&w->b, EVENT_TRACK_UUID, uuid_process(w));
    pb_uint(&w->b, EVENT_NAME_IID, name);
    if (f) {
        arg_uint(w, A_BYTES, (uint64_t)(f->bytes < 0 ? 0 : f->bytes), ANNOTATION_UINT);
        arg_uint(w, A_DEVICE, (uint64_t)f->device, ANNOTATION_INT);
        arg_string(w, A_SITE, f->site);
    }
    pb_close(&w->b, d);
    return packet_end(w);
}

static const report_trace *order_trace;

static int failure_by_time(const void *x, const void *y)
{
    int64_t a = order_trace->failures[*(const uint32_t *)x].t;
    int64_t b = order_trace->failures[*(const uint32_t *)y].t;
    return (a > b) - (a < b);
}

static int checkpoint_by_time(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Every event of one trace in time order: allocations, releases, checkpoints, failures. */
static int events(pf *w, uint64_t flow_base)
{
    const report_trace *t = w->t;
    uint32_t *fail = malloc((t->nfailures + 1) * sizeof *fail);
    int64_t *cps = malloc((t->ncheckpoints + 1) * sizeof *cps);
    int rc = fail && cps ? 0 : -1;
    for (size_t i = 0; fail && i < t->nfailures; i++)
        fail[i] = (uint32_t)i;
    if (rc == 0) {
        order_trace = t;
        qsort(fail, t->nfailures, sizeof *fail, failure_by_time);
        if (t->ncheckpoints) /* none: t->checkpoints is NULL, which memcpy may not get */
            memcpy(cps, t->checkpoints, t->ncheckpoints * sizeof *cps);
        qsort(cps, t->ncheckpoints, sizeof *cps, checkpoint_by_time);
    }
    size_t fi = 0, ci = 0, pi = 0;
    for (size_t i = 0; rc == 0 && i <= t->nevents; i++) {
        int64_t now = i < t->nevents ? t->events[i].t : INT64_MAX;
        while (rc == 0 && pi < t->npool_samples && t->pool_samples[pi].t <= now)
            rc = pool_sample(w, &t->pool_samples[pi++]);
        while (rc == 0 && ci < t->ncheckpoints && cps[ci] <= now)
            rc = mark(w, cps[ci++], "checkpoint", NULL);
        while (rc == 0 && fi < t->nfailures && t->failures[fail[fi]].t <= now) {
            const report_failure *f = &t->failures[fail[fi++]];
            rc = mark(w, f->t, f->what, f);
        }
        if (rc == 0 && i < t->nevents) {
            const report_event *e = &t->events[i];
            uint64_t flow = flow_base + e->alloc;
            rc = e->bytes > 0 ? slice(w, e) || call(w, e, flow) : call(w, e, flow) || slice(w, e);
        }
    }
    free(fail);
    free(cps);
    return rc;
}

static int one_trace(FILE *f, const report_trace *t, const char *file, size_t k, size_t n)
{
    pf w = {.f = f, .t = t, .seq = (uint32_t)(k + 1),
            .next_track = 1 + t->ntracks + 2 * t->npools};
    w.live = calloc(t->ntracks + 1, sizeof *w.live);
    w.stack_seen = calloc(t->nstacks + 1, 1);
    int rc = -1;
    if (w.live && w.stack_seen && assign_lanes(&w) == 0 && declare_process(&w, file, k, n) == 0)
        rc = events(&w, (uint64_t)(k + 1) << 40);
    rc = rc == 0 && !w.b.failed ? 0 : -1;
    pb_free(&w.b);
    free(w.names.key);
    free(w.names.iid);
    free(w.live);
    free(w.lane_of);
    free(w.lane_uuid);
    free(w.stack_seen);
    free(w.threads);
    free(w.thread_uuid);
    return rc;
}

int report_perfetto(const report_trace *traces, const char *const *names, size_t n,
                    const char *out_path, char *err, size_t errn)
{
    FILE *f = fopen(out_path, "wb");
    if (!f) {
        snprintf(err, errn, "cannot write %s: %s", out_path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < n; k++)
        rc = one_trace(f, &traces[k], names[k], k, n);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed || rc != 0) {
        snprintf(err, errn, "writing %s failed: %s (the file is incomplete)", out_path,
                 failed || !rc ? strerror(errno ? errno : EIO) : "out of memory");
        return -1;
    }
    return 0;
}

/* The event log: per-thread buffers, one writer thread, Chrome trace event JSON (trace.h).
 *
 * Recording must stay far cheaper than the allocation it records (the target is under 100 ns
 * for an allocation and its release together), so a recording thread only fills a slot of its
 * own buffer: a timestamp, the record's fields and the live bytes of the (kind, device) pair
 * from one atomic add. Text is made on the writer thread, one JSON event a line, so that a
 * trace cut short by a crash is still readable line by line up to where it stops. Events of
 * different threads reach the file out of order (a buffer is written when it is full); every
 * event has its timestamp and readers sort by it. The end of the file carries the stacks (each
 * once, symbolized then, as reports do at exit) and a marker that the trace is complete. */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backtrace.h"

atomic_int gpumem__trace_on;

enum { EV_ALLOC = 1, EV_RELEASE, EV_CHECKPOINT, EV_FAILED };

/* One event as recorded: plain values only, strings are the caller's static literals (call
 * sites, CUDA call names), which outlive the writer. */
typedef struct {
    uint64_t ns;
    uint64_t id;    /* the allocation's seq; the checkpoint's seq */
    uint64_t bytes;
    uint64_t live;  /* live bytes of (kind, device) after the event */
    uintptr_t base, stream;
    gpumem_site site;  /* the allocation's */
    gpumem_site where; /* the release's; its func alone names gpumem check's release call */
    uint32_t stack, thread;
    int device;
    int code, cuda_error;
    unsigned char type, kind;
} trace_ev;

#define BATCH 1024
/* Full buffers waiting for the writer, at most: a program that allocates faster than the
 * writer writes waits for it here rather than growing without bound (64 Mi events a second
 * would otherwise take 7 GiB a minute). 256 buffers are 28 MiB. */
#define MAX_QUEUED 256

typedef struct trace_buf {
    struct trace_buf *next;
    atomic_uint n;
    trace_ev ev[BATCH];
} trace_buf;

/* A recording thread's state, in the list that the exit-time finish walks. */
typedef struct trace_slot {
    struct trace_slot *next;
    _Atomic(trace_buf *) cur;
} trace_slot;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* everything below */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static trace_slot *slots;
static trace_buf *queue_head, *queue_tail, *spare;
static unsigned queued;
static pthread_cond_t drained = PTHREAD_COND_INITIALIZER;
static atomic_uint_fast64_t waits;
static int stopping, opened, closed;
static pthread_t writer;
static void (*writer_setup)(void);
static pthread_key_t slot_key;

static FILE *file;
static char path_text[4096];
static const char *tool_name = "gpumem";
static int write_failed;
static atomic_uint_fast64_t recorded, dropped;

static atomic_uint_fast64_t live_bytes[GPUMEM_KIND_COUNT_][GPUMEM_STATS_DEVICES];

static _Thread_local trace_slot *my_slot;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A fresh buffer: a spare one when there is, else from malloc. Under lock. */
static trace_buf *buf_get(void)
{
    trace_buf *b = spare;
    if (b)
        spare = b->next;
    else
        b = malloc(sizeof *b);
    if (b) {
        b->next = NULL;
        atomic_store_explicit(&b->n, 0, memory_order_relaxed);
    }
    return b;
}

/* Hands a buffer to the writer. Under lock. */
static void buf_queue(trace_buf *b)
{
    b->next = NULL;
    if (queue_tail)
        queue_tail->next = b;
    else
        queue_head = b;
    queue_tail = b;
    queued++;
    pthread_cond_signal(&wake);
}

/* A thread that ends gives its buffer to the writer. */
static void slot_release(void *arg)
{
    trace_slot *s = arg;
    pthread_mutex_lock(&lock);
    trace_buf *b = atomic_exchange(&s->cur, NULL);
    if (b && atomic_load(&b->n) > 0 && !closed)
        buf_queue(b);
    else if (b)
        free(b);
    for (trace_slot **p = &slots; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    free(s);
    my_slot = NULL; /* destructors run on the thread that ends: an event after this starts anew */
}

static trace_slot *slot_make(void)
{
    trace_slot *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_lock(&lock);
    if (closed) {
        pthread_mutex_unlock(&lock);
        free(s);
        return NULL;
    }
    atomic_init(&s->cur, buf_get());
    s->next = slots;
    slots = s;
    pthread_mutex_unlock(&lock);
    pthread_setspecific(slot_key, s);
    return s;
}

/* The slot to fill for this thread, or NULL (the event is dropped); *out is its buffer. */
static trace_ev *ev_next(trace_buf **out)
{
    trace_slot *s = my_slot;
    if (GPUMEM__UNLIKELY(!s) && !(s = my_slot = slot_make())) {
        atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
        return NULL;
    }
    trace_buf *b = atomic_load_explicit(&s->cur, memory_order_acquire);
    if (GPUMEM__UNLIKELY(!b || atomic_load_explicit(&b->n, memory_order_relaxed) == BATCH)) {
        pthread_mutex_lock(&lock);
        b = atomic_load_explicit(&s->cur, memory_order_relaxed);
        if (b && !closed)
            buf_queue(b);
        if (queued > MAX_QUEUED && !closed) {
            atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
            while (queued > MAX_QUEUED / 2 && !closed)
                pthread_cond_wait(&drained, &lock);
        }
        b = closed ? NULL : buf_get();
        atomic_store_explicit(&s->cur, b, memory_order_release);
        pthread_mutex_unlock(&lock);
        if (!b) {
            atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
            return NULL;
        }
    }
    *out = b;
    return &b->ev[atomic_load_explicit(&b->n, memory_order_relaxed)];
}

/* Publishes the slot ev_next gave: the writer reads only events below n, and only this
 * thread writes n (a plain store, no locked instruction). */
static void ev_done(trace_buf *b)
{
    unsigned n = atomic_load_explicit(&b->n, memory_order_relaxed);
    atomic_store_explicit(&b->n, n + 1, memory_order_release);
}

/* An allocation's or a release's event, with what the record says filled in; the kind's live
 * bytes on its device move by the record's bytes (up for an allocation, down for a release).
 * NULL when the event cannot be kept. */
static trace_ev *rec_event(trace_buf **b, int type, const gpumem__rec *r)
{
    trace_ev *e = ev_next(b);
    if (!e)
        return NULL;
    atomic_uint_fast64_t *live = &live_bytes[r->kind][gpumem__dev_slot(r->device)];
    e->type = type;
    e->ns = now_ns();
    e->id = r->seq;
    e->bytes = r->bytes;
    e->live = type == EV_ALLOC
                  ? atomic_fetch_add_explicit(live, r->bytes, memory_order_relaxed) + r->bytes
                  : atomic_fetch_sub_explicit(live, r->bytes, memory_order_relaxed) - r->bytes;
    e->base = r->base;
    e->site = r->site;
    e->stack = r->stack;
    e->device = r->device;
    e->kind = r->kind;
    return e;
}

void gpumem__trace_alloc(const gpumem__rec *r)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = rec_event(&b, EV_ALLOC, r);
    if (!e)
        return;
    e->stream = (uintptr_t)r->stream;
    e->thread = r->thread;
    ev_done(b);
}

void gpumem__trace_release(const gpumem__rec *r, gpumem_site site, const char *call)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = rec_event(&b, EV_RELEASE, r);
    if (!e)
        return;
    e->where = site;
    if (!site.file && call)
        e->where.func = call;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_checkpoint(uint64_t seq)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = ev_next(&b);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->type = EV_CHECKPOINT;
    e->ns = now_ns();
    e->id = seq;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_failed(int kind, uint64_t bytes, int device, gpumem_site site, uint32_t stack,
                          int code, int cuda_error)
{
    if (!gpumem__tracing())
        return;
    trace_buf *b;
    trace_ev *e = ev_next(&b);
    if (!e)
        return;
    memset(e, 0, sizeof *e);
    e->type = EV_FAILED;
    e->ns = now_ns();
    e->bytes = bytes;
    e->kind = (unsigned char)(kind > 0 && kind < GPUMEM_KIND_COUNT_ ? kind : 0);
    e->live = atomic_load_explicit(&live_bytes[e->kind][gpumem__dev_slot(device)],
                                   memory_order_relaxed);
    e->device = device;
    e->site = site;
    e->stack = stack;
    e->code = code;
    e->cuda_error = cuda_error;
    e->thread = gpumem__thread_id();
    ev_done(b);
}

void gpumem__trace_counts(uint64_t *rec, uint64_t *drop, uint64_t *waited)
{
    if (waited)
        *waited = atomic_load(&waits);
    if (rec)
        *rec = atomic_load(&recorded);
    if (drop)
        *drop = atomic_load(&dropped);
}

/* ---- text ---- */

typedef struct {
    char *p;
    size_t n, cap;
} text;

static void put_n(text *t, const char *s, size_t n)
{
    if (t->n + n > t->cap) {
        size_t cap = t->cap ? t->cap : 1 << 16;
        while (cap < t->n + n)
            cap *= 2;
        char *grown = realloc(t->p, cap);
        if (!grown)
            return; /* out of host memory: this line is cut, the reader says so */
        t->p = grown;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
}

static void put(text *t, const char *s)
{
    put_n(t, s, strlen(s));
}

static void put_u64(text *t, uint64_t v)
{
    char d[24];
    int i = 24;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put_n(t, d + i, (size_t)(24 - i));
}

static void put_i64(text *t, int64_t v)
{
    if (v < 0) {
        put_n(t, "-", 1);
        put_u64(t, (uint64_t)(-(v + 1)) + 1);
    } else {
        put_u64(t, (uint64_t)v);
    }
}

static void put_hex(text *t, uint64_t v)
{
    char d[20];
    int i = 20;
    do {
        d[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    d[--i] = 'x';
    d[--i] = '0';
    put_n(t, d + i, (size_t)(20 - i));
}

/* Microseconds with three decimals: the trace event format's unit, to the nanosecond. */
static void put_ts(text *t, uint64_t ns)
{
    char frac[4] = {(char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
                    (char)('0' + ns % 10), 0};
    put_u64(t, ns / 1000);
    put_n(t, ".", 1);
    put_n(t, frac, 3);
}

/* s as a JSON string, quotes included. */
static void put_json_str(text *t, const char *s)
{
    put_n(t, "\"", 1);
    for (const char *c = s ? s : ""; *c; c++) {
        unsigned char ch = (unsigned char)*c;
        if (ch == '"' || ch == '\\') {
            char esc[2] = {'\\', (char)ch};
            put_n(t, esc, 2);
        } else if (ch < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            put(t, esc);
        } else {
            put_n(t, c, 1);
        }
    }
    put_n(t, "\"", 1);
}

/* "file:line (func)" of a stack's innermost frame; "" when unknown. */
static void frame_text(const gpumem__frame *f, char *buf, size_t n)
{
    if (f->file)
        snprintf(buf, n, "%s:%d (%s)", f->file, f->line, f->func);
    else
        snprintf(buf, n, "%s (in %s)", f->func, f->object ? f->object : "?");
}

/* The name of an allocation's track: its call site; for `gpumem check`, which has no site of
 * its own, the innermost frame of the stack, else the CUDA call's name. */
static void site_name(const gpumem_site *site, uint32_t stack, char *buf, size_t n)
{
    gpumem__frame f;
    if (site->file)
        gpumem__site_str(*site, buf, n);
    else if (stack && gpumem__stack_frames(stack, &f, 1) == 1)
        frame_text(&f, buf, n);
    else
        snprintf(buf, n, "%s", site->func ? site->func : "(unknown site)");
}

/* Stack ids that events named: each is written once, at the end. */
static uint32_t *seen;
static size_t seen_n, seen_cap;

static void stack_seen(uint32_t id)
{
    if (!id)
        return;
    if (seen_n * 2 >= seen_cap) {
        size_t cap = seen_cap ? seen_cap * 2 : 1024;
        uint32_t *grown = calloc(cap, sizeof *grown);
        if (!grown)
            return;
        for (size_t i = 0; i < seen_cap; i++) {
            if (!seen[i])
                continue;
            size_t j = (seen[i] * 2654435761u) & (cap - 1);
            while (grown[j])
                j = (j + 1) & (cap - 1);
            grown[j] = seen[i];
        }
        free(seen);
        seen = grown;
        seen_cap = cap;
    }
    size_t j = (id * 2654435761u) & (seen_cap - 1);
    while (seen[j] && seen[j] != id)
        j = (j + 1) & (seen_cap - 1);
    if (!seen[j]) {
        seen[j] = id;
        seen_n++;
    }
}

/* Names as JSON text, quotes included, cached by (site, stack): making them (a format, a
 * stack lookup, escaping) is most of the writer's time otherwise. Direct-mapped; a slot that
 * two names share is remade when they alternate. Writer thread only. */
typedef struct {
    const char *file, *func;
    int line;
    uint32_t stack;
    char *json;
    size_t len;
} name_slot;

static name_slot names[4096];

static void put_name(text *t, const gpumem_site *site, uint32_t stack, int released_at)
{
    uintptr_t h = ((uintptr_t)site->file * 31 + (uintptr_t)site->func) * 31 +
                  (uintptr_t)site->line * 7 + stack * 13u + (uintptr_t)released_at;
    name_slot *n = &names[(h ^ (h >> 12)) & 4095];
    if (!n->json || n->file != site->file || n->func != site->func || n->line != site->line ||
        n->stack != stack + (uint32_t)released_at * 0x80000000u) {
        char raw[512];
        if (!released_at)
            site_name(site, stack, raw, sizeof raw);
        else if (site->file)
            gpumem__site_str(*site, raw, sizeof raw);
        else
            snprintf(raw, sizeof raw, "%s", site->func ? site->func : "");
        text q = {0};
        put_json_str(&q, raw);
        free(n->json);
        *n = (name_slot){site->file, site->func, site->line,
                         stack + (uint32_t)released_at * 0x80000000u, q.p, q.n};
    }
    put_n(t, n->json, n->len);
}

static long pid;

static void put_head(text *t, const trace_ev *e, const char *ph)
{
    put(t, "{\"ph\":\"");
    put(t, ph);
    put(t, "\",\"pid\":");
    put_i64(t, pid);
    put(t, ",\"tid\":");
    put_u64(t, e->thread);
    put(t, ",\"ts\":");
    put_ts(t, e->ns);
}

static void put_counter(text *t, const trace_ev *e)
{
    put_head(t, e, "C");
    put(t, ",\"name\":\"");
    put(t, gpumem_kind_name(e->kind));
    put(t, " memory, device ");
    put_i64(t, e->device);
    put(t, "\",\"args\":{\"bytes\":");
    put_u64(t, e->live);
    put(t, "}},\n");
}

/* The trace event format's own stack reference: "sf" names the innermost frame of the
 * stackFrames table at the end of the file (frame K of stack S is "S.K", innermost 0). */
static void put_sf(text *t, uint32_t stack)
{
    if (!stack)
        return;
    put(t, ",\"sf\":\"");
    put_u64(t, stack);
    put(t, ".0\"");
}

static void format_event(text *t, const trace_ev *e)
{
    char name[512];
    switch (e->type) {
    case EV_ALLOC:
    case EV_RELEASE:
        stack_seen(e->stack);
        put_head(t, e, e->type == EV_ALLOC ? "b" : "e");
        put(t, ",\"cat\":\"");
        put(t, gpumem_kind_name(e->kind));
        put(t, "\",\"name\":");
        put_name(t, &e->site, e->stack, 0);
        put(t, ",\"id\":\"");
        put_hex(t, e->id);
        put(t, "\",\"args\":{\"bytes\":");
        put_u64(t, e->bytes);
        put(t, ",\"device\":");
        put_i64(t, e->device);
        put(t, ",\"address\":\"");
        put_hex(t, e->base);
        if (e->type == EV_ALLOC) {
            put(t, "\",\"stream\":\"");
            put_hex(t, e->stream);
            put(t, "\",\"stack\":");
            put_u64(t, e->stack);
            if (!e->site.file && e->site.func) {
                put(t, ",\"call\":");
                put_json_str(t, e->site.func);
            }
        } else {
            put(t, "\",\"released_at\":");
            put_name(t, &e->where, 0, 1);
        }
        put(t, "}");
        put_sf(t, e->type == EV_ALLOC ? e->stack : 0);
        put(t, "},\n");
        put_counter(t, e);
        break;
    case EV_CHECKPOINT:
        put_head(t, e, "i");
        put(t, ",\"s\":\"g\",\"name\":\"checkpoint\",\"args\":{\"seq\":");
        put_u64(t, e->id);
        put(t, "}},\n");
        break;
    case EV_FAILED:
        site_name(&e->site, e->stack, name, sizeof name);
        stack_seen(e->stack);
        put_head(t, e, "i");
        put(t, ",\"s\":\"g\",\"name\":\"");
        put(t, e->code == GPUMEM_ENOMEM ? "out of memory" : "failed allocation");
        put(t, "\",\"args\":{\"kind\":\"");
        put(t, gpumem_kind_name(e->kind));
        put(t, "\",\"bytes\":");
        put_u64(t, e->bytes);
        put(t, ",\"device\":");
        put_i64(t, e->device);
        put(t, ",\"site\":");
        put_json_str(t, name);
        put(t, ",\"stack\":");
        put_u64(t, e->stack);
        put(t, ",\"live\":");
        put_u64(t, e->live);
        if (e->cuda_error) {
            const char *cn = gpumem__cuda_error_name(e->cuda_error);
            put(t, ",\"cuda_error\":");
            put_json_str(t, cn ? cn : "unknown");
        }
        put(t, "}");
        put_sf(t, e->stack);
        put(t, "},\n");
        break;
    default:
        break;
    }
}

/* Writes t out (writer thread or the finish, never both at once); a failure is reported
 * once, and nothing more is written after it. */
static void flush_text(text *t)
{
    if (!write_failed && t->n && fwrite(t->p, 1, t->n, file) != t->n) {
        write_failed = errno ? errno : EIO;
        fprintf(stderr,
                "gpumem: error: writing the trace to %s failed (%s); the trace is incomplete\n"
                "  hint: free space there, or choose another file with %s\n",
                path_text, strerror(write_failed),
                strcmp(tool_name, "gpumem") == 0 ? "GPUMEM_TRACE" : "--trace");
    }
    t->n = 0;
}

static void write_buffer(text *t, trace_buf *b)
{
    unsigned n = atomic_load_explicit(&b->n, memory_order_acquire);
    atomic_fetch_add_explicit(&recorded, n, memory_order_relaxed);
    for (unsigned i = 0; i < n; i++)
        format_event(t, &b->ev[i]);
    if (t->n > (1u << 20))
        flush_text(t);
}

static void *writer_main(void *arg)
{
    (void)arg;
    if (writer_setup)
        writer_setup();
    text t = {0};
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!queue_head && !stopping)
            pthread_cond_wait(&wake, &lock);
        trace_buf *list = queue_head;
        queue_head = queue_tail = NULL;
        queued = 0;
        if (!list && stopping)
            break;
        pthread_mutex_unlock(&lock);
        for (trace_buf *b = list; b; b = b->next)
            write_buffer(&t, b);
        flush_text(&t);
        pthread_mutex_lock(&lock);
        pthread_cond_broadcast(&drained);
        while (list) { /* back to the spares */
            trace_buf *next = list->next;
            list->next = spare;
            spare = list;
            list = next;
        }
    }
    pthread_mutex_unlock(&lock);
    free(t.p);
    return NULL;
}

static void finish_at_exit(void)
{
    gpumem__trace_close();
}

/* fork() happens with the lock held, so that the child's copy of the state is consistent.
 * The child has no writer thread and shares the file with its parent: a child that goes on
 * without exec records nothing (one that execs starts afresh). */
static void before_fork(void)
{
    pthread_mutex_lock(&lock);
}

static void in_parent(void)
{
    pthread_mutex_unlock(&lock);
}

static void in_child(void)
{
    atomic_store(&gpumem__trace_on, 0);
    closed = 1;
    file = NULL;
    pthread_mutex_unlock(&lock);
}

/* fork.c's handlers call the trace's first: the trace frees buffers under its lock, and free
 * may take the registration cache's lock (reghooks.c), which comes last. */
void gpumem__trace_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        before_fork();
    else if (phase == GPUMEM__FORK_PARENT)
        in_parent();
    else if (opened)
        in_child();
    else
        pthread_mutex_unlock(&lock); /* no trace in the parent: the child may open its own */
}

static void expand_pid(const char *pattern, char *out, size_t n)
{
    size_t o = 0;
    for (const char *c = pattern; *c && o + 24 < n; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            o += (size_t)snprintf(out + o, n - o, "%ld", (long)getpid());
            c++;
        } else {
            out[o++] = *c;
        }
    }
    out[o] = '\0';
}

void gpumem__command_line(char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen("/proc/self/cmdline", "re");
    if (!f)
        return;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = '\0';
    for (size_t i = 0; i + 1 < got; i++)
        if (buf[i] == '\0' || buf[i] == '\n')
            buf[i] = ' ';
}

int gpumem__trace_open(const char *path, const char *tool, void (*writer_init)(void))
{
    pthread_mutex_lock(&lock);
    if (opened) {
        pthread_mutex_unlock(&lock);
        return 0;
    }
    expand_pid(path, path_text, sizeof path_text);
    tool_name = tool;
    file = fopen(path_text, "w");
    if (!file) {
        int err = errno;
        pthread_mutex_unlock(&lock);
        fprintf(stderr,
                "gpumem: error: cannot write the trace to %s (%s); nothing will be recorded\n"
                "  hint: check that the folder exists and can be written\n",
                path_text, strerror(err));
        return -1;
    }
    opened = 1;
    pid = (long)getpid();
    writer_setup = writer_init;
    pthread_key_create(&slot_key, slot_release);
    char cmd[1024];
    gpumem__command_line(cmd, sizeof cmd);
    text t = {0};
    put(&t, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    put(&t, "{\"ph\":\"M\",\"pid\":");
    put_i64(&t, pid);
    put(&t, ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":");
    char pname[1100];
    snprintf(pname, sizeof pname, "%s: %s", tool, cmd);
    put_json_str(&t, pname);
    put(&t, "}},\n{\"ph\":\"M\",\"pid\":");
    put_i64(&t, pid);
    put(&t, ",\"tid\":0,\"name\":\"gpumem_trace\",\"args\":{\"schema\":\"gpumem-trace/1\","
            "\"tool\":");
    put_json_str(&t, tool);
    put(&t, ",\"version\":\"");
    put(&t, gpumem_version());
    put(&t, "\",\"clock\":\"CLOCK_MONOTONIC\",\"start_ts\":");
    put_ts(&t, now_ns());
    put(&t, "}},\n");
    flush_text(&t);
    free(t.p);
    if (pthread_create(&writer, NULL, writer_main, NULL) != 0) {
        fclose(file);
        file = NULL;
        closed = 1;
        pthread_mutex_unlock(&lock);
        fprintf(stderr, "gpumem: error: cannot start the trace's writer thread; nothing will "
                        "be recorded in %s\n", path_text);
        return -1;
    }
    gpumem__fork_setup(); /* fork.c calls the handlers above, in the library's lock order */
    atexit(finish_at_exit);
    atomic_store(&gpumem__trace_on, 1);
    pthread_mutex_unlock(&lock);
    return 0;
}

int gpumem__trace_close(void)
{
    pthread_mutex_lock(&lock);
    if (!opened || closed) {
        int failed = write_failed != 0;
        pthread_mutex_unlock(&lock);
        return failed ? -1 : 0;
    }
    atomic_store(&gpumem__trace_on, 0);
    closed = 1;
    /* What every thread recorded so far; a thread still inside a hook may finish its event
     * after this, unseen (the buffer stays allocated, so that is harmless). */
    for (trace_slot *s = slots; s; s = s->next) {
        trace_buf *b = atomic_exchange(&s->cur, NULL);
        if (b)
            buf_queue(b);
    }
    stopping = 1;
    pthread_cond_signal(&wake);
    pthread_cond_broadcast(&drained);
    pthread_mutex_unlock(&lock);
    pthread_join(writer, NULL);

    /* The end: the stacks that events named, then the totals. */
    text t = {0};
    trace_ev end = {.ns = now_ns()};
    put_head(&t, &end, "M");
    put(&t, ",\"name\":\"gpumem_stacks\",\"args\":{\"stacks\":{");
    int first = 1;
    for (size_t i = 0; i < seen_cap; i++) {
        if (!seen[i])
            continue;
        gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
        int n = gpumem__stack_frames(seen[i], f, GPUMEM__STACK_MAX_FRAMES);
        put(&t, first ? "\"" : ",\"");
        first = 0;
        put_u64(&t, seen[i]);
        put(&t, "\":[");
        for (int k = 0; k < n; k++) {
            char fr[1024];
            frame_text(&f[k], fr, sizeof fr);
            if (k)
                put(&t, ",");
            put_json_str(&t, fr);
        }
        put(&t, "]");
    }
    put(&t, "}}},\n");
    put_head(&t, &end, "M");
    put(&t, ",\"name\":\"gpumem_end\",\"args\":{\"events\":");
    put_u64(&t, atomic_load(&recorded));
    put(&t, ",\"dropped\":");
    put_u64(&t, atomic_load(&dropped));
    put(&t, ",\"end_ts\":");
    put_ts(&t, end.ns);
    put(&t, "}}\n],\n\"stackFrames\":{");
    /* The same stacks as the trace event format's frame tree, for viewers that show "sf". */
    first = 1;
    for (size_t i = 0; i < seen_cap; i++) {
        if (!seen[i])
            continue;
        gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
        int n = gpumem__stack_frames(seen[i], f, GPUMEM__STACK_MAX_FRAMES);
        for (int k = 0; k < n; k++) {
            char fr[1024];
            frame_text(&f[k], fr, sizeof fr);
            put(&t, first ? "\n\"" : ",\n\"");
            first = 0;
            put_u64(&t, seen[i]);
            put(&t, ".");
            put_u64(&t, (uint64_t)k);
            put(&t, "\":{\"name\":");
            put_json_str(&t, fr);
            if (k + 1 < n) {
                put(&t, ",\"parent\":\"");
                put_u64(&t, seen[i]);
                put(&t, ".");
                put_u64(&t, (uint64_t)k + 1);
                put(&t, "\"");
            }
            put(&t, "}");
        }
    }
    put(&t, "\n}}\n");
    flush_text(&t);
    free(t.p);
    errno = 0;
    if (fflush(file) != 0) {
        if (!write_failed) {
            write_failed = errno ? errno : EIO;
            fprintf(stderr,
                    "gpumem: error: writing the trace to %s failed (%s); the trace is "
                    "incomplete\n  hint: free space there, or choose another file\n",
                    path_text, strerror(write_failed));
        }
    }
    if (fclose(file) != 0 && !write_failed) {
        write_failed = errno ? errno : EIO;
        fprintf(stderr, "gpumem: error: closing the trace %s failed (%s); the trace is "
                        "incomplete\n", path_text, strerror(write_failed));
    }
    file = NULL;
    return write_failed ? -1 : 0;
}

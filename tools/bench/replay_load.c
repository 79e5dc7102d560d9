/* `gpumem bench --replay`: a program's allocations read back, from a gpumem trace
 * (GPUMEM_TRACE, gpumem check --trace: Chrome trace JSON, one event a line) or from a replay
 * log, and the replay log written (the form PyTorch's side of the replay reads). Pure: no
 * CUDA; tests/bench/ checks it on files it writes.
 *
 * The replay log: a first line "gpumem-replay 1", then one operation a line in the program's
 * order: "a ID BYTES STREAM THREAD NS" for an allocation (STREAM a hexadecimal handle, NS ns
 * since the start), "f ID THREAD NS" for its release. Lines starting with '#' are comments.
 * It is a tenth the size of the trace it came from, and compresses well: either file may be
 * read gzipped (FILE.gz as gzip wrote it), through zlib where the build found it. */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#ifdef GPUMEM_HAVE_ZLIB
#include <zlib.h>
#endif

#include "replay.h"

#define LOG_MAGIC "gpumem-replay 1"

/* ids to slots: open addressing, grown at half full. Per slot, its allocation's bytes and
 * stream, which its release carries: a release finds them in one step, not by a search back
 * through the operations (that search made a 400,000-allocation log with 50,000 live take 25 s
 * to read, not 0.4: bench/replay_load.sh, docs/perf/replay-load-2026-12-07-cpu.md). */
typedef struct {
    uint64_t *key;
    uint32_t *slot;
    size_t cap, n;
    uint64_t *slot_bytes; /* by slot - 1 */
    int *slot_stream;
    size_t slots_cap;
} id_map;

static size_t id_hash(uint64_t id, size_t cap)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static int id_grow(id_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    uint64_t *key = calloc(cap, sizeof *key);
    uint32_t *slot = calloc(cap, sizeof *slot);
    if (!key || !slot) {
        free(key);
        free(slot);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->key[i])
            continue;
        size_t k = id_hash(m->key[i], cap);
        while (key[k])
            k = (k + 1) & (cap - 1);
        key[k] = m->key[i];
        slot[k] = m->slot[i];
    }
    free(m->key);
    free(m->slot);
    m->key = key;
    m->slot = slot;
    m->cap = cap;
    return 0;
}

/* The slot of id (+1 so that 0 is free), made with value when missing and make is set; 0 when
 * absent. ids are stored + 1, so id 0 is allowed. */
static uint32_t id_slot(id_map *m, uint64_t id, uint32_t value, int make, int remove)
{
    if (make && (m->n + 1) * 2 > m->cap && id_grow(m) != 0)
        return 0;
    if (!m->cap)
        return 0;
    size_t k = id_hash(id + 1, m->cap);
    while (m->key[k] && m->key[k] != id + 1)
        k = (k + 1) & (m->cap - 1);
    if (m->key[k]) {
        uint32_t s = m->slot[k];
        if (remove) { /* a released id may come again (a reused sequence number): forget it */
            m->key[k] = 0;
            m->n--;
            /* Re-insert the rest of the cluster (deletion in linear probing). */
            for (size_t j = (k + 1) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1)) {
                uint64_t kk = m->key[j];
                uint32_t ss = m->slot[j];
                m->key[j] = 0;
                size_t h = id_hash(kk, m->cap);
                while (m->key[h])
                    h = (h + 1) & (m->cap - 1);
                m->key[h] = kk;
                m->slot[h] = ss;
            }
        }
        return s;
    }
    if (!make)
        return 0;
    m->key[k] = id + 1;
    m->slot[k] = value;
    m->n++;
    return value;
}

/* The slot of a zero-byte allocation's id: live, but with no operation of its own. */
#define ZERO_SLOT UINT32_MAX

static int push(replay_trace *t, const replay_op *op)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        replay_op *ops = realloc(t->ops, cap * sizeof *ops);
        if (!ops)
            return -1;
        t->ops = ops;
        t->cap = cap;
    }
    t->ops[t->n++] = *op;
    return 0;
}

static int stream_index(replay_trace *t, uint64_t handle)
{
    for (int i = 0; i < t->nstreams; i++)
        if (t->streams[i] == handle)
            return i;
    if (t->nstreams == REPLAY_MAX_STREAMS)
        return REPLAY_MAX_STREAMS - 1; /* the rest share the last */
    t->streams[t->nstreams] = handle;
    return t->nstreams++;
}

/* Remembers slot's bytes and stream for its release. */
static int slot_note(id_map *m, uint32_t slot, uint64_t bytes, int stream)
{
    if (slot > m->slots_cap) {
        size_t cap = m->slots_cap ? m->slots_cap * 2 : 4096;
        uint64_t *b = realloc(m->slot_bytes, cap * sizeof *b);
        if (!b)
            return -1;
        m->slot_bytes = b;
        int *st = realloc(m->slot_stream, cap * sizeof *st);
        if (!st)
            return -1;
        m->slot_stream = st;
        m->slots_cap = cap;
    }
    m->slot_bytes[slot - 1] = bytes;
    m->slot_stream[slot - 1] = stream;
    return 0;
}

/* Adds an allocation or a release; a release of an id never allocated here is skipped (and
 * counted), a zero-byte allocation and its release are dropped.
 * Returns 0, -1 when out of memory, or 2 when id is allocated again while live (the file
 * lacks its release, or it is not one program's: a program cannot be given an address it
 * holds, and gpumem's ids are never reused). */
static int add(replay_trace *t, id_map *ids, int alloc, uint64_t id, uint64_t bytes,
               uint64_t stream, uint32_t thread, int64_t ns)
{
    replay_op op = {0};
    op.alloc = alloc;
    op.thread = thread;
    op.ns = ns;
    if (alloc) {
        if (!bytes) { /* not replayed; its id is kept, so that its release is dropped too */
            if (id_slot(ids, id, 0, 0, 0))
                return 2;
            return id_slot(ids, id, ZERO_SLOT, 1, 0) ? 0 : -1;
        }
        op.slot = (uint32_t)t->nslots + 1;
        uint32_t got = id_slot(ids, id, op.slot, 1, 0);
        if (got != op.slot)
            return got ? 2 : -1;
        op.bytes = bytes;
        op.stream = stream_index(t, stream);
        if (slot_note(ids, op.slot, op.bytes, op.stream) != 0)
            return -1;
        t->nslots++;
        t->live += bytes;
        if (t->live > t->peak_requested)
            t->peak_requested = t->live;
        t->allocs++;
    } else {
        op.slot = id_slot(ids, id, 0, 0, 1);
        if (op.slot == ZERO_SLOT)
            return 0;
        if (!op.slot) {
            t->skipped++;
            return 0;
        }
        /* the bytes and stream of the allocation, for the replayers' convenience */
        op.bytes = ids->slot_bytes[op.slot - 1];
        op.stream = ids->slot_stream[op.slot - 1];
        t->live -= op.bytes;
    }
    return push(t, &op);
}

/* The value after "key": in line, as text; NULL when absent. */
static const char *field(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? p + strlen(key) : NULL;
}

/* A trace's event, kept until every line is read: traces are written from several threads'
 * buffers, so their events come out of time order. */
typedef struct {
    int64_t ns;
    size_t at; /* its line in the file: ties keep file order */
    uint64_t id, bytes, stream;
    uint32_t thread;
    int alloc;
} raw_event;

typedef struct {
    raw_event *ev;
    size_t n, cap;
} raw_events;

static int cmp_raw(const void *a, const void *b)
{
    const raw_event *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Counts v in set (n values so far) unless it is there, up to REPLAY_MAX_STREAMS. */
static void note_distinct(uint64_t *set, int *n, uint64_t v)
{
    for (int i = 0; i < *n; i++)
        if (set[i] == v)
            return;
    if (*n < REPLAY_MAX_STREAMS)
        set[(*n)++] = v;
}

/* Line lineno of a gpumem trace: an allocation ("ph":"b") or release ("ph":"e") of device
 * memory (kinds device, device-async: what a device allocator serves). Returns 0 (taken, or
 * not such an event), -1 when out of memory, or 3 when its "ts" is no time (the operations'
 * order comes from it). Counts its process and device in t. */
static int trace_line(replay_trace *t, raw_events *r, const char *line, unsigned long lineno)
{
    int alloc = strstr(line, "{\"ph\":\"b\"") == line;
    if (!alloc && strstr(line, "{\"ph\":\"e\"") != line)
        return 0;
    const char *cat = field(line, "\"cat\":\"");
    if (!cat || (strncmp(cat, "device\"", 7) != 0 && strncmp(cat, "device-async\"", 13) != 0))
        return 0;
    const char *id = field(line, "\"id\":\"0x"), *tid = field(line, "\"tid\":");
    const char *ts = field(line, "\"ts\":");
    if (!id || !tid || !ts)
        return 0;
    char *end;
    double us = strtod(ts, &end);
    if (end == ts || !(us > -9e12 && us < 9e12)) /* in int64_t ns, with NaN refused */
        return 3;
    const char *pid = field(line, "\"pid\":"), *dev = field(line, "\"device\":");
    note_distinct(t->pids, &t->npids, pid ? strtoull(pid, NULL, 10) : 0);
    if (dev)
        note_distinct(t->devices, &t->ndevices, strtoull(dev, NULL, 10));
    uint64_t bytes = 0, stream = 0;
    if (alloc) {
        const char *b = field(line, "\"bytes\":"), *s = field(line, "\"stream\":\"0x");
        if (!b)
            return 0;
        bytes = strtoull(b, NULL, 10);
        stream = s ? strtoull(s, NULL, 16) : 0;
    }
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 4096;
        raw_event *ev = realloc(r->ev, cap * sizeof *ev);
        if (!ev)
            return -1;
        r->ev = ev;
        r->cap = cap;
    }
    raw_event *e = &r->ev[r->n];
    e->ns = (int64_t)(us * 1000.0);
    e->at = lineno;
    r->n++;
    e->id = strtoull(id, NULL, 16);
    e->bytes = bytes;
    e->stream = stream;
    e->thread = (uint32_t)strtoul(tid, NULL, 10);
    e->alloc = alloc;
    return 0;
}

/* The trace's events in time order into t: 0, -1 when out of memory, or 2 with the line of
 * an allocation whose id is live (add) in *line. */
static int add_sorted(replay_trace *t, id_map *ids, raw_events *r, unsigned long *line)
{
    if (r->n) /* none: r->ev is NULL, which qsort may not be given */
        qsort(r->ev, r->n, sizeof *r->ev, cmp_raw);
    int64_t t0 = r->n ? r->ev[0].ns : 0; /* times from the first event */
    for (size_t i = 0; i < r->n; i++) {
        const raw_event *e = &r->ev[i];
        int rc = add(t, ids, e->alloc, e->id, e->bytes, e->stream, e->thread, e->ns - t0);
        if (rc != 0) {
            *line = e->at;
            return rc;
        }
    }
    return 0;
}

/* A replay log's line: 0, -1 when out of memory, 1 when it is not a log line, 2 when it
 * allocates an id that is live (add). */
static int log_line(replay_trace *t, id_map *ids, const char *line)
{
    uint64_t id, bytes, stream;
    unsigned thread;
    long long ns;
    if (line[0] == 'a' && sscanf(line, "a %" SCNu64 " %" SCNu64 " %" SCNx64 " %u %lld", &id,
                                 &bytes, &stream, &thread, &ns) == 5)
        return add(t, ids, 1, id, bytes, stream, thread, ns);
    if (line[0] == 'f' && sscanf(line, "f %" SCNu64 " %u %lld", &id, &thread, &ns) == 3)
        return add(t, ids, 0, id, 0, 0, thread, ns);
    return line[0] == '#' || line[0] == '\n' || !line[0] ? 0 : 1;
}

#ifdef GPUMEM_HAVE_ZLIB
/* A gzipped file read as a FILE, so that getline reads it as any other; zlib reads a file
 * that is not gzipped as it is. */
static ssize_t gz_read(void *z, char *buf, size_t n)
{
    int got = gzread(z, buf, n > INT_MAX ? INT_MAX : (unsigned)n);
    if (got > 0)
        return got;
    int why = Z_OK;
    gzerror(z, &why); /* at the end: Z_OK, or Z_BUF_ERROR where the data was cut short */
    if (why == Z_OK)
        return got;
    if (why != Z_ERRNO)
        errno = 0; /* not the system's error: the data's (replay_load says so) */
    return -1;
}

static int gz_close(void *z)
{
    return gzclose(z) == Z_OK ? 0 : EOF;
}

static FILE *open_input(const char *path, char *err, size_t errn)
{
    errno = 0;
    gzFile z = gzopen(path, "rb");
    if (!z) {
        snprintf(err, errn, "cannot read %s: %s", path, strerror(errno ? errno : ENOMEM));
        return NULL;
    }
    FILE *f = fopencookie(z, "r", (cookie_io_functions_t){.read = gz_read, .close = gz_close});
    if (!f) {
        snprintf(err, errn, "out of memory reading %s", path);
        gzclose(z);
    }
    return f;
}
#else
/* Built without zlib: a gzipped file is named as such rather than read as text. */
static FILE *open_input(const char *path, char *err, size_t errn)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errn, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    int a = getc(f), b = getc(f);
    if (a == 0x1f && b == 0x8b) {
        snprintf(err, errn, "%s is gzipped and this gpumem was built without zlib: "
                            "zcat it to a file and replay that", path);
        fclose(f);
        return NULL;
    }
    rewind(f);
    return f;
}
#endif

static void live_again(const char *path, unsigned long line, char *err, size_t errn)
{
    snprintf(err, errn, "%s:%lu: allocates an id that is already live: no release of it comes "
                        "before this line (an edited file, or one put together from several "
                        "programs' traces); replay each program's own trace, as it wrote it",
             path, line);
}

int replay_load(const char *path, replay_trace *t, char *err, size_t errn)
{
    memset(t, 0, sizeof *t);
    FILE *f = open_input(path, err, errn);
    if (!f)
        return -1;
    id_map ids = {0};
    raw_events raw = {0};
    char *line = NULL;
    size_t cap = 0;
    int is_log = -1, rc = 0;
    unsigned long lineno = 0, good = 0; /* good: the last line read whole and understood */
    while (rc == 0 && getline(&line, &cap, f) > 0) {
        lineno++;
        if (is_log < 0)
            is_log = strncmp(line, LOG_MAGIC, strlen(LOG_MAGIC)) == 0;
        if (is_log && lineno == 1) {
            good = 1;
            continue;
        }
        rc = is_log ? log_line(t, &ids, line) : trace_line(t, &raw, line, lineno);
        if (rc > 0 && ferror(f)) { /* the line was cut by a failed read: that is the error */
            rc = 0;
            break;
        }
        if (rc == 0)
            good = lineno;
        if (rc == 2) {
            live_again(path, lineno, err, errn);
            rc = -1;
        } else if (rc == 3) {
            snprintf(err, errn, "%s:%lu: its \"ts\" is not a time (microseconds, as a gpumem "
                                "trace writes them): the file is damaged; replay the trace "
                                "as the program wrote it", path, lineno);
            rc = -1;
        } else if (rc > 0) {
            snprintf(err, errn, "%s:%lu: not a replay log line", path, lineno);
            rc = -1;
        } else if (rc < 0) {
            snprintf(err, errn, "out of memory reading %s", path);
        }
    }
    free(line);
    if (rc == 0 && ferror(f)) { /* an I/O error, or gzip data that is corrupt or cut short */
        const char *why = errno ? strerror(errno) : "its gzip data is corrupt or cut short";
        if (good)
            snprintf(err, errn, "cannot read %s after line %lu: %s", path, good, why);
        else
            snprintf(err, errn, "cannot read %s: %s", path, why);
        rc = -1;
    }
    unsigned long at = 0;
    if (rc == 0 && !is_log && (rc = add_sorted(t, &ids, &raw, &at)) != 0) {
        if (rc == 2)
            live_again(path, at, err, errn);
        else
            snprintf(err, errn, "out of memory reading %s", path);
        rc = -1;
    }
    free(raw.ev);
    free(ids.key);
    free(ids.slot);
    free(ids.slot_bytes);
    free(ids.slot_stream);
    fclose(f);
    if (rc == 0 && t->allocs == 0) {
        snprintf(err, errn, "%s holds no device allocation to replay (a gpumem trace, or a "
                            "replay log starting \"%s\")", path, LOG_MAGIC);
        rc = -1;
    }
    if (rc != 0)
        replay_free(t);
    return rc;
}

int replay_write_log(FILE *out, const replay_trace *t)
{
    fprintf(out, "%s\n# %zu allocations, peak requested %" PRIu64 " bytes\n", LOG_MAGIC,
            t->allocs, t->peak_requested);
    for (size_t i = 0; i < t->n; i++) {
        const replay_op *op = &t->ops[i];
        if (op->alloc)
            fprintf(out, "a %u %" PRIu64 " %" PRIx64 " %u %lld\n", op->slot, op->bytes,
                    t->streams[op->stream], op->thread, (long long)op->ns);
        else
            fprintf(out, "f %u %u %lld\n", op->slot, op->thread, (long long)op->ns);
    }
    return ferror(out) ? -1 : 0;
}

void replay_free(replay_trace *t)
{
    free(t->ops);
    memset(t, 0, sizeof *t);
}

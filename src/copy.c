/* Copies (issue 7): gpumem_copy and gpumem_copy_async.
 *
 * The direction comes from what gpumem knows of both pointers: the registry for its own
 * allocations (interior pointers included), and otherwise what CUDA says the address is
 * (cudaPointerGetAttributes: device, pinned host, managed, or unregistered, which is pageable
 * host memory). Knowing the allocation also bounds the copy: a range that runs past the end of
 * a gpumem allocation is refused, naming it, before any memory is touched.
 *
 * Why staging: the DMA engine reads and writes only page-locked memory, so CUDA copies
 * pageable memory through small driver buffers, one CPU thread at a time: 6.2 GB/s from
 * pageable memory to an H200 against 55.4 GB/s from pinned memory (docs/cuda-facts.md). gpumem
 * copies large pageable transfers through a ring of pinned slots of its own instead. Worker
 * threads fill a slot (memcpy into pinned memory, in parallel: one thread reaches 5.4 GB/s,
 * sixteen 36.7) while the DMA engine empties the slot before it, and an event per slot says
 * when its transfer is done, so that a slot is never refilled under a transfer still reading
 * it. From the device it runs the other way: transfers into slots are queued ahead, and each
 * slot is drained into the destination once its event says the transfer landed. Every
 * transfer is queued on the caller's stream, so it runs after the work queued there before.
 *
 * Rings: one per device and direction (a copy to the device and one from it use both
 * directions of the link at once), made at the first staged copy and kept for the life of the
 * process: freeing them at exit would call CUDA during teardown, which gpumem never does. One
 * copy uses a ring at a time; concurrent staged copies in one direction queue for it, which
 * costs little, as one copy already fills the link. Each ring has its own worker threads,
 * which sleep while no copy runs. When a ring cannot be made (no pinned memory), copies go
 * straight to CUDA, slower but correct, after one warning. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Where one end of a copy is. */
enum { PLACE_PAGEABLE, PLACE_PINNED, PLACE_DEVICE, PLACE_MANAGED };
enum { TO_DEVICE, FROM_DEVICE };

#define MAX_DEVICES 64
#define MAX_SLOTS 64u
#define MAX_THREADS 64u
/* The smallest piece of a slot one thread copies: below it, waking a thread costs more than
 * the copy it would do (a wake-up is a few microseconds; 64 KiB take about 12 us on one
 * thread at 5.4 GB/s). */
#define MIN_PART ((size_t)64 << 10)

static const char *const place_names[] = {"pageable host memory", "pinned host memory",
                                          "device memory", "managed memory"};

/* One end of a copy: the pointer, where it is, and its allocation when gpumem made it. */
typedef struct end {
    const char *role; /* "source", "destination" */
    const void *p;
    int place;
    int tracked;
    gpumem__rec r;
} end;

typedef struct op {
    const char *fn;
    gpumem_site site;
    cudaStream_t stream;
    int sync;
} op;

/* ---- counters ---- */

static struct {
    atomic_ullong direct, staged, chunks, slot_waits, fallbacks, peer, peer_staged;
} counts;

void gpumem__copy_counts_get(gpumem__copy_counts *out)
{
    out->direct = atomic_load(&counts.direct);
    out->staged = atomic_load(&counts.staged);
    out->chunks = atomic_load(&counts.chunks);
    out->slot_waits = atomic_load(&counts.slot_waits);
    out->fallbacks = atomic_load(&counts.fallbacks);
    out->peer = atomic_load(&counts.peer);
    out->peer_staged = atomic_load(&counts.peer_staged);
}

/* ---- worker threads: one memcpy split into parts ---- */

/* The job being run, shared with the workers. Only the ring's user posts jobs (one at a time,
 * under the ring's lock); workers take parts by an atomic counter. A worker that picked up a
 * job holds copies of its fields, so a new job is posted only once no worker holds the last
 * one (active == 0); that is what keeps a late worker from taking a part of the next job with
 * the previous job's pointers. */
typedef struct workers {
    pthread_mutex_t lock;
    pthread_cond_t wake;    /* a job was posted */
    pthread_cond_t settled; /* a job's parts are all done, or a worker let go of it */
    unsigned nthreads;      /* worker threads running (the caller works too) */
    uint64_t gen;           /* job number */
    int open;               /* the current job may still be picked up */
    unsigned active;        /* workers holding the current job */
    char *dst;
    const char *src;
    size_t len, part;
    unsigned parts;
    atomic_uint next, done;
} workers;

static void run_parts(workers *w, char *dst, const char *src, size_t len, size_t part,
                      unsigned parts)
{
    for (;;) {
        unsigned i = atomic_fetch_add(&w->next, 1u);
        if (i >= parts)
            return;
        size_t off = (size_t)i * part;
        memcpy(dst + off, src + off, len - off < part ? len - off : part);
        if (atomic_fetch_add(&w->done, 1u) + 1u == parts) {
            pthread_mutex_lock(&w->lock);
            pthread_cond_broadcast(&w->settled);
            pthread_mutex_unlock(&w->lock);
        }
    }
}

static void *worker_main(void *arg)
{
    workers *w = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&w->lock);
    for (;;) {
        while (!w->open || w->gen == seen)
            pthread_cond_wait(&w->wake, &w->lock);
        seen = w->gen;
        w->active++;
        char *dst = w->dst;
        const char *src = w->src;
        size_t len = w->len, part = w->part;
        unsigned parts = w->parts;
        pthread_mutex_unlock(&w->lock);
        run_parts(w, dst, src, len, part, parts);
        pthread_mutex_lock(&w->lock);
        if (--w->active == 0)
            pthread_cond_broadcast(&w->settled);
    }
    return NULL;
}

/* Starts up to n workers with every signal blocked, so that the program's signals keep going
 * to its own threads. Fewer start when the system refuses: the caller does all the parts the
 * workers do not take, so any number, zero included, copies correctly. */
static void workers_start(workers *w, unsigned n)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->settled, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < n; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int rc = pthread_create(&t, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            break;
        w->nthreads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* memcpy(dst, src, len) by the caller and as many workers as the size is worth. */
static void parallel_copy(workers *w, void *dst, const void *src, size_t len)
{
    size_t want = (len + MIN_PART - 1) / MIN_PART;
    unsigned parts = want < (size_t)w->nthreads + 1 ? (unsigned)want : w->nthreads + 1;
    if (parts <= 1) {
        memcpy(dst, src, len);
        return;
    }
    size_t part = ((len + parts - 1) / parts + 4095) & ~(size_t)4095;
    parts = (unsigned)((len + part - 1) / part);
    pthread_mutex_lock(&w->lock);
    w->dst = dst;
    w->src = src;
    w->len = len;
    w->part = part;
    w->parts = parts;
    atomic_store(&w->next, 0u);
    atomic_store(&w->done, 0u);
    w->gen++;
    w->open = 1;
    for (unsigned i = 1; i < parts; i++)
        pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    run_parts(w, dst, src, len, part, parts);
    pthread_mutex_lock(&w->lock);
    while (atomic_load(&w->done) < parts)
        pthread_cond_wait(&w->settled, &w->lock);
    w->open = 0;
    while (w->active)
        pthread_cond_wait(&w->settled, &w->lock);
    pthread_mutex_unlock(&w->lock);
}

/* ---- staging rings ---- */

typedef struct slot {
    void *mem;
    void *event;
    int pending; /* a transfer from or into the slot was queued and not yet waited for */
} slot;

typedef struct ring {
    pthread_mutex_t lock; /* held by the copy using the ring */
    slot slots[MAX_SLOTS];
    unsigned count;
    size_t slot_bytes;
    unsigned next;        /* the slot the next copy starts with: the one idle the longest */
    int broken;           /* a transfer's end could not be tracked: copies go direct */
    workers w;
} ring;

static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static ring *rings[MAX_DEVICES][2];
static int ring_refused[MAX_DEVICES][2];

static void ring_free(ring *g)
{
    for (unsigned i = 0; i < g->count; i++) {
        if (g->slots[i].event)
            gpumem__be->event_destroy(g->slots[i].event);
        if (g->slots[i].mem)
            gpumem__be->free_host(g->slots[i].mem);
    }
    free(g);
}

static unsigned copy_threads(void)
{
    uint64_t n = gpumem__opt_u64(GPUMEM__OPT_COPY_THREADS);
    if (n == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores < 1 ? 1 : cores > 16 ? 16 : (uint64_t)cores;
    }
    return n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

/* The ring of device dev for one direction, made on first use in the current context;
 * NULL when it cannot be made (warned about once). */
static ring *ring_get(int dev, int dir)
{
    if (dev < 0 || dev >= MAX_DEVICES)
        return NULL;
    pthread_mutex_lock(&rings_lock);
    ring *g = rings[dev][dir];
    if (g || ring_refused[dev][dir]) {
        pthread_mutex_unlock(&rings_lock);
        return g;
    }
    uint64_t count = gpumem__opt_u64(GPUMEM__OPT_COPY_SLOTS);
    uint64_t bytes = gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES);
    count = count < 2 ? 2 : count > MAX_SLOTS ? MAX_SLOTS : count;
    bytes = bytes < 4096 ? 4096 : bytes > ((uint64_t)1 << 34) ? ((uint64_t)1 << 34) : bytes;
    bytes &= ~(uint64_t)4095;
    int err = 0;
    const char *what = "host memory for its descriptor";
    g = calloc(1, sizeof *g);
    if (g) {
        g->slot_bytes = (size_t)bytes;
        for (g->count = 0; g->count < (unsigned)count && !err; g->count++) {
            slot *s = &g->slots[g->count];
            what = "cuMemAllocHost";
            err = gpumem__be->host_alloc(&s->mem, g->slot_bytes, 0);
            if (!err && !s->mem)
                err = cudaErrorMemoryAllocation;
            if (!err) {
                what = "cuEventCreate";
                err = gpumem__be->event_create(&s->event);
            }
        }
    }
    if (!g || err) {
        char size_text[32];
        fprintf(stderr, "gpumem: warning: no pinned staging ring for copies %s device %d "
                        "(%s failed: %s); large copies %s pageable memory go straight to CUDA, "
                        "at its pageable speed\n  hint: lower GPUMEM_COPY_SLOTS or "
                        "GPUMEM_COPY_SLOT_BYTES (now %llu x %s)\n",
                dir == TO_DEVICE ? "to" : "from", dev, what,
                err ? gpumem_err_name(err) : "out of host memory",
                dir == TO_DEVICE ? "from" : "to", (unsigned long long)count,
                gpumem_format_bytes(bytes, size_text, sizeof size_text));
        if (g)
            ring_free(g);
        ring_refused[dev][dir] = 1;
        pthread_mutex_unlock(&rings_lock);
        return NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    workers_start(&g->w, copy_threads() - 1u);
    rings[dev][dir] = g;
    pthread_mutex_unlock(&rings_lock);
    return g;
}

/* How much of a copy each slot carries: a whole slot for large copies; for smaller ones the
 * copy is spread over every slot, so that filling one overlaps the transfer of another. */
static size_t chunk_for(const ring *g, size_t bytes)
{
    size_t c = (bytes / g->count + MIN_PART - 1) / MIN_PART * MIN_PART;
    if (c < MIN_PART)
        c = MIN_PART;
    return c < g->slot_bytes ? c : g->slot_bytes;
}

/* Waits for the transfer last queued on slot s, if any. */
static int slot_wait(slot *s)
{
    if (!s->pending)
        return 0;
    atomic_fetch_add(&counts.slot_waits, 1);
    int err = gpumem__be->event_sync(s->event);
    if (!err)
        s->pending = 0;
    return err;
}

/* Queues a transfer between slot s and the caller's memory on stream, and its event. Without
 * the event the slot's transfer cannot be tracked: the stream is synchronized instead, and if
 * even that fails the ring is not used again. */
static int slot_transfer(ring *g, slot *s, void *dst, const void *src, size_t n,
                         cudaStream_t stream, const char **call)
{
    *call = "cuMemcpyAsync";
    int err = gpumem__be->memcpy_async(dst, src, n, stream);
    if (err)
        return err;
    *call = "cuEventRecord";
    err = gpumem__be->event_record(s->event, stream);
    if (err) {
        if (gpumem__be->stream_sync(stream) != 0)
            g->broken = 1;
        return err;
    }
    s->pending = 1;
    atomic_fetch_add(&counts.chunks, 1);
    return 0;
}

/* Pageable src to device dst through the ring. Returns once src was read; with sync, once the
 * data is in dst. On failure *call names the CUDA call that failed. Ring locked. */
static int stage_to_device(ring *g, char *dst, const char *src, size_t bytes, const op *o,
                           const char **call)
{
    size_t chunk = chunk_for(g, bytes);
    slot *last = NULL;
    int err = 0;
    for (size_t off = 0; off < bytes && !err; off += chunk) {
        size_t n = bytes - off < chunk ? bytes - off : chunk;
        slot *s = &g->slots[g->next];
        *call = "cuEventSynchronize";
        err = slot_wait(s);
        if (err)
            break;
        parallel_copy(&g->w, s->mem, src + off, n);
        err = slot_transfer(g, s, dst + off, s->mem, n, o->stream, call);
        last = s;
        g->next = (g->next + 1) % g->count;
    }
    if (!err && o->sync && last) {
        *call = "cuEventSynchronize";
        err = slot_wait(last); /* one stream: the last transfer ends after the others */
    }
    return err;
}

/* Device src to pageable dst through the ring: up to count transfers in flight, each slot
 * drained into dst when its event fires. Returns once the data is in dst. Ring locked. */
static int stage_from_device(ring *g, char *dst, const char *src, size_t bytes, const op *o,
                             const char **call)
{
    size_t chunk = chunk_for(g, bytes);
    size_t nchunks = (bytes + chunk - 1) / chunk, queued = 0;
    unsigned first = g->next;
    int err = 0;
    for (size_t i = 0; i < nchunks && !err; i++) {
        while (queued < nchunks && queued < i + g->count && !err) {
            slot *s = &g->slots[(first + queued) % g->count];
            size_t off = queued * chunk;
            size_t n = bytes - off < chunk ? bytes - off : chunk;
            *call = "cuEventSynchronize";
            err = slot_wait(s);
            if (!err)
                err = slot_transfer(g, s, s->mem, src + off, n, o->stream, call);
            queued++;
        }
        if (err)
            break;
        slot *s = &g->slots[(first + i) % g->count];
        size_t off = i * chunk;
        *call = "cuEventSynchronize";
        err = slot_wait(s);
        if (!err)
            parallel_copy(&g->w, dst + off, s->mem, bytes - off < chunk ? bytes - off : chunk);
    }
    g->next = (unsigned)((first + queued) % g->count);
    return err;
}

/* ---- errors ---- */

static void append_end(gpumem_error *e, const end *x)
{
    char size_text[32], where[256];
    if (!x->tracked) {
        gpumem__err_append(e, "%s at %p", place_names[x->place], x->p);
        return;
    }
    gpumem__err_append(e, "%s at %p, %zu bytes into the %s %s allocation made at %s, "
                          "thread %u, #%llu",
                       place_names[x->place], x->p, (size_t)((uintptr_t)x->p - x->r.base),
                       gpumem_format_bytes(x->r.bytes, size_text, sizeof size_text),
                       gpumem_kind_name(x->r.kind), gpumem__site_str(x->r.site, where, sizeof where),
                       x->r.thread, (unsigned long long)x->r.seq);
}

static void append_called(gpumem_error *e, const op *o)
{
    char where[256];
    gpumem__err_append(e, "\n    %-18s %s", "called at", gpumem__site_str(o->site, where, sizeof where));
}

static int fail_arg(const op *o, size_t bytes, const char *what, const char *hint)
{
    char size_text[32];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
    e->requested = bytes;
    gpumem__err_append(e, "%s of %s: %s", o->fn,
                       gpumem_format_bytes(bytes, size_text, sizeof size_text), what);
    append_called(e, o);
    gpumem__err_append(e, "\n  hint: nothing was copied; %s", hint);
    return gpumem__err_raise(e);
}

static int fail_overrun(const op *o, const end *x, size_t bytes)
{
    char size_text[32], alloc_text[32];
    size_t off = (size_t)((uintptr_t)x->p - x->r.base), room = x->r.bytes - off;
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
    e->requested = bytes;
    gpumem__err_alloc(e, &x->r);
    e->alloc_offset = off;
    gpumem__err_append(e, "%s of %s: the %s runs past the end of its allocation by %zu "
                          "byte%s: %p is %zu bytes into a %s %s allocation, which has %zu bytes "
                          "from there",
                       o->fn, gpumem_format_bytes(bytes, size_text, sizeof size_text), x->role,
                       bytes - room, bytes - room == 1 ? "" : "s", x->p, off,
                       gpumem_format_bytes(x->r.bytes, alloc_text, sizeof alloc_text),
                       gpumem_kind_name(x->r.kind), room);
    append_called(e, o);
    gpumem__err_alloc_site(e, &x->r);
    gpumem__err_append(e, "\n  hint: bytes counts bytes, not elements; at most %zu bytes fit "
                          "from %p; nothing was copied", room, x->p);
    return gpumem__err_raise(e);
}

/* x->p is in memory gpumem released: CUDA would take it for pageable host memory and the
 * copy would read or write memory that is gone (or someone else's now). */
static int fail_released(const op *o, const end *x, size_t bytes, const gpumem__rec *r)
{
    char size_text[32], alloc_text[32], where[256];
    size_t off = (size_t)((uintptr_t)x->p - r->base);
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
    e->requested = bytes;
    gpumem__err_alloc(e, r);
    e->alloc_offset = off;
    gpumem__err_append(e, "%s of %s: the %s %p is %zu bytes into %s of %s memory that was "
                          "already released",
                       o->fn, gpumem_format_bytes(bytes, size_text, sizeof size_text), x->role,
                       x->p, off, gpumem_format_bytes(r->bytes, alloc_text, sizeof alloc_text),
                       gpumem_kind_name(r->kind));
    append_called(e, o);
    gpumem__err_append(e, "\n    released at        %s, thread %u",
                       gpumem__site_str(r->freed_site, where, sizeof where), r->freed_thread);
    gpumem__err_alloc_site(e, r);
    gpumem__err_append(e, "\n  hint: the pointer is used after its release (use after free); "
                          "copy before releasing it, or reset it to NULL when it is released; "
                          "nothing was copied");
    return gpumem__err_raise(e);
}

static int fail_cuda(const op *o, const end *d, const end *s, size_t bytes, int err,
                     const char *call, int staged)
{
    char size_text[32];
    gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), o->fn, o->site);
    if (e->code == GPUMEM_ENOMEM)
        e->code = GPUMEM_ECUDA; /* nothing was being allocated: CUDA refused a copy */
    e->requested = bytes;
    gpumem__err_cuda(e, err);
    if (d && d->tracked)
        gpumem__err_alloc(e, &d->r);
    else if (s && s->tracked)
        gpumem__err_alloc(e, &s->r);
    gpumem__err_append(e, "%s of %s", o->fn, gpumem_format_bytes(bytes, size_text, sizeof size_text));
    if (d && s) {
        gpumem__err_append(e, " from ");
        append_end(e, s);
        gpumem__err_append(e, " to ");
        append_end(e, d);
    }
    gpumem__err_append(e, ": %s%s failed with %s: %s", call,
                       staged ? " (through the pinned staging ring)" : "", e->cuda_name,
                       e->cuda_string);
    append_called(e, o);
    if (!gpumem__err_sticky_hint(e) && d && s)
        gpumem__err_append(e, "\n  hint: the destination may hold part of the data; copy again "
                              "once the cause is fixed");
    return gpumem__err_raise(e);
}

/* ---- between two devices' memory ----
 *
 * Device memory of two devices: a peer copy (cuMemcpyPeerAsync) when the destination's device
 * can reach the source's (cuDeviceCanAccessPeer), which moves the data over NVLink or PCIe
 * without the host. When it cannot, the copy goes through one pinned host buffer of gpumem's
 * own, portable (pinned for every context), in pieces of GPUMEM_COPY_SLOT_BYTES: each piece
 * from the source into the buffer, then from the buffer into the destination, all queued on
 * the caller's stream, whose order keeps a piece from being overwritten before it went on.
 * The buffer is shared by every such copy, so a staged copy returns once it is done, also
 * from gpumem_copy_async. The buffer is made at the first staged copy and kept for the life
 * of the process, as the staging rings are. */

static struct {
    pthread_mutex_t lock; /* held by the staged copy using the buffer */
    void *mem;
    size_t bytes;
} peer_buffer = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

/* The device whose memory an end of a copy is: its allocation's, else what CUDA says. */
static int device_of(const end *x, int *dev)
{
    if (x->tracked) {
        *dev = x->r.device;
        return 0;
    }
    return gpumem__be->pointer_device(x->p, dev);
}

/* src on device sd to dst on device dd through the pinned buffer. Buffer locked. */
static int stage_between_devices(char *dst, const char *src, size_t bytes, const op *o,
                                 const char **call)
{
    int err = 0;
    if (!peer_buffer.mem) {
        uint64_t want = gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES);
        want = want < 4096 ? 4096 : want > ((uint64_t)1 << 34) ? ((uint64_t)1 << 34) : want;
        *call = "cuMemHostAlloc (the staging buffer for copies between devices)";
        err = gpumem__be->host_alloc(&peer_buffer.mem, (size_t)want, cudaHostAllocPortable);
        if (!err && !peer_buffer.mem)
            err = cudaErrorMemoryAllocation;
        if (err) {
            peer_buffer.mem = NULL;
            return err;
        }
        peer_buffer.bytes = (size_t)want;
    }
    for (size_t off = 0; off < bytes && !err; off += peer_buffer.bytes) {
        size_t n = bytes - off < peer_buffer.bytes ? bytes - off : peer_buffer.bytes;
        *call = "cuMemcpyAsync (device to the staging buffer)";
        err = gpumem__be->memcpy_async(peer_buffer.mem, src + off, n, o->stream);
        if (!err) {
            *call = "cuMemcpyAsync (the staging buffer to device)";
            err = gpumem__be->memcpy_async(dst + off, peer_buffer.mem, n, o->stream);
        }
    }
    if (!err) {
        *call = "cuStreamSynchronize";
        err = gpumem__be->stream_sync(o->stream);
    }
    return err;
}

/* A copy between device memory of devices dd (dst) and sd (src), sd != dd. */
static int copy_between_devices(const op *o, const end *d, const end *s, size_t bytes, int dd,
                                int sd)
{
    int can = 0, staged = 0;
    const char *call = "cuDeviceCanAccessPeer";
    int err = gpumem__be->can_access_peer(dd, sd, &can);
    if (!err && can) {
        call = "cuMemcpyPeerAsync";
        err = gpumem__be->memcpy_peer_async((void *)d->p, dd, s->p, sd, bytes, o->stream);
        if (!err && o->sync) {
            call = "cuStreamSynchronize";
            err = gpumem__be->stream_sync(o->stream);
        }
        if (!err)
            atomic_fetch_add(&counts.peer, 1);
    } else if (!err) {
        staged = 1;
        pthread_mutex_lock(&peer_buffer.lock);
        err = stage_between_devices((char *)d->p, s->p, bytes, o, &call);
        pthread_mutex_unlock(&peer_buffer.lock);
        if (!err)
            atomic_fetch_add(&counts.peer_staged, 1);
    }
    if (err)
        return fail_cuda(o, d, s, bytes, err, call, staged);
    gpumem__err_clear();
    return GPUMEM_OK;
}

/* ---- the copy ---- */

/* Where x->p is, and that [p, p + bytes) fits in its allocation when gpumem made it. */
static int locate(const op *o, end *x, size_t bytes)
{
    if (gpumem__reg_find(x->p, &x->r)) {
        x->tracked = 1;
        switch (x->r.kind) {
        case GPUMEM_KIND_MANAGED:
            x->place = PLACE_MANAGED;
            break;
        case GPUMEM_KIND_PINNED:
        case GPUMEM_KIND_HOST:
            x->place = PLACE_PINNED;
            break;
        default:
            x->place = PLACE_DEVICE;
        }
        size_t off = (size_t)((uintptr_t)x->p - x->r.base);
        return bytes > x->r.bytes - off ? fail_overrun(o, x, bytes) : GPUMEM_OK;
    }
    /* Released device-side memory keeps its address range to the driver (the host heap never
     * reuses it), so an address in it can only be a use after free. Released pinned memory
     * is host memory again: malloc may hand its addresses out, so it is not refused. */
    gpumem__rec gone;
    if (gpumem__reg_find_released(x->p, &gone) &&
        (gone.kind == GPUMEM_KIND_DEVICE || gone.kind == GPUMEM_KIND_DEVICE_ASYNC ||
         gone.kind == GPUMEM_KIND_MANAGED))
        return fail_released(o, x, bytes, &gone);
    int type = GPUMEM__PTR_UNREGISTERED;
    int err = gpumem__be->pointer_type(x->p, &type);
    if (err) {
        char what[64];
        snprintf(what, sizeof what, "cuPointerGetAttribute (what the %s is)", x->role);
        return fail_cuda(o, NULL, NULL, bytes, err, what, 0);
    }
    x->place = type == GPUMEM__PTR_HOST      ? PLACE_PINNED
               : type == GPUMEM__PTR_DEVICE  ? PLACE_DEVICE
               : type == GPUMEM__PTR_MANAGED ? PLACE_MANAGED
                                             : PLACE_PAGEABLE;
    return GPUMEM_OK;
}

static int copy(const op *o, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) {
        gpumem__err_clear();
        return GPUMEM_OK;
    }
    if (!dst || !src)
        return fail_arg(o, bytes,
                        !dst && !src ? "the destination and the source are NULL"
                        : !dst       ? "the destination is NULL"
                                     : "the source is NULL",
                        "a NULL pointer here is often an allocation whose failure went "
                        "unchecked");
    int rc = gpumem__ready(o->fn, o->site);
    if (rc != GPUMEM_OK)
        return rc;
    end d = {"destination", dst, 0, 0, {0}}, s = {"source", src, 0, 0, {0}};
    rc = locate(o, &d, bytes);
    if (rc == GPUMEM_OK)
        rc = locate(o, &s, bytes);
    if (rc != GPUMEM_OK)
        return rc;
    /* After locate: two allocations closer together than bytes are an overrun of one of them,
     * said above; what is left here is one range that truly overlaps the other. */
    uintptr_t a = (uintptr_t)dst, b = (uintptr_t)src;
    if ((a > b ? a - b : b - a) < bytes) {
        char what[160];
        snprintf(what, sizeof what, "the destination %p and the source %p overlap (%zu bytes "
                 "apart); CUDA's copies do not allow that", dst, src, a > b ? a - b : b - a);
        return fail_arg(o, bytes, what, "copy through a separate buffer");
    }

    if (s.place == PLACE_DEVICE && d.place == PLACE_DEVICE) {
        int sd = 0, dd = 0;
        int err = device_of(&s, &sd);
        if (!err)
            err = device_of(&d, &dd);
        if (err)
            return fail_cuda(o, &d, &s, bytes, err, "cuPointerGetAttribute (which device)", 0);
        if (sd != dd)
            return copy_between_devices(o, &d, &s, bytes, dd, sd);
    }

    uint64_t stage_min = gpumem__opt_u64(GPUMEM__OPT_COPY_STAGE_MIN);
    int dir = -1;
    if (stage_min && bytes >= stage_min) {
        if (s.place == PLACE_PAGEABLE && d.place == PLACE_DEVICE)
            dir = TO_DEVICE;
        else if (s.place == PLACE_DEVICE && d.place == PLACE_PAGEABLE)
            dir = FROM_DEVICE;
    }
    const char *call = "cuMemcpyAsync";
    int err = 0;
    if (dir >= 0) {
        int dev = 0;
        ring *g = NULL;
        call = "cuCtxGetDevice";
        err = gpumem__be->current_device(&dev);
        if (!err)
            g = ring_get(dev, dir);
        if (g) {
            pthread_mutex_lock(&g->lock);
            if (!g->broken) {
                err = dir == TO_DEVICE ? stage_to_device(g, dst, src, bytes, o, &call)
                                       : stage_from_device(g, dst, src, bytes, o, &call);
                pthread_mutex_unlock(&g->lock);
                atomic_fetch_add(&counts.staged, 1);
                if (err)
                    return fail_cuda(o, &d, &s, bytes, err, call, 1);
                gpumem__err_clear();
                return GPUMEM_OK;
            }
            pthread_mutex_unlock(&g->lock);
        }
        if (err)
            return fail_cuda(o, &d, &s, bytes, err, call, 0);
        atomic_fetch_add(&counts.fallbacks, 1);
    }
    atomic_fetch_add(&counts.direct, 1);
    call = "cuMemcpyAsync";
    err = gpumem__be->memcpy_async(dst, src, bytes, o->stream);
    if (!err && o->sync) {
        call = "cuStreamSynchronize";
        err = gpumem__be->stream_sync(o->stream);
    }
    if (err)
        return fail_cuda(o, &d, &s, bytes, err, call, 0);
    gpumem__err_clear();
    return GPUMEM_OK;
}

int gpumem_copy_at(void *dst, const void *src, size_t bytes, gpumem_site site)
{
    const op o = {"gpumem_copy", site, NULL, 1};
    return copy(&o, dst, src, bytes);
}

int gpumem_copy_async_at(void *dst, const void *src, size_t bytes, cudaStream_t stream,
                         gpumem_site site)
{
    const op o = {"gpumem_copy_async", site, stream, 0};
    return copy(&o, dst, src, bytes);
}

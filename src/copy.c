/* Copies: gpumem_copy and gpumem_copy_async.
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
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copy_workers.h"
#include "internal.h"

/* Where one end of a copy is. */
enum { PLACE_PAGEABLE, PLACE_PINNED, PLACE_DEVICE, PLACE_MANAGED };
enum { TO_DEVICE, FROM_DEVICE };

#define MAX_DEVICES 64
#define MAX_SLOTS 64u
#define MAX_THREADS 64u
/* The first and last chunks of a staged copy (see chunk_at). Measured on an H200 against one
 * part (64 KiB, which the caller fills alone while the workers wake): no faster to the device,
 * and slower from it (68 to 69 % of pinned at 32 MiB against 75 to 80 %: more, smaller
 * drains). */
#define CHUNK_MIN ((size_t)256 << 10)

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
    atomic_ullong direct, staged, chunks, slot_waits, fallbacks, registered, peer, peer_staged;
} counts;

void gpumem__copy_counts_get(gpumem__copy_counts *out)
{
    out->direct = atomic_load(&counts.direct);
    out->staged = atomic_load(&counts.staged);
    out->chunks = atomic_load(&counts.chunks);
    out->slot_waits = atomic_load(&counts.slot_waits);
    out->fallbacks = atomic_load(&counts.fallbacks);
    out->registered = atomic_load(&counts.registered);
    out->peer = atomic_load(&counts.peer);
    out->peer_staged = atomic_load(&counts.peer_staged);
}

/* ---- staging rings ---- */

typedef struct slot {
    void *mem;
    void *event;
    int pending; /* a transfer from or into the slot was queued and not yet waited for */
    size_t off, n; /* the part of the copy it carries (from the device: to drain) */
} slot;

typedef struct ring {
    pthread_mutex_t lock; /* held by the copy using the ring */
    slot slots[MAX_SLOTS];
    unsigned count;
    size_t slot_bytes;
    unsigned next;        /* the slot the next copy starts with: the one idle the longest */
    int broken;           /* a transfer's end could not be tracked: copies go direct */
    gpumem__workers w;
} ring;

static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static ring *rings[MAX_DEVICES][2];
/* A process made by fork starts no copy workers: its rings' workers stayed in the parent, and
 * threads started in the child of a threaded process are not supported everywhere
 * (ThreadSanitizer refuses them). Its copies fill and drain the slots on the calling thread. */
static int forked;
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
    return (unsigned)n; /* at most MAX_THREADS: the option's bounds */
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
    /* The options' bounds (2 to 64 slots, 4 KiB to 16 GiB) are checked where they are read. */
    count = count > MAX_SLOTS ? MAX_SLOTS : count;
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
    gpumem__workers_start(&g->w, forked ? 0u : copy_threads() - 1u);
    rings[dev][dir] = g;
    pthread_mutex_unlock(&rings_lock);
    return g;
}

/* fork(): the rings' table, every ring (held by the copy that uses it, so the fork waits for
 * staged copies in flight to end, and the child gets each ring idle), its workers' lock, and
 * the buffer of copies between devices (fork.c). The child has none of the worker threads:
 * its rings keep their slots, and its calling thread fills and drains them alone (gpumem__job_post
 * leaves every part to the caller when there are no workers); a ring it makes gets none
 * either (forked). */
static void rings_at_fork(int phase)
{
    for (int d = 0; d < MAX_DEVICES; d++) {
        for (int dir = 0; dir < 2; dir++) {
            ring *g = rings[d][dir];
            if (!g)
                continue;
            if (phase == GPUMEM__FORK_PREPARE) {
                pthread_mutex_lock(&g->lock);
                pthread_mutex_lock(&g->w.lock);
                continue;
            }
            if (phase == GPUMEM__FORK_CHILD) {
                g->w.nthreads = 0;
                atomic_store(&g->w.sleepers, 0u);
                atomic_store(&g->w.active, 0u);
            }
            pthread_mutex_unlock(&g->w.lock);
            pthread_mutex_unlock(&g->lock);
        }
    }
}

/* How much of a copy the slot at offset off carries. A pipeline of fill and transfer loses,
 * at its start, the time of filling the first chunk (nothing to transfer yet) and, at its end,
 * the time of transferring the last (nothing left to fill). So the chunks start small and
 * double (each no larger than what was already sent), up to a whole slot, and shrink again by
 * halves towards the end: what is lost is about two of the smallest chunks, 512 KiB, whatever
 * the size, where one chunk of a quarter of the copy was lost before (8 MiB of a 32 MiB copy,
 * a quarter of its time). Multiples of 64 KiB. */
static size_t chunk_at(const ring *g, size_t off, size_t bytes)
{
    size_t left = bytes - off;
    size_t c = off < left / 2 ? off : left / 2;
    if (c < CHUNK_MIN)
        c = CHUNK_MIN;
    c -= c % GPUMEM__COPY_MIN_PART;
    if (c > g->slot_bytes)
        c = g->slot_bytes;
    if (left - (c < left ? c : left) < CHUNK_MIN && left <= g->slot_bytes)
        c = left; /* no crumb at the end */
    return c < left ? c : left;
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
 * data is in dst. On failure *call names the CUDA call that failed. Ring locked, session open.
 * The caller posts the fill of slot k to the workers first and queues slot k-1's transfer
 * while they copy, so the driver calls are hidden behind the memcpy. */
static int stage_to_device(ring *g, char *dst, const char *src, size_t bytes, const op *o,
                           const char **call)
{
    slot *prev = NULL;
    int err = 0;
    for (size_t off = 0; off < bytes && !err;) {
        size_t n = chunk_at(g, off, bytes);
        slot *s = &g->slots[g->next];
        *call = "cuEventSynchronize";
        err = slot_wait(s);
        if (err)
            break;
        gpumem__job j;
        gpumem__job_post(&g->w, &j, s->mem, src + off, n,
                 gpumem__opt_bool(GPUMEM__OPT_COPY_STREAM_STORES));
        if (prev)
            err = slot_transfer(g, prev, dst + prev->off, prev->mem, prev->n, o->stream, call);
        gpumem__job_join(&g->w, &j);
        s->off = off;
        s->n = n;
        prev = s;
        g->next = (g->next + 1) % g->count;
        off += n;
    }
    if (!err && prev)
        err = slot_transfer(g, prev, dst + prev->off, prev->mem, prev->n, o->stream, call);
    if (!err && o->sync && prev) {
        *call = "cuEventSynchronize";
        err = slot_wait(prev); /* one stream: the last transfer ends after the others */
    }
    return err;
}

/* Queues the transfer of [off, off + n) of device src into slot s. */
static int slot_fetch(ring *g, slot *s, const char *src, size_t off, size_t n, const op *o,
                      const char **call)
{
    *call = "cuEventSynchronize";
    int err = slot_wait(s); /* a transfer a failed copy left in flight */
    s->off = off;
    s->n = n;
    return err ? err : slot_transfer(g, s, s->mem, src + off, n, o->stream, call);
}

/* Device src to pageable dst through the ring: up to count transfers in flight, each slot
 * drained into dst by the workers when its event fires; while they drain it, the caller
 * queues the next transfer into the slot drained before. Returns once the data is in dst.
 * Ring locked, session open. */
static int stage_from_device(ring *g, char *dst, const char *src, size_t bytes, const op *o,
                             const char **call)
{
    unsigned first = g->next, head = 0, tail = 0; /* slots queued, slots drained */
    size_t qoff = 0;
    int err = 0;
    while (qoff < bytes && head < g->count && !err) {
        size_t n = chunk_at(g, qoff, bytes);
        err = slot_fetch(g, &g->slots[(first + head++) % g->count], src, qoff, n, o, call);
        qoff += n;
    }
    while (tail < head && !err) {
        slot *s = &g->slots[(first + tail) % g->count];
        *call = "cuEventSynchronize";
        err = slot_wait(s);
        if (err)
            break;
        gpumem__job j;
        gpumem__job_post(&g->w, &j, dst + s->off, s->mem, s->n, 0);
        if (qoff < bytes && head - tail < g->count) {
            size_t n = chunk_at(g, qoff, bytes);
            err = slot_fetch(g, &g->slots[(first + head++) % g->count], src, qoff, n, o, call);
            qoff += n;
        }
        gpumem__job_join(&g->w, &j);
        tail++;
    }
    g->next = (unsigned)((first + head) % g->count);
    return err;
}

/* ---- the registration cache's path ---- */

/* A pageable range the registration cache (regcache.c) holds registered goes to the DMA
 * engine in one cuMemcpyAsync, at pinned speed. The call then waits for the copy, so that it
 * returns as a staged copy does: the pageable source free to reuse, the pageable destination
 * complete. Returns 1 when it copied or tried (*err says how it went), 0 when the range is not
 * registered (stage it; the cache may have queued it, to be registered after the copy). */
static int copy_registered(const op *o, void *dst, const void *src, size_t bytes, int dir,
                           int *err, const char **call)
{
    void *entry;
    if (!gpumem__regcache_get(dir == TO_DEVICE ? src : dst, bytes, &entry))
        return 0;
    *call = "cuMemcpyAsync";
    *err = gpumem__be->memcpy_async(dst, src, bytes, o->stream);
    if (!*err) {
        *call = "cuStreamSynchronize";
        *err = gpumem__be->stream_sync(o->stream);
    }
    gpumem__regcache_put(entry);
    atomic_fetch_add(&counts.registered, 1);
    return 1;
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

/* x->p is at or just past the end of r, in no allocation: an index one too far. CUDA takes
 * it for device memory (the end of an allocation shares its granule), and the copy would
 * write the padding and what CUDA put after it. */
static int fail_past_end(const op *o, const end *x, size_t bytes, const gpumem__rec *r)
{
    char size_text[32], alloc_text[32];
    size_t past = (size_t)((uintptr_t)x->p - (r->base + r->bytes));
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
    e->requested = bytes;
    gpumem__err_alloc(e, r);
    e->alloc_offset = r->bytes + past;
    gpumem__err_append(e, "%s of %s: the %s %p is %zu byte%s past the end of a %s %s "
                          "allocation, in no allocation",
                       o->fn, gpumem_format_bytes(bytes, size_text, sizeof size_text), x->role,
                       x->p, past, past == 1 ? "" : "s",
                       gpumem_format_bytes(r->bytes, alloc_text, sizeof alloc_text),
                       gpumem_kind_name(r->kind));
    append_called(e, o);
    gpumem__err_alloc_site(e, r);
    gpumem__err_append(e, "\n  hint: an offset or index counted one too far (elements %s "
                          "bytes?); the last byte of the allocation is at %p; nothing was copied",
                       "vs", (void *)(r->base + r->bytes - 1));
    return gpumem__err_raise(e);
}

/* p is at the end of r or in the padding after it, where no other allocation can begin: for
 * device memory, up to the next 256-byte boundary (no host memory lives at device addresses);
 * for host-visible memory, within the page it ends in (the next page may be the heap's). */
static int past_end_of(const gpumem__rec *r, const void *p)
{
    uintptr_t last = r->base + r->bytes, a = (uintptr_t)p;
    if (a < last)
        return 0;
    if (r->kind == GPUMEM_KIND_DEVICE || r->kind == GPUMEM_KIND_DEVICE_ASYNC)
        return a < ((last + 256) & ~(uintptr_t)255);
    return a < ((last + 4095) & ~(uintptr_t)4095);
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

void gpumem__copy_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_CHILD)
        forked = 1;
    if (phase == GPUMEM__FORK_PREPARE) {
        pthread_mutex_lock(&rings_lock);
        rings_at_fork(phase);
        pthread_mutex_lock(&peer_buffer.lock);
        return;
    }
    pthread_mutex_unlock(&peer_buffer.lock);
    rings_at_fork(phase);
    pthread_mutex_unlock(&rings_lock);
}

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
    /* Whatever CUDA says of it (device memory, or pageable when nothing is mapped there). */
    if (gpumem__reg_find_below(x->p, &gone) && past_end_of(&gone, x->p))
        return fail_past_end(o, x, bytes, &gone);
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
    if (x->place == PLACE_PINNED && gpumem__regcache_owns(x->p))
        x->place = PLACE_PAGEABLE; /* registered by the cache, not by the program */
    return GPUMEM_OK;
}

/* copy_staged's answer when the copy is left to a direct one (no status is positive). */
#define STAGED_NOT 1

/* A large copy between pageable memory and a device (dir): through memory the registration
 * cache holds, else through the device's staging ring. Returns GPUMEM_OK or the failure (said),
 * or STAGED_NOT where neither can take it (the ring is broken): then the copy is a direct one. */
static int copy_staged(const op *o, end *d, end *s, void *dst, const void *src, size_t bytes,
                       int dir)
{
    const char *call = "cuMemcpyAsync";
    int err = 0;
    if (copy_registered(o, dst, src, bytes, dir, &err, &call)) {
        if (err)
            return fail_cuda(o, d, s, bytes, err, call, 0);
        gpumem__err_clear();
        return GPUMEM_OK;
    }
    int dev = 0;
    ring *g = NULL;
    call = "cuCtxGetDevice";
    err = gpumem__be->current_device(&dev);
    if (!err)
        g = ring_get(dev, dir);
    if (g) {
        pthread_mutex_lock(&g->lock);
        if (!g->broken) {
            gpumem__workers_session(&g->w, 1);
            err = dir == TO_DEVICE ? stage_to_device(g, dst, src, bytes, o, &call)
                                   : stage_from_device(g, dst, src, bytes, o, &call);
            gpumem__workers_session(&g->w, 0);
            pthread_mutex_unlock(&g->lock);
            gpumem__regcache_kick(); /* after the copy: registering would slow it down */
            atomic_fetch_add(&counts.staged, 1);
            if (err)
                return fail_cuda(o, d, s, bytes, err, call, 1);
            gpumem__err_clear();
            return GPUMEM_OK;
        }
        pthread_mutex_unlock(&g->lock);
    }
    gpumem__regcache_kick();
    if (err)
        return fail_cuda(o, d, s, bytes, err, call, 0);
    atomic_fetch_add(&counts.fallbacks, 1);
    return STAGED_NOT;
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
    if (dir >= 0 && (rc = copy_staged(o, &d, &s, dst, src, bytes, dir)) != STAGED_NOT)
        return rc;
    const char *call = "cuMemcpyAsync";
    atomic_fetch_add(&counts.direct, 1);
    int err = gpumem__be->memcpy_async(dst, src, bytes, o->stream);
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

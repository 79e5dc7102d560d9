/* `gpumem bench --replay FILE`: a recorded allocation stream replayed into each allocator the
 * machine has, one after another, on one thread, in the recording's order, each allocation
 * on a stream of its own for each of the recording's streams and released there.
 *
 * Each allocator replays twice: once timed, with nothing else in the loop (ns a operation),
 * once measured, reading what it reserves after every operation (peak reserved, and the bytes
 * requested at that moment: fragmentation at the peak). What "reserved" is: gpumem's pools,
 * their statistics; cudaMallocAsync, its pool's reserved memory (cudaMemPoolAttrReservedMemCurrent);
 * cudaMalloc, the device's used memory (cudaMemGetInfo) less what it was before; PyTorch,
 * torch.cuda.memory_reserved(), from python3 -m gpumem.replay, which reads the replay log this
 * file writes. With --limit, an allocator that would reserve more runs out of memory there:
 * gpumem's pools get the limit as their own, PyTorch a memory fraction, and CUDA's allocators
 * are cut where what they reserve would pass it.
 *
 * Allocating in a loop is what is measured here. */
// gpumem-lint: ignore-file[GM005] replaying allocations in a loop is the point
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "gpumem.h"
#include "replay.h"

typedef struct replayer replayer;
struct replayer {
    const char *key, *label;
    int needs_cuda;
    uint32_t design; /* gpumem pools */
    int (*start)(replayer *r, const replay_trace *t, uint64_t limit);
    int (*alloc)(replayer *r, void **p, uint64_t bytes, int stream);
    int (*release)(replayer *r, void *p, int stream);
    uint64_t (*reserved)(replayer *r);
    void (*stop)(replayer *r);
    /* state */
    gpumem_pool *pool;
    cudaMemPool_t mempool;
    size_t free_at_start;
    cudaStream_t streams[REPLAY_MAX_STREAMS];
    int nstreams;
    gpumem_pool_stats_t last; /* gpumem's pools: the statistics when the pool stopped */
};

static int on_cuda;
/* The note of a row the simulated device cannot run. */
static const char needs_gpu[] = "needs a GPU (the simulated device runs gpumem only)";

/* ---- streams ---- */

static int streams_make(replayer *r, const replay_trace *t)
{
    r->nstreams = t->nstreams;
    for (int i = 0; i < t->nstreams; i++) {
        if (!on_cuda)
            r->streams[i] = (cudaStream_t)(uintptr_t)(0x1000 * (i + 1)); /* handles only */
        else if (t->streams[i] == 0)
            r->streams[i] = NULL;
        else if (cudaStreamCreateWithFlags(&r->streams[i], cudaStreamNonBlocking) != cudaSuccess)
            return -1;
    }
    return 0;
}

/* Teardown after the measurement: a failure here would have shown already as a failed
 * allocation or release of the replay, so statuses are deliberately not checked. */
static void streams_end(replayer *r)
{
    for (int i = 0; on_cuda && i < r->nstreams; i++) {
        (void)cudaStreamSynchronize(r->streams[i]);
        if (r->streams[i])
            cudaStreamDestroy(r->streams[i]);
    }
}

/* ---- gpumem's pools ---- */

static int pool_start(replayer *r, const replay_trace *t, uint64_t limit)
{
    gpumem_pool_options_t o = {.limit = limit, .design = r->design};
    r->pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, &o);
    return r->pool && streams_make(r, t) == 0 ? 0 : -1;
}

static int pool_alloc(replayer *r, void **p, uint64_t bytes, int stream)
{
    *p = gpumem_pool_alloc(r->pool, 1, bytes, r->streams[stream]);
    return *p ? 0 : -1;
}

static int pool_release(replayer *r, void *p, int stream)
{
    return gpumem_free_async(p, r->streams[stream]) == GPUMEM_OK ? 0 : -1;
}

static uint64_t pool_reserved(replayer *r)
{
    gpumem_pool_stats_t st;
    return gpumem_pool_stats(r->pool, &st) == GPUMEM_OK ? st.reserved : 0;
}

static void pool_stop(replayer *r)
{
    if (gpumem_pool_stats(r->pool, &r->last) != GPUMEM_OK)
        memset(&r->last, 0, sizeof r->last);
    streams_end(r);
    gpumem_pool_destroy(r->pool);
    r->pool = NULL;
}

/* ---- CUDA's allocators ---- */

static int async_start(replayer *r, const replay_trace *t, uint64_t limit)
{
    (void)limit;
    if (cudaDeviceGetDefaultMemPool(&r->mempool, 0) != cudaSuccess)
        return -1;
    uint64_t threshold = r->design ? UINT64_MAX : 0;
    if (cudaMemPoolSetAttribute(r->mempool, cudaMemPoolAttrReleaseThreshold, &threshold) !=
        cudaSuccess)
        return -1;
    uint64_t zero = 0;
    if (cudaMemPoolSetAttribute(r->mempool, cudaMemPoolAttrReservedMemHigh, &zero) != cudaSuccess)
        return -1;
    return streams_make(r, t);
}

static int async_alloc(replayer *r, void **p, uint64_t bytes, int stream)
{
    return cudaMallocAsync(p, bytes, r->streams[stream]) == cudaSuccess ? 0 : -1;
}

static int async_release(replayer *r, void *p, int stream)
{
    return cudaFreeAsync(p, r->streams[stream]) == cudaSuccess ? 0 : -1;
}

static uint64_t async_reserved(replayer *r)
{
    uint64_t v = 0;
    if (cudaMemPoolGetAttribute(r->mempool, cudaMemPoolAttrReservedMemCurrent, &v) != cudaSuccess)
        return 0;
    return v;
}

static void async_stop(replayer *r)
{
    streams_end(r);
    uint64_t zero = 0; /* teardown: see streams_end */
    (void)cudaMemPoolSetAttribute(r->mempool, cudaMemPoolAttrReleaseThreshold, &zero);
    (void)cudaDeviceSynchronize();
    (void)cudaMemPoolTrimTo(r->mempool, 0);
}

static int malloc_start(replayer *r, const replay_trace *t, uint64_t limit)
{
    (void)limit;
    size_t total = 0;
    if (cudaDeviceSynchronize() != cudaSuccess)
        return -1;
    if (cudaMemGetInfo(&r->free_at_start, &total) != cudaSuccess)
        return -1;
    return streams_make(r, t);
}

static int malloc_alloc(replayer *r, void **p, uint64_t bytes, int stream)
{
    (void)r, (void)stream;
    return cudaMalloc(p, bytes) == cudaSuccess ? 0 : -1;
}

static int malloc_release(replayer *r, void *p, int stream)
{
    (void)r, (void)stream;
    return cudaFree(p) == cudaSuccess ? 0 : -1;
}

static uint64_t malloc_reserved(replayer *r)
{
    size_t free_bytes = 0, total = 0;
    if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
        return 0;
    return free_bytes < r->free_at_start ? r->free_at_start - free_bytes : 0;
}

static void malloc_stop(replayer *r)
{
    streams_end(r);
}

#define POOL_REPLAYER(k, l, d)                                                                 \
    {.key = k, .label = l, .design = d, .start = pool_start, .alloc = pool_alloc,               \
     .release = pool_release, .reserved = pool_reserved, .stop = pool_stop}
#define CUDA_REPLAYER(k, l, d, f)                                                               \
    {.key = k, .label = l, .needs_cuda = 1, .design = d, .start = f##_start, .alloc = f##_alloc, \
     .release = f##_release, .reserved = f##_reserved, .stop = f##_stop}
static replayer replayers[] = {
    POOL_REPLAYER("gpumem_vmm", "gpumem device pool (pages)", GPUMEM_POOL_DESIGN_VMM),
    POOL_REPLAYER("gpumem_segments", "gpumem device pool (segments)", GPUMEM_POOL_DESIGN_SEGMENTS),
    POOL_REPLAYER("gpumem_classes", "gpumem device pool (a block per class)",
                  GPUMEM_POOL_DESIGN_CLASSES),
    CUDA_REPLAYER("cuda_malloc_async", "cudaMallocAsync, threshold 0", 0, async),
    CUDA_REPLAYER("cuda_malloc_async_keep", "cudaMallocAsync, threshold UINT64_MAX", 1, async),
    CUDA_REPLAYER("cuda_malloc", "cudaMalloc", 0, malloc),
};
#undef POOL_REPLAYER
#undef CUDA_REPLAYER

/* ---- which allocators: --only ---- */

/* PyTorch's caching allocator, default and with expandable segments (run_torch). */
static const char *const torch_keys[2] = {"torch_default", "torch_expandable"};
#define NREPLAYERS (sizeof replayers / sizeof replayers[0])

const char *replay_key(size_t i)
{
    return i < NREPLAYERS ? replayers[i].key : i < NREPLAYERS + 2 ? torch_keys[i - NREPLAYERS]
                                                                   : NULL;
}

/* The key k of len bytes is key. */
static int same_key(const char *k, size_t len, const char *key)
{
    return strlen(key) == len && strncmp(k, key, len) == 0;
}

/* key is one of list's comma-separated keys */
static int key_in(const char *list, const char *key)
{
    for (const char *k = list;; k++) {
        size_t len = strcspn(k, ",");
        if (same_key(k, len, key))
            return 1;
        k += len;
        if (!*k)
            return 0;
    }
}

int replay_check_keys(const char *list, char *bad, size_t badn)
{
    for (const char *k = list;; k++) {
        size_t len = strcspn(k, ",");
        size_t i = 0;
        while (replay_key(i) && !same_key(k, len, replay_key(i)))
            i++;
        if (len == 0 || !replay_key(i)) {
            snprintf(bad, badn, "%.*s", (int)len, k);
            return -1;
        }
        k += len;
        if (!*k)
            return 0;
    }
}

/* The allocator named key is to be replayed. */
static int wanted(const replay_opts *o, const char *key)
{
    return !o->only || key_in(o->only, key);
}

/* ---- one replay ---- */

/* --cold: a buffer written, a byte a cache line, before each timed operation, as a program's
 * own work between two allocations would: the allocator then finds its data out of the CPU's
 * caches, as it does in a real program, instead of hot as in a tight replay loop. */
static unsigned char *cold_buf;
static size_t cold_bytes;

static void make_cold(void)
{
    for (size_t k = 0; k < cold_bytes; k += 64)
        cold_buf[k]++;
}

/* Replays t into r; measure: reads reserved after every operation. 0, or -1 when the
 * allocator failed (res->oom_at says where, when it was out of memory under the limit).
 * Untimed (measure 0) with --cold: the time is the operations' own, summed. */
static int run_once(replayer *r, const replay_trace *t, uint64_t limit, int measure,
                    replay_result *res)
{
    void **ptr = calloc(t->nslots + 1, sizeof *ptr);
    if (!ptr || r->start(r, t, limit) != 0) {
        free(ptr);
        snprintf(res->note, sizeof res->note, "could not start");
        return -1;
    }
    uint64_t live = 0, t0 = bench_now_ns(), in_ops = 0, op_start = 0;
    int rc = 0, cold = !measure && cold_buf;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        const replay_op *op = &t->ops[i];
        if (cold) {
            make_cold();
            op_start = bench_now_ns();
        }
        if (op->alloc) {
            rc = r->alloc(r, &ptr[op->slot], op->bytes, op->stream);
            live += op->bytes;
        } else if (ptr[op->slot]) {
            rc = r->release(r, ptr[op->slot], op->stream);
            ptr[op->slot] = NULL;
            live -= op->bytes;
        }
        if (cold)
            in_ops += bench_now_ns() - op_start;
        if (rc != 0) {
            res->oom_at = (long long)i;
            break;
        }
        if (!measure)
            continue;
        uint64_t reserved = r->reserved(r);
        if (limit && r->needs_cuda && reserved > limit) { /* CUDA's own have no limit */
            res->oom_at = (long long)i;
            rc = -1;
        }
        if (reserved > res->peak_reserved) {
            res->peak_reserved = reserved;
            res->requested_at_peak = live;
        }
    }
    if (on_cuda)
        cudaDeviceSynchronize();
    uint64_t t1 = bench_now_ns();
    if (!measure && rc == 0)
        res->ns_per_op = (double)(cold ? in_ops : t1 - t0) / (double)(t->n ? t->n : 1);
    for (size_t s = 1; s <= t->nslots; s++) /* what the recording never released */
        if (ptr[s])
            r->release(r, ptr[s], 0);
    r->stop(r);
    if (measure && r->stop == pool_stop) {
        res->counted = 1;
        res->cuda_asks = r->last.misses;
        res->pages_moved = r->last.remaps;
        res->cuda_ns = r->last.cuda_ns;
    }
    free(ptr);
    return rc;
}

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e, (void)arg;
}

static void run_replayer(replayer *r, const replay_trace *t, uint64_t limit, replay_result *res)
{
    res->key = r->key;
    res->label = r->label;
    res->oom_at = -1;
    if (r->needs_cuda && !on_cuda) {
        snprintf(res->note, sizeof res->note, "%s", needs_gpu);
        return;
    }
    gpumem_set_error_handler(quiet, NULL); /* running out of memory is an answer here */
    fprintf(stderr, "gpumem bench: replaying into %s\n", r->label);
    int rc = run_once(r, t, limit, 1, res);
    if (rc == 0 || res->oom_at >= 0) {
        replay_result timed = *res;
        timed.oom_at = -1;
        if (rc == 0 && run_once(r, t, limit, 0, &timed) == 0)
            res->ns_per_op = timed.ns_per_op;
        res->ran = 1;
    }
    gpumem_set_error_handler(NULL, NULL);
}

/* PyTorch's caching allocator, default and with expandable segments: python3 -m gpumem.replay
 * on the replay log, one JSON line out. */
static void run_torch(const char *log_path, uint64_t limit, int expandable, replay_result *res)
{
    char cold[48] = "";
    if (cold_bytes)
        snprintf(cold, sizeof cold, " --cold %zu", cold_bytes);
    res->key = torch_keys[expandable];
    res->label = expandable ? "PyTorch, expandable_segments:True" : "PyTorch caching allocator";
    res->oom_at = -1;
    if (!on_cuda || !log_path) { /* log_path NULL: the log for python3 could not be written */
        snprintf(res->note, sizeof res->note, "%s",
                 !on_cuda ? needs_gpu
                          : "cannot write the replay log for python3 in /tmp: is it full or "
                            "read-only?");
        return;
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%spython3 -m gpumem.replay --limit %" PRIu64 "%s '%s' 2>&1",
             expandable ? "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True " : "", limit, cold,
             log_path);
    fprintf(stderr, "gpumem bench: replaying into %s\n", res->label);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(res->note, sizeof res->note, "cannot run python3");
        return;
    }
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        unsigned long long reserved = 0, at_peak = 0;
        long long oom = -1;
        double ns = 0;
        if (sscanf(line, "{\"peak_reserved\": %llu, \"requested_at_peak\": %llu, \"ns_per_op\": "
                         "%lf, \"oom_at\": %lld", &reserved, &at_peak, &ns, &oom) == 4) {
            res->ran = 1;
            res->peak_reserved = reserved;
            res->requested_at_peak = at_peak;
            res->ns_per_op = ns;
            res->oom_at = oom;
        } else if (!res->ran) {
            line[strcspn(line, "\n")] = 0;
            snprintf(res->note, sizeof res->note, "%.199s", line);
        }
    }
    pclose(p);
}

int replay_convert(const char *path, const char *out_path)
{
    replay_trace t;
    char err[300];
    if (replay_load(path, &t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem bench: error: %s\n", err);
        return 1;
    }
    FILE *out = fopen(out_path, "w");
    int rc = out && replay_write_log(out, &t) == 0 ? 0 : 1;
    if (out && fclose(out) != 0)
        rc = 1;
    if (rc)
        fprintf(stderr, "gpumem bench: error: cannot write %s: %s\n", out_path, strerror(errno));
    else
        fprintf(stderr, "gpumem bench: %s: %zu operations (%zu allocations), peak requested "
                        "%" PRIu64 " bytes\n", out_path, t.n, t.allocs, t.peak_requested);
    replay_free(&t);
    return rc;
}

int replay_main(const char *path, const replay_opts *o)
{
    uint64_t limit = o->limit, cold = o->cold;
    static replay_report rep;
    replay_trace t;
    char err[300];
    if (replay_load(path, &t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem bench: error: %s\n", err);
        return 1;
    }
    free(cold_buf);
    cold_buf = cold ? calloc(1, (size_t)cold) : NULL;
    cold_bytes = cold_buf ? (size_t)cold : 0;
    if (cold && !cold_buf) {
        fprintf(stderr, "gpumem bench: error: --cold %" PRIu64 ": cannot allocate a buffer that "
                        "large here; give fewer bytes (8MiB is about an L3's worth)\n", cold);
        replay_free(&t);
        return 1;
    }
    on_cuda = strcmp(gpumem_backend(), "cuda") == 0;
    if (on_cuda && cudaSetDevice(o->device) != cudaSuccess) {
        fprintf(stderr, "gpumem bench: error: cannot use device %d\n", o->device);
        replay_free(&t);
        return 1;
    }
    memset(&rep, 0, sizeof rep);
    rep.path = path;
    rep.backend = gpumem_backend();
    rep.limit = limit;
    rep.cold = cold;
    rep.ops = t.n;
    rep.allocs = t.allocs;
    rep.skipped = t.skipped;
    rep.nstreams = t.nstreams;
    rep.npids = t.npids;
    rep.ndevices = t.ndevices;
    rep.peak_requested = t.peak_requested;
    for (size_t i = 0; i < NREPLAYERS; i++)
        if (wanted(o, replayers[i].key))
            run_replayer(&replayers[i], &t, limit, &rep.results[rep.nresults++]);
    int torch[2] = {wanted(o, torch_keys[0]), wanted(o, torch_keys[1])};
    char log_path[] = "/tmp/gpumem-replay-XXXXXX";
    int fd = on_cuda && (torch[0] || torch[1]) ? mkstemp(log_path) : -1;
    FILE *log = fd >= 0 ? fdopen(fd, "w") : NULL;
    int logged = log && replay_write_log(log, &t) == 0;
    logged = log && fclose(log) == 0 && logged;
    for (int e = 0; e < 2; e++)
        if (torch[e])
            run_torch(logged ? log_path : NULL, limit, e, &rep.results[rep.nresults++]);
    if (fd >= 0)
        unlink(log_path);
    replay_free(&t);
    int status = replay_print_table(stdout, &rep) == 0 ? 0 : 1;
    if (o->json_path) {
        FILE *j = fopen(o->json_path, "w");
        if (!j || replay_write_json(j, &rep, err, sizeof err) != 0) {
            fprintf(stderr, "gpumem bench: error: %s: %s\n", o->json_path,
                    j ? err : strerror(errno));
            status = 1;
        }
        if (j && fclose(j) != 0)
            status = 1;
    }
    return status;
}

/* bench_pool: what a pool allocate + free pair costs, next to its peers.
 *
 * For the device pool and the pinned pool: gpumem_pool_alloc + gpumem_free of the same size
 * on the same stream, so that every pair after the first is served from the pool's cache,
 * on one thread, on as many threads as the machine has cores (at most 16) and on 16 threads
 * at once (one shared pool, each thread its own stream). The cores column is the one a
 * machine with fewer than 16 cores can judge scaling by: 16 threads on 2 cores take turns.
 * The cpu columns are CPU time a pair (the threads' own, summed): on a busy or small machine
 * they show what a pair costs, and whether it costs more when threads share the pool (lines
 * moving between cores, spinning), where wall time shows mostly the other load.
 *
 * On a GPU (`cuda`), each gpumem row is followed by its peers, measured the same way in the
 * same run, with the ratio peer / gpumem at 1 and 16 threads (above 1: gpumem is faster):
 * device: cudaMallocAsync + cudaFreeAsync on a memory pool that keeps its memory (release
 * threshold UINT64_MAX), CUB's CachingDeviceAllocator (deprecated by CCCL; the toolkit's
 * cub/util_allocator.cuh, one allocator for all threads), cudaMalloc + cudaFree; pinned: the CUDA host memory pool
 * (cudaMemPoolCreate with a host location, cudaMallocFromPoolAsync + cudaFreeAsync), and
 * cudaMallocHost + cudaFreeHost. For scale, the tracked stream-ordered pair without a pool
 * (gpumem_device_alloc_async + gpumem_free_async) on one thread.
 * Targets: <= 100 ns a pair on one thread, and on 16 threads >= 8x the pairs a second of one
 * (aggregate <= 30 ns a pair), both pools, 4 KiB and 1 MiB.
 *
 * Backends: `cuda` (the default; needs a GPU, else it says so and exits 0) or `sim` (the
 * simulated device: the pools' own cost over host memory, no peers; the same code runs on a
 * GPU, where the cache hit path never reaches CUDA, so sim and GPU numbers of the hit path
 * are close).
 *
 * --pools-only measures the gpumem pool rows alone, no peers: what a comparison of two
 * configurations of the same build needs (GPUMEM_NVTX=0 against 1, in a few seconds a run).
 *
 * Usage: bench_pool [cuda|sim] [--quick] [--pools-only]
 * Prints a markdown table and `RESULT ...` lines. Exits 1 when an allocation or a release
 * fails, after saying which on stderr. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"
#include "gpumem.h"
#ifdef GPUMEM_BENCH_HAVE_CUB
#include "cub.h"
#endif

#define THREADS 16

static int use_sim;
static int pools_only; /* --pools-only: no peers, no pool-less row */
static long pairs = 2000000;
static int reps = 5; /* each figure is the best of reps runs: other work on the machine only slows */
static atomic_int failed;
static cudaStream_t streams[THREADS]; /* thread i's stream, made once */
static cudaMemPool_t keep_pool, host_pool; /* the CUDA pools of the peers */

/* A peer's pair: 0 or a cudaError_t value. */
typedef int (*peer_fn)(size_t bytes, cudaStream_t stream);

enum { GPUMEM_POOL_PAIR, GPUMEM_PINNED_PAIR, GPUMEM_ASYNC_PAIR, PEER_PAIR };

typedef struct {
    int what;
    gpumem_pool *pool;
    peer_fn peer;
    cudaStream_t stream;
    size_t bytes;
    long n;
    uint64_t ns;
    uint64_t cpu_ns; /* the thread's own CPU time in the loop */
    pthread_barrier_t *start;
} job;

typedef struct {
    double ns1, nsc, ns16, cpu1, cpu16;
} result;

static uint64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Says what failed from the thread it failed in: gpumem's error record is per thread. */
static void fail(const char *what, size_t bytes, int cuda_error)
{
    if (cuda_error)
        fprintf(stderr, "bench_pool: error: %s of %zu bytes failed: %s: %s\n", what, bytes,
                cudaGetErrorName((cudaError_t)cuda_error),
                cudaGetErrorString((cudaError_t)cuda_error));
    else
        fprintf(stderr, "bench_pool: error: %s of %zu bytes failed: %s\n", what, bytes,
                gpumem_last_error()->message);
    failed = 1;
}

/* One pair of j's kind; returns 0, or -1 after saying what failed. */
static int one_pair(const job *j)
{
    if (j->what == PEER_PAIR) {
        int e = j->peer(j->bytes, j->stream);
        if (e)
            fail("a peer's allocate + release", j->bytes, e);
        return e ? -1 : 0;
    }
    void *p = j->what == GPUMEM_ASYNC_PAIR ? gpumem_device_alloc_async(1, j->bytes, j->stream)
                                           : gpumem_pool_alloc(j->pool, 1, j->bytes, j->stream);
    if (!p) {
        fail("an allocation", j->bytes, 0);
        return -1;
    }
    /* gpumem_free_async is not for pinned memory: pinned pairs release with gpumem_free. */
    int rc = j->what == GPUMEM_PINNED_PAIR ? gpumem_free(p) : gpumem_free_async(p, j->stream);
    if (rc != GPUMEM_OK) {
        fail("a release", j->bytes, 0);
        return -1;
    }
    return 0;
}

static void *run_pairs(void *arg)
{
    job *j = arg;
    /* One pair first, so that the timed loop measures reuse, not the first CUDA call. */
    int bad = one_pair(j);
    if (j->start)
        pthread_barrier_wait(j->start);
    uint64_t c0 = cpu_now_ns(), t0 = bench_now_ns();
    for (long i = 0; i < j->n && !bad; i++)
        bad = one_pair(j);
    j->ns = bench_now_ns() - t0;
    j->cpu_ns = cpu_now_ns() - c0;
    return NULL;
}

/* Aggregate ns a pair on n threads at once: every pair of every thread over the time the
 * slowest thread took. */
static double aggregate(const job *proto, long per_thread, int n, double *cpu_per_pair)
{
    pthread_t t[THREADS];
    job j[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        j[i] = *proto;
        j[i].stream = proto->what == GPUMEM_PINNED_PAIR ? NULL : streams[i];
        j[i].n = per_thread;
        j[i].start = &start;
        pthread_create(&t[i], NULL, run_pairs, &j[i]);
    }
    uint64_t longest = 0, cpu = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (j[i].ns > longest)
            longest = j[i].ns;
        cpu += j[i].cpu_ns;
    }
    pthread_barrier_destroy(&start);
    *cpu_per_pair = (double)cpu / (double)((long)n * per_thread);
    return (double)longest / (double)((long)n * per_thread);
}

static double best(double old, double v, int first)
{
    return first || v < old ? v : old;
}

/* Measures proto's pair with n pairs on one thread (n / 4 a thread on several); prints its
 * row, with the ratio to vs when vs is given (a peer's row). */
static result measure(const char *key, const char *label, const job *proto, long n,
                      int threaded, const result *vs)
{
    result r = {0, 0, 0, 0, 0};
    job one = *proto;
    one.stream = proto->what == GPUMEM_PINNED_PAIR ? NULL : streams[0];
    one.n = n;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nc = cores < 1 ? 1 : cores > THREADS ? THREADS : (int)cores;
    for (int k = 0; k < reps && !failed; k++) {
        run_pairs(&one);
        r.ns1 = best(r.ns1, (double)one.ns / (double)n, k == 0);
        r.cpu1 = best(r.cpu1, (double)one.cpu_ns / (double)n, k == 0);
        if (!threaded)
            continue;
        double cpu_c, cpu_t;
        double c = aggregate(proto, n / 4 > 0 ? n / 4 : 1, nc, &cpu_c);
        double t = aggregate(proto, n / 4 > 0 ? n / 4 : 1, THREADS, &cpu_t);
        r.nsc = best(r.nsc, c, k == 0);
        r.ns16 = best(r.ns16, t, k == 0);
        r.cpu16 = best(r.cpu16, cpu_t, k == 0);
    }
    if (!use_sim) { /* stream-ordered releases are done once the streams are */
        for (int i = 0; i < THREADS; i++)
            if (cudaStreamSynchronize(streams[i]) != cudaSuccess)
                failed = 1;
    }
    double speedup = threaded && r.ns16 > 0 ? r.ns1 / r.ns16 : 0.0;
    double ratio1 = vs && vs->ns1 > 0 ? r.ns1 / vs->ns1 : 0.0;
    double ratio16 = vs && vs->ns16 > 0 && r.ns16 > 0 ? r.ns16 / vs->ns16 : 0.0;
    printf("| %-40s | %8zu | %10.1f | %10.1f | %12.1f | %7.2fx | %8.1f | %8.1f | %7.2fx | %7.2fx |\n",
           label, proto->bytes, r.ns1, r.nsc, r.ns16, speedup, r.cpu1, r.cpu16, ratio1, ratio16);
    printf("RESULT bench=pool key=%s bytes=%zu ns_per_pair_1t=%.1f cores=%d "
           "ns_per_pair_cores_aggregate=%.1f ns_per_pair_16t_aggregate=%.1f speedup_16t=%.2f "
           "cpu_ns_per_pair_1t=%.1f cpu_ns_per_pair_16t=%.1f vs_gpumem_1t=%.2f "
           "vs_gpumem_16t=%.2f\n",
           key, proto->bytes, r.ns1, nc, r.nsc, r.ns16, speedup, r.cpu1, r.cpu16, ratio1,
           ratio16);
    fflush(stdout);
    return r;
}

/* ---- the peers (cuda only) ---- */

static int peer_keep_pool(size_t bytes, cudaStream_t s)
{
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, keep_pool, s);
    return (int)(e != cudaSuccess ? e : cudaFreeAsync(p, s));
}

static int peer_host_pool(size_t bytes, cudaStream_t s)
{
    void *p = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&p, bytes, host_pool, s);
    return (int)(e != cudaSuccess ? e : cudaFreeAsync(p, s));
}

static int peer_malloc(size_t bytes, cudaStream_t s)
{
    (void)s;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes);
    return (int)(e != cudaSuccess ? e : cudaFree(p));
}

static int peer_malloc_host(size_t bytes, cudaStream_t s)
{
    (void)s;
    void *p = NULL;
    cudaError_t e = cudaMallocHost(&p, bytes);
    return (int)(e != cudaSuccess ? e : cudaFreeHost(p));
}

#ifdef GPUMEM_BENCH_HAVE_CUB
static int peer_cub(size_t bytes, cudaStream_t s)
{
    return bench_cub_pair(bytes, s);
}
#endif

/* A CUDA memory pool that keeps what is released (release threshold UINT64_MAX). */
static int make_cuda_pool(cudaMemPool_t *pool, int host)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = host ? cudaMemLocationTypeHost : cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaError_t e = cudaMemPoolCreate(pool, &props);
    uint64_t keep = UINT64_MAX;
    if (e == cudaSuccess)
        e = cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e != cudaSuccess)
        fprintf(stderr, "bench_pool: warning: cudaMemPoolCreate (%s location) failed: %s: %s; "
                        "its rows are left out\n", host ? "host" : "device", cudaGetErrorName(e),
                cudaGetErrorString(e));
    return e == cudaSuccess;
}

static void device_rows(const char *key, gpumem_pool *dev, size_t bytes, int have_keep)
{
    char k[64];
    job g = {GPUMEM_POOL_PAIR, dev, NULL, NULL, bytes, 0, 0, 0, NULL};
    result r = measure(key, "gpumem device pool", &g, pairs, 1, NULL);
    if (use_sim || pools_only)
        return;
    const char *sz = bytes >= ((size_t)1 << 20) ? "1m" : "4k";
    if (have_keep) {
        job p = {PEER_PAIR, NULL, peer_keep_pool, NULL, bytes, 0, 0, 0, NULL};
        snprintf(k, sizeof k, "cuda_malloc_async_keep_%s", sz);
        measure(k, "  cudaMallocFromPoolAsync, pool keeps all", &p, pairs / 10, 1, &r);
    }
#ifdef GPUMEM_BENCH_HAVE_CUB
    job c = {PEER_PAIR, NULL, peer_cub, NULL, bytes, 0, 0, 0, NULL};
    snprintf(k, sizeof k, "cub_caching_allocator_%s", sz);
    measure(k, "  CUB CachingDeviceAllocator (deprecated)", &c, pairs / 10, 1, &r);
#endif
    job m = {PEER_PAIR, NULL, peer_malloc, NULL, bytes, 0, 0, 0, NULL};
    snprintf(k, sizeof k, "cuda_malloc_%s", sz);
    measure(k, "  cudaMalloc + cudaFree", &m, 2000, 1, &r);
}

static void pinned_rows(const char *key, gpumem_pool *pin, size_t bytes, int have_host)
{
    char k[64];
    job g = {GPUMEM_PINNED_PAIR, pin, NULL, NULL, bytes, 0, 0, 0, NULL};
    result r = measure(key, "gpumem pinned pool", &g, pairs, 1, NULL);
    if (use_sim || pools_only)
        return;
    const char *sz = bytes >= ((size_t)1 << 20) ? "1m" : "4k";
    if (have_host) {
        job p = {PEER_PAIR, NULL, peer_host_pool, NULL, bytes, 0, 0, 0, NULL};
        snprintf(k, sizeof k, "cuda_host_mempool_%s", sz);
        measure(k, "  CUDA host memory pool, keeps all", &p, pairs / 10, 1, &r);
    }
    job m = {PEER_PAIR, NULL, peer_malloc_host, NULL, bytes, 0, 0, 0, NULL};
    snprintf(k, sizeof k, "cuda_malloc_host_%s", sz);
    measure(k, "  cudaMallocHost + cudaFreeHost", &m, 100, 1, &r);
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            pairs = 200000;
            reps = 3;
        } else if (strcmp(argv[i], "--pools-only") == 0) {
            pools_only = 1;
        } else {
            backend = argv[i];
        }
    }
    if (gpumem_backend_select(backend) != GPUMEM_OK) {
        fprintf(stderr, "usage: %s [cuda|sim] [--quick] [--pools-only]\n", argv[0]);
        return 2;
    }
    if (gpumem_init() != GPUMEM_OK) {
        printf("bench_pool: no usable CUDA device here (%s); nothing measured. Run it on a "
               "GPU machine, or `bench_pool sim` for the pools' own cost.\n",
               gpumem_last_error()->message);
        return 0;
    }
    use_sim = strcmp(gpumem_backend(), "sim") == 0;
    for (int i = 0; i < THREADS; i++) {
        if (use_sim) {
            streams[i] = (cudaStream_t)(uintptr_t)(0x1000 * (i + 1)); /* handles only */
            continue;
        }
        cudaError_t e = cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking);
        if (e != cudaSuccess) {
            fprintf(stderr, "bench_pool: error: cudaStreamCreateWithFlags for thread %d: %s: "
                            "%s\n", i, cudaGetErrorName(e), cudaGetErrorString(e));
            return 1;
        }
    }
    int peers = !use_sim && !pools_only;
    int have_keep = peers && make_cuda_pool(&keep_pool, 0);
    int have_host = peers && make_cuda_pool(&host_pool, 1);
#ifdef GPUMEM_BENCH_HAVE_CUB
    if (peers)
        bench_cub_create();
#endif
    char cpu[128];
    printf("# bench_pool on %s (%s, %ld cores), %ld pairs on one thread, %d threads x %ld, best "
           "of %d runs\n\n",
           gpumem_backend(), bench_cpu_model(cpu, sizeof cpu), sysconf(_SC_NPROCESSORS_ONLN),
           pairs, THREADS, pairs / 4, reps);
    printf("| %-40s | %8s | %10s | %10s | %12s | %8s | %8s | %8s | %8s | %8s |\n", "pair",
           "bytes", "ns, 1 thr", "ns, cores", "ns, 16 thr agg", "16 thr", "cpu, 1", "cpu, 16",
           "vs, 1", "vs, 16");
    printf("|------------------------------------------|---------:|-----------:|-----------:|"
           "-------------:|---------:|---------:|---------:|---------:|---------:|\n");
    gpumem_pool *dev = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    /* The second only after the first: a success would overwrite the first's error record. */
    gpumem_pool *pin = dev ? gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL) : NULL;
    if (!dev || !pin) {
        fprintf(stderr, "bench_pool: error: gpumem_pool_create(%s) failed: %s\n",
                dev ? "GPUMEM_KIND_PINNED" : "GPUMEM_KIND_DEVICE", gpumem_last_error()->message);
        return 1;
    }
    device_rows("device_pool_4k", dev, 4096, have_keep);
    device_rows("device_pool_1m", dev, (size_t)1 << 20, have_keep);
    pinned_rows("pinned_pool_4k", pin, 4096, have_host);
    pinned_rows("pinned_pool_1m", pin, (size_t)1 << 20, have_host);
    job a = {GPUMEM_ASYNC_PAIR, NULL, NULL, NULL, 4096, 0, 0, 0, NULL};
    if (!pools_only)
        measure("device_async_4k", "no pool: device_alloc_async + free", &a,
                pairs / 20 > 1000 ? pairs / 20 : 1000, 0, NULL);
    gpumem_pool_destroy(dev);
    gpumem_pool_destroy(pin);
#ifdef GPUMEM_BENCH_HAVE_CUB
    if (peers)
        bench_cub_destroy();
#endif
    if (have_keep)
        (void)cudaMemPoolDestroy(keep_pool);
    if (have_host)
        (void)cudaMemPoolDestroy(host_pool);
    if (failed)
        fprintf(stderr, "bench_pool: error: a measurement failed (see above); its numbers are not "
                        "valid\n");
    return failed;
}

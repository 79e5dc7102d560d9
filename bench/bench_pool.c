/* bench_pool: what a pool allocate + free pair costs (issue 7).
 *
 * For the device pool and the pinned pool: gpumem_pool_alloc + gpumem_free of the same size
 * on the same stream, so that every pair after the first is served from the pool's cache,
 * on one thread, on as many threads as the machine has cores (at most 16) and on 16 threads
 * at once (one shared pool, each thread its own stream). The cores column is the one a
 * machine with fewer than 16 cores can judge scaling by: 16 threads on 2 cores take turns.
 * The cpu columns are CPU time a pair (the threads' own, summed): on a busy or small machine
 * they show what a pair costs, and whether it costs more when threads share the pool (lines
 * moving between cores, spinning), where wall time shows mostly the other load.
 * For scale, the tracked stream-ordered pair without a pool (gpumem_device_alloc_async +
 * gpumem_free_async, i.e. cudaMallocAsync + cudaFreeAsync) on one thread.
 * Targets: <= 100 ns a pair on one thread, and on 16 threads >= 8x the pairs a second of one
 * (aggregate <= 30 ns a pair), both pools, 4 KiB and 1 MiB.
 *
 * Backends: `cuda` (the default; needs a GPU, else it says so and exits 0) or `sim` (the
 * simulated device: the pools' own cost over host memory; the same code runs on a GPU, where
 * the cache hit path never reaches CUDA, so sim and GPU numbers of the hit path are close).
 *
 * Usage: bench_pool [cuda|sim] [--quick]
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

#define THREADS 16

static int use_sim;
static long pairs = 2000000;
static int reps = 5; /* each figure is the best of reps runs: other work on the machine only slows */
static atomic_int failed;

typedef struct {
    gpumem_pool *pool; /* NULL: the stream-ordered pair without a pool */
    cudaStream_t stream;
    size_t bytes;
    long n;
    uint64_t ns;
    uint64_t cpu_ns; /* the thread's own CPU time in the loop */
    pthread_barrier_t *start;
} job;

static uint64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Says what failed from the thread it failed in: gpumem's error record is per thread. */
static void fail(const char *what, size_t bytes)
{
    fprintf(stderr, "bench_pool: error: %s of %zu bytes failed: %s\n", what, bytes,
            gpumem_last_error()->message);
    failed = 1;
}

static void *run_pairs(void *arg)
{
    job *j = arg;
    /* One pair first, so that the timed loop measures reuse, not the first CUDA call. */
    void *p = j->pool ? gpumem_pool_alloc(j->pool, 1, j->bytes, j->stream)
                      : gpumem_device_alloc_async(1, j->bytes, j->stream);
    if (!p || gpumem_free_async(p, j->stream) != GPUMEM_OK)
        fail(p ? "the first release" : "the first allocation", j->bytes);
    if (j->start)
        pthread_barrier_wait(j->start);
    uint64_t c0 = cpu_now_ns(), t0 = bench_now_ns();
    for (long i = 0; i < j->n; i++) {
        p = j->pool ? gpumem_pool_alloc(j->pool, 1, j->bytes, j->stream)
                    : gpumem_device_alloc_async(1, j->bytes, j->stream);
        if (!p || gpumem_free_async(p, j->stream) != GPUMEM_OK) {
            fail(p ? "a release" : "an allocation", j->bytes);
            break;
        }
    }
    j->ns = bench_now_ns() - t0;
    j->cpu_ns = cpu_now_ns() - c0;
    return NULL;
}

/* gpumem_free_async is not for pinned memory: pinned pairs release with gpumem_free. */
static void *run_pinned_pairs(void *arg)
{
    job *j = arg;
    void *p = gpumem_pool_alloc(j->pool, 1, j->bytes, NULL);
    if (!p || gpumem_free(p) != GPUMEM_OK)
        fail(p ? "the first pinned release" : "the first pinned allocation", j->bytes);
    if (j->start)
        pthread_barrier_wait(j->start);
    uint64_t c0 = cpu_now_ns(), t0 = bench_now_ns();
    for (long i = 0; i < j->n; i++) {
        p = gpumem_pool_alloc(j->pool, 1, j->bytes, NULL);
        if (!p || gpumem_free(p) != GPUMEM_OK) {
            fail(p ? "a pinned release" : "a pinned allocation", j->bytes);
            break;
        }
    }
    j->ns = bench_now_ns() - t0;
    j->cpu_ns = cpu_now_ns() - c0;
    return NULL;
}

static cudaStream_t stream_for(int i)
{
    if (use_sim)
        return (cudaStream_t)(uintptr_t)(0x1000 * (i + 1)); /* handles only */
    cudaStream_t s = NULL;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        fprintf(stderr, "bench_pool: error: cudaStreamCreateWithFlags for thread %d: %s: %s\n", i,
                cudaGetErrorName(e), cudaGetErrorString(e));
        failed = 1;
    }
    return s;
}

/* Aggregate ns a pair on n threads at once: every pair of every thread over the time the
 * slowest thread took. */
static double aggregate(void *(*fn)(void *), gpumem_pool *pool, int pinned, size_t bytes, int n,
                        double *cpu_per_pair)
{
    pthread_t t[THREADS];
    job j[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        j[i] = (job){pool, pinned ? NULL : stream_for(i), bytes, pairs / 4, 0, 0, &start};
        pthread_create(&t[i], NULL, fn, &j[i]);
    }
    uint64_t longest = 0, cpu = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (j[i].ns > longest)
            longest = j[i].ns;
        cpu += j[i].cpu_ns;
    }
    pthread_barrier_destroy(&start);
    *cpu_per_pair = (double)cpu / (double)((long)n * (pairs / 4));
    return (double)longest / (double)((long)n * (pairs / 4));
}

/* ns a pair on one thread, and with threaded, aggregate ns a pair on the machine's cores
 * (at most 16) and on 16 threads, with the 16-thread speedup in pairs a second (0: not
 * measured). */
static void measure(const char *key, const char *label, gpumem_pool *pool, int pinned,
                    size_t bytes, int threaded)
{
    void *(*fn)(void *) = pinned ? run_pinned_pairs : run_pairs;
    job one = {pool, pinned ? NULL : stream_for(0), bytes, pairs, 0, 0, NULL};
    double ns1 = 0.0, cpu1 = 0.0, cpu16 = 0.0;
    for (int r = 0; r < reps; r++) {
        fn(&one);
        double ns = (double)one.ns / (double)pairs, cpu = (double)one.cpu_ns / (double)pairs;
        ns1 = r == 0 || ns < ns1 ? ns : ns1;
        cpu1 = r == 0 || cpu < cpu1 ? cpu : cpu1;
    }
    double speedup = 0.0, ns16 = 0.0, nsc = 0.0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nc = cores < 1 ? 1 : cores > THREADS ? THREADS : (int)cores;
    for (int r = 0; threaded && r < reps; r++) {
        double cpu_c, cpu_t;
        double c = aggregate(fn, pool, pinned, bytes, nc, &cpu_c);
        double t = aggregate(fn, pool, pinned, bytes, THREADS, &cpu_t);
        nsc = r == 0 || c < nsc ? c : nsc;
        ns16 = r == 0 || t < ns16 ? t : ns16;
        cpu16 = r == 0 || cpu_t < cpu16 ? cpu_t : cpu16;
    }
    if (threaded)
        speedup = ns1 / ns16;
    printf("| %-34s | %8zu | %10.1f | %10.1f | %12.1f | %7.2fx | %8.1f | %8.1f |\n", label,
           bytes, ns1, nsc, ns16, speedup, cpu1, cpu16);
    printf("RESULT bench=pool key=%s bytes=%zu ns_per_pair_1t=%.1f cores=%d "
           "ns_per_pair_cores_aggregate=%.1f ns_per_pair_16t_aggregate=%.1f speedup_16t=%.2f "
           "cpu_ns_per_pair_1t=%.1f cpu_ns_per_pair_16t=%.1f\n",
           key, bytes, ns1, nc, nsc, ns16, speedup, cpu1, cpu16);
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            pairs = 200000;
            reps = 3;
        }
        else
            backend = argv[i];
    }
    if (gpumem_backend_select(backend) != GPUMEM_OK) {
        fprintf(stderr, "usage: %s [cuda|sim] [--quick]\n", argv[0]);
        return 2;
    }
    if (gpumem_init() != GPUMEM_OK) {
        printf("bench_pool: no usable CUDA device here (%s); nothing measured. Run it on a "
               "GPU machine, or `bench_pool sim` for the pools' own cost.\n",
               gpumem_last_error()->message);
        return 0;
    }
    use_sim = strcmp(gpumem_backend(), "sim") == 0;
    char cpu[128];
    printf("# bench_pool on %s (%s, %ld cores), %ld pairs on one thread, %d threads x %ld, best "
           "of %d runs\n\n",
           gpumem_backend(), bench_cpu_model(cpu, sizeof cpu), sysconf(_SC_NPROCESSORS_ONLN),
           pairs, THREADS, pairs / 4, reps);
    printf("| %-34s | %8s | %10s | %10s | %12s | %8s | %8s | %8s |\n", "pair", "bytes",
           "ns, 1 thr", "ns, cores", "ns, 16 thr agg", "16 thr", "cpu, 1", "cpu, 16");
    printf("|------------------------------------|---------:|-----------:|-----------:|-------------:|---------:|---------:|---------:|\n");
    gpumem_pool *dev = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    /* The second only after the first: a success would overwrite the first's error record. */
    gpumem_pool *pin = dev ? gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL) : NULL;
    if (!dev || !pin) {
        fprintf(stderr, "bench_pool: error: gpumem_pool_create(%s) failed: %s\n",
                dev ? "GPUMEM_KIND_PINNED" : "GPUMEM_KIND_DEVICE", gpumem_last_error()->message);
        return 1;
    }
    measure("device_pool_4k", "device pool, alloc + free", dev, 0, 4096, 1);
    measure("device_pool_1m", "device pool, alloc + free", dev, 0, (size_t)1 << 20, 1);
    measure("pinned_pool_4k", "pinned pool, alloc + free", pin, 1, 4096, 1);
    measure("pinned_pool_1m", "pinned pool, alloc + free", pin, 1, (size_t)1 << 20, 1);
    long saved = pairs;
    pairs = pairs / 20 > 1000 ? pairs / 20 : 1000;
    measure("device_async_4k", "no pool: device_alloc_async + free", NULL, 0, 4096, 0);
    pairs = saved;
    gpumem_pool_destroy(dev);
    gpumem_pool_destroy(pin);
    if (failed)
        fprintf(stderr, "bench_pool: error: a measurement failed (see above); its numbers are not "
                        "valid\n");
    return failed;
}

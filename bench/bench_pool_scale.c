/* bench_pool_scale: how pool allocate + free pairs scale with threads.
 *
 * For the device and pinned pools at 4 KiB and 1 MiB (bench_pool's four gpumem rows): each
 * thread count of the list (default 1, 2, 4, 8, 16) runs R times (default 10); a run starts
 * the threads together, each does its pairs on its own stream (pinned: the NULL stream) from
 * one shared pool, and the run's figure is the aggregate wall time a pair: the slowest thread's
 * time over every thread's pairs. Each row gives the min, median and max of the runs, the CPU
 * time a pair (the threads' own, summed; median), and the speedup: one thread's median over
 * the row's median (pairs a second against one thread's). Targets: <= 100 ns a pair on one
 * thread; >= 8x at 16 threads.
 *
 * Usage: bench_pool_scale [cuda|sim] [--threads 1,2,4,8,16] [--runs 10] [--pairs N]
 * (N: pairs a thread in a run, default 500000). Prints a markdown table and `RESULT ...`
 * lines; exits 1 when an allocation or release fails, 0 without a usable device (cuda). */
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

#define MAX_THREADS 64
#define MAX_COUNTS 16
#define MAX_RUNS 100

static long pairs = 500000;
static int runs = 10;
static int counts[MAX_COUNTS] = {1, 2, 4, 8, 16};
static int ncounts = 5;
static atomic_int failed;
static cudaStream_t streams[MAX_THREADS];

typedef struct {
    gpumem_pool *pool;
    int pinned;
    cudaStream_t stream;
    size_t bytes;
    uint64_t ns, cpu_ns;
    pthread_barrier_t *start;
} job;

static uint64_t cpu_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int one_pair(const job *j)
{
    void *p = gpumem_pool_alloc(j->pool, 1, j->bytes, j->stream);
    int rc = !p ? GPUMEM_ENOMEM : j->pinned ? gpumem_free(p) : gpumem_free_async(p, j->stream);
    if (rc != GPUMEM_OK && !atomic_exchange(&failed, 1))
        fprintf(stderr, "bench_pool_scale: error: a pair of %zu bytes failed: %s\n", j->bytes,
                gpumem_last_error()->message);
    return rc;
}

static void *run_pairs(void *arg)
{
    job *j = arg;
    int bad = one_pair(j); /* the first pair fills the thread's cache: not timed */
    pthread_barrier_wait(j->start);
    uint64_t c0 = cpu_now_ns(), t0 = bench_now_ns();
    for (long i = 0; i < pairs && !bad; i++)
        bad = one_pair(j);
    j->ns = bench_now_ns() - t0;
    j->cpu_ns = cpu_now_ns() - c0;
    return NULL;
}

/* One run on n threads: aggregate ns a pair; *cpu gets the CPU ns a pair. */
static double one_run(gpumem_pool *pool, int pinned, size_t bytes, int n, double *cpu)
{
    pthread_t t[MAX_THREADS];
    job j[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        j[i] = (job){pool, pinned, pinned ? NULL : streams[i], bytes, 0, 0, &start};
        pthread_create(&t[i], NULL, run_pairs, &j[i]);
    }
    uint64_t longest = 0, cpu_sum = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        longest = j[i].ns > longest ? j[i].ns : longest;
        cpu_sum += j[i].cpu_ns;
    }
    pthread_barrier_destroy(&start);
    *cpu = (double)cpu_sum / (double)((long)n * pairs);
    return (double)longest / (double)((long)n * pairs);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void rows(const char *key, const char *label, gpumem_pool *pool, int pinned, size_t bytes)
{
    double one = 0;
    for (int c = 0; c < ncounts && !failed; c++) {
        double ns[MAX_RUNS], cpu[MAX_RUNS];
        for (int r = 0; r < runs && !failed; r++)
            ns[r] = one_run(pool, pinned, bytes, counts[c], &cpu[r]);
        double med = median(ns, runs), cpu_med = median(cpu, runs);
        if (c == 0)
            one = med * counts[0];
        double speedup = med > 0 ? one / med : 0;
        printf("| %-18s | %8zu | %7d | %8.1f | %8.1f | %8.1f | %8.1f | %7.2fx |\n", label, bytes,
               counts[c], ns[0], med, ns[runs - 1], cpu_med, speedup);
        printf("RESULT bench=pool_scale key=%s bytes=%zu threads=%d runs=%d ns_per_pair_min=%.1f "
               "ns_per_pair_median=%.1f ns_per_pair_max=%.1f cpu_ns_per_pair_median=%.1f "
               "speedup_vs_1t=%.2f\n",
               key, bytes, counts[c], runs, ns[0], med, ns[runs - 1], cpu_med, speedup);
        fflush(stdout);
    }
}

/* "1,2,4" into counts; 0 on success. */
static int parse_counts(const char *text)
{
    ncounts = 0;
    for (const char *s = text; *s && ncounts < MAX_COUNTS;) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > MAX_THREADS || (*end && *end != ','))
            return -1;
        counts[ncounts++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return ncounts ? 0 : -1;
}

static int parse_args(int argc, char **argv, const char **backend)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(argv[i], "--threads") == 0 && parse_counts(v) == 0)
            i++;
        else if (strcmp(argv[i], "--runs") == 0 && (runs = atoi(v)) >= 1 && runs <= MAX_RUNS)
            i++;
        else if (strcmp(argv[i], "--pairs") == 0 && (pairs = atol(v)) >= 1)
            i++;
        else if (argv[i][0] != '-')
            *backend = argv[i];
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    if (parse_args(argc, argv, &backend) != 0 || gpumem_backend_select(backend) != GPUMEM_OK) {
        fprintf(stderr, "usage: %s [cuda|sim] [--threads 1,2,4,8,16] [--runs 1-100] "
                        "[--pairs N]\n", argv[0]);
        return 2;
    }
    if (gpumem_init() != GPUMEM_OK) {
        printf("bench_pool_scale: no usable CUDA device here (%s); nothing measured.\n",
               gpumem_last_error()->message);
        return 0;
    }
    int sim = strcmp(gpumem_backend(), "sim") == 0;
    for (int i = 0; i < MAX_THREADS; i++) {
        if (sim)
            streams[i] = (cudaStream_t)(uintptr_t)(0x1000 * (i + 1)); /* handles only */
        else if (cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking) != cudaSuccess)
            return fprintf(stderr, "bench_pool_scale: error: cudaStreamCreate failed\n"), 1;
    }
    gpumem_pool *dev = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    gpumem_pool *pin = dev ? gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL) : NULL;
    if (!dev || !pin) {
        fprintf(stderr, "bench_pool_scale: error: gpumem_pool_create failed: %s\n",
                gpumem_last_error()->message);
        return 1;
    }
    char cpu[128];
    printf("# bench_pool_scale on %s (%s, %ld cores), %ld pairs a thread, %d runs a row\n\n",
           gpumem_backend(), bench_cpu_model(cpu, sizeof cpu), sysconf(_SC_NPROCESSORS_ONLN),
           pairs, runs);
    printf("| %-18s | %8s | %7s | %8s | %8s | %8s | %8s | %8s |\n", "pool", "bytes", "threads",
           "ns min", "ns med", "ns max", "cpu ns", "speedup");
    printf("|--------------------|---------:|--------:|---------:|---------:|---------:|"
           "---------:|---------:|\n");
    rows("device_pool_4k", "device pool", dev, 0, 4096);
    rows("device_pool_1m", "device pool", dev, 0, (size_t)1 << 20);
    rows("pinned_pool_4k", "pinned pool", pin, 1, 4096);
    rows("pinned_pool_1m", "pinned pool", pin, 1, (size_t)1 << 20);
    if (!sim)
        for (int i = 0; i < MAX_THREADS; i++)
            (void)cudaStreamSynchronize(streams[i]);
    gpumem_pool_destroy(dev);
    gpumem_pool_destroy(pin);
    return failed;
}

/* bench_alloc: tracked allocation and release against the raw CUDA pair.
 *
 * For device memory (gpumem_device_alloc + gpumem_free against cudaMalloc + cudaFree) and
 * pinned memory (gpumem_pinned_alloc + gpumem_free against cudaMallocHost + cudaFreeHost), at
 * 256 B, 1 MiB and 1 GiB (where memory allows). A third pair, gpumem's backend table called
 * directly (the driver API gpumem uses, no registry), separates what the registry adds from
 * any difference between the driver and the runtime. Target: tracked within 1 % of raw.
 *
 * The pairs are interleaved one allocation at a time, in rotating order, so drift in the
 * driver or the machine falls on all of them alike; each alloc and each free is timed alone
 * and the table gives medians (and the mean) over all pairs.
 *
 * Backends: `cuda` (the default; GPUMEM_BACKEND or the first argument choose) needs a GPU; on
 * a machine without one it says so and exits 0, measuring nothing. `sim` measures gpumem's
 * overhead over the simulated device, whose "raw" pair is the simulated driver itself (host
 * memory): those are not GPU numbers.
 *
 * Usage: bench_alloc [cuda|sim] [--quick]
 * Prints a markdown table and `RESULT ...` lines. Exits 1 when an allocation or release
 * fails. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"
#include "internal.h"

static int use_sim;
static int errors;

/* ---- the pairs: alloc returns 0 (cudaSuccess) or an error; release likewise ---- */
typedef struct {
    const char *key;   /* RESULT name */
    const char *label; /* table row */
    int (*alloc)(void **p, size_t bytes);
    int (*release)(void *p);
} pair;

static int raw_device_alloc(void **p, size_t bytes)
{
    return (int)cudaMalloc(p, bytes);
}
static int raw_device_free(void *p)
{
    return (int)cudaFree(p);
}
static int raw_pinned_alloc(void **p, size_t bytes)
{
    return (int)cudaMallocHost(p, bytes);
}
static int raw_pinned_free(void *p)
{
    return (int)cudaFreeHost(p);
}
static int be_device_alloc(void **p, size_t bytes)
{
    return gpumem__be->malloc_device(p, bytes);
}
static int be_device_free(void *p)
{
    return gpumem__be->free(p);
}
static int be_pinned_alloc(void **p, size_t bytes)
{
    return gpumem__be->host_alloc(p, bytes, 0);
}
static int be_pinned_free(void *p)
{
    return gpumem__be->free_host(p);
}
static int gm_device_alloc(void **p, size_t bytes)
{
    *p = gpumem_device_alloc(1, bytes);
    return *p ? 0 : gpumem_last_error()->code;
}
static int gm_pinned_alloc(void **p, size_t bytes)
{
    *p = gpumem_pinned_alloc(1, bytes);
    return *p ? 0 : gpumem_last_error()->code;
}
static int gm_free(void *p)
{
    return gpumem_free(p);
}

enum { RAW, BACKEND, GPUMEM, NPAIRS };

static const pair device_pairs_cuda[NPAIRS] = {
    {"raw", "cudaMalloc + cudaFree (CUDA runtime)", raw_device_alloc, raw_device_free},
    {"backend", "cuMemAlloc + cuMemFree (gpumem's backend, no registry)", be_device_alloc,
     be_device_free},
    {"gpumem", "gpumem_device_alloc + gpumem_free", gm_device_alloc, gm_free},
};
static const pair pinned_pairs_cuda[NPAIRS] = {
    {"raw", "cudaMallocHost + cudaFreeHost (CUDA runtime)", raw_pinned_alloc, raw_pinned_free},
    {"backend", "cuMemAllocHost + cuMemFreeHost (gpumem's backend, no registry)",
     be_pinned_alloc, be_pinned_free},
    {"gpumem", "gpumem_pinned_alloc + gpumem_free", gm_pinned_alloc, gm_free},
};
/* On the simulated device the raw pair is the simulated driver (the backend): no runtime. */
static const pair device_pairs_sim[NPAIRS] = {
    {"raw", "simulated cudaMalloc + cudaFree (backend, no registry)", be_device_alloc,
     be_device_free},
    {NULL, NULL, NULL, NULL},
    {"gpumem", "gpumem_device_alloc + gpumem_free", gm_device_alloc, gm_free},
};
static const pair pinned_pairs_sim[NPAIRS] = {
    {"raw", "simulated cudaMallocHost + cudaFreeHost (backend, no registry)", be_pinned_alloc,
     be_pinned_free},
    {NULL, NULL, NULL, NULL},
    {"gpumem", "gpumem_pinned_alloc + gpumem_free", gm_pinned_alloc, gm_free},
};

/* Errors are counted and the first one printed; the default handler would print them all. */
static void quiet_handler(const gpumem_error *err, void *arg)
{
    (void)arg;
    if (errors++ == 0)
        fprintf(stderr, "%s\n", err->message);
}

typedef struct {
    double *alloc_ns, *free_ns, *pair_ns;
} samples;

typedef struct {
    double alloc, release, pair, p10, p90, mean;
} stats;

static stats summarize(const samples *s, size_t n)
{
    stats r;
    r.mean = bench_mean(s->pair_ns, n);
    r.alloc = bench_median(s->alloc_ns, n);
    r.release = bench_median(s->free_ns, n);
    r.pair = bench_median(s->pair_ns, n);
    r.p10 = bench_quantile(s->pair_ns, n, 0.10);
    r.p90 = bench_quantile(s->pair_ns, n, 0.90);
    return r;
}

/* One alloc + free of `bytes` with pair `p`; returns 0, or -1 after counting an error. */
static int alloc_release(const pair *p, size_t bytes, uint64_t *t_alloc, uint64_t *t_free)
{
    void *mem = NULL;
    int err = p->alloc(&mem, bytes);
    *t_alloc = bench_now_ns();
    if (err || !mem) {
        if (errors++ == 0)
            fprintf(stderr, "bench_alloc: %s of %zu bytes failed: error %d\n", p->label, bytes,
                    err);
        return -1;
    }
    err = p->release(mem);
    *t_free = bench_now_ns();
    if (err && errors++ == 0)
        fprintf(stderr, "bench_alloc: release (%s) failed: error %d\n", p->label, err);
    return err ? -1 : 0;
}

/* Sample i of pair p: `batch` alloc + free pairs in a row. With batch 1 the alloc and the
 * free are timed apart; with more, only the pair's mean (alloc_ns = free_ns = -1), for pairs
 * so fast that reading the clock around each call would distort them. */
static void one_sample(const pair *p, size_t bytes, size_t batch, samples *s, size_t i)
{
    uint64_t t0 = bench_now_ns(), t1 = t0, t2 = t0;
    for (size_t b = 0; b < batch; b++)
        if (alloc_release(p, bytes, &t1, &t2) != 0)
            return;
    if (s) {
        s->alloc_ns[i] = batch == 1 ? (double)(t1 - t0) : -1.0;
        s->free_ns[i] = batch == 1 ? (double)(t2 - t1) : -1.0;
        s->pair_ns[i] = (double)(t2 - t0) / (double)batch;
    }
}

static const char *size_name(size_t bytes, char *buf, size_t n)
{
    return gpumem_format_bytes(bytes, buf, n);
}

/* Measures every pair of one kind at one size, n times each, interleaved. */
static void bench_case(const char *kind, const pair *pairs, size_t bytes, size_t n,
                       double *gpumem_over)
{
    samples s[NPAIRS];
    for (int k = 0; k < NPAIRS; k++) {
        s[k].alloc_ns = calloc(n, sizeof(double));
        s[k].free_ns = calloc(n, sizeof(double));
        s[k].pair_ns = calloc(n, sizeof(double));
        if (!s[k].alloc_ns || !s[k].free_ns || !s[k].pair_ns) {
            fprintf(stderr, "bench_alloc: out of host memory\n");
            exit(1);
        }
    }
    /* Warm-up (first-touch costs, driver caches), which also times the raw pair: pairs
     * faster than 20 us (the simulated device) are timed in batches of 100. One round only
     * for pairs slower than 0.1 s (1 GiB of pinned memory): device time is scarce. */
    samples warm = {(double[3]){0}, (double[3]){0}, (double[3]){0}};
    size_t rounds = 0;
    while (rounds < 3 && (rounds == 0 || warm.pair_ns[0] < 1e8)) {
        for (int k = 0; k < NPAIRS; k++)
            if (pairs[k].alloc)
                one_sample(&pairs[k], bytes, 1, k == RAW ? &warm : NULL, rounds);
        rounds++;
    }
    size_t batch = bench_median(warm.pair_ns, rounds) < 20000.0 ? 100 : 1;
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < NPAIRS; j++) {
            int k = (int)((i + (size_t)j) % NPAIRS); /* rotate who goes first */
            if (pairs[k].alloc)
                one_sample(&pairs[k], bytes, batch, &s[k], i);
        }

    char sz[32];
    size_name(bytes, sz, sizeof sz);
    /* Paired: the median over rounds of (this pair - the raw pair of the same round), which
     * cancels drift that both share; computed before summarize() sorts the samples. */
    double paired[NPAIRS] = {0};
    double *diff = calloc(n, sizeof(double));
    if (!diff) {
        fprintf(stderr, "bench_alloc: out of host memory\n");
        exit(1);
    }
    for (int k = 0; k < NPAIRS; k++) {
        if (!pairs[k].alloc || k == RAW)
            continue;
        for (size_t i = 0; i < n; i++)
            diff[i] = s[k].pair_ns[i] - s[RAW].pair_ns[i];
        paired[k] = bench_median(diff, n);
    }
    free(diff);
    stats st[NPAIRS];
    for (int k = 0; k < NPAIRS; k++)
        if (pairs[k].alloc)
            st[k] = summarize(&s[k], n);
    for (int k = 0; k < NPAIRS; k++) {
        if (!pairs[k].alloc)
            continue;
        double over = (st[k].pair / st[RAW].pair - 1.0) * 100.0;
        double over_mean = (st[k].mean / st[RAW].mean - 1.0) * 100.0;
        double over_paired = paired[k] / st[RAW].pair * 100.0;
        char vs[64], vs_mean[32], vs_paired[64];
        if (k == RAW) {
            snprintf(vs, sizeof vs, "(baseline)");
            snprintf(vs_mean, sizeof vs_mean, "(baseline)");
            snprintf(vs_paired, sizeof vs_paired, "(baseline)");
        } else {
            snprintf(vs, sizeof vs, "%+.2f %% (%+.0f ns)", over, st[k].pair - st[RAW].pair);
            snprintf(vs_mean, sizeof vs_mean, "%+.2f %%", over_mean);
            snprintf(vs_paired, sizeof vs_paired, "%+.2f %% (%+.0f ns)", over_paired,
                     paired[k]);
        }
        char count[32], alloc[32], release[32];
        if (batch == 1) {
            snprintf(count, sizeof count, "%zu", n);
            snprintf(alloc, sizeof alloc, "%.3f", st[k].alloc / 1e3);
            snprintf(release, sizeof release, "%.3f", st[k].release / 1e3);
        } else {
            snprintf(count, sizeof count, "%zu x %zu", n, batch);
            snprintf(alloc, sizeof alloc, "-");
            snprintf(release, sizeof release, "-");
        }
        printf("| %s | %s | %s | %s | %s | %s | %.3f | %.3f - %.3f | %.3f | %s | %s | %s |\n",
               kind, sz, pairs[k].label, count, alloc, release, st[k].pair / 1e3,
               st[k].p10 / 1e3, st[k].p90 / 1e3, st[k].mean / 1e3, vs, vs_paired, vs_mean);
        if (k == GPUMEM)
            *gpumem_over = over;
        /* gpumem over its own backend: the registry's share, apart from driver vs runtime. */
        double over_be =
            pairs[BACKEND].alloc ? (st[k].pair / st[BACKEND].pair - 1.0) * 100.0 : over;
        printf("RESULT bench=alloc backend=%s kind=%s bytes=%zu pair=%s n=%zu batch=%zu "
               "alloc_ns=%.0f free_ns=%.0f ns=%.0f p10_ns=%.0f p90_ns=%.0f mean_ns=%.0f "
               "overhead_pct=%.3f overhead_paired_pct=%.3f paired_diff_ns=%.0f "
               "overhead_mean_pct=%.3f overhead_vs_backend_pct=%.3f\n",
               use_sim ? "sim" : "cuda", kind, bytes, pairs[k].key, n, batch, st[k].alloc,
               st[k].release, st[k].pair, st[k].p10, st[k].p90, st[k].mean, over, over_paired,
               paired[k], over_mean, k == RAW ? 0.0 : over_be);
    }
    fflush(stdout);
    for (int k = 0; k < NPAIRS; k++) {
        free(s[k].alloc_ns);
        free(s[k].free_ns);
        free(s[k].pair_ns);
    }
}

static size_t host_available(void)
{
    long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

int main(int argc, char **argv)
{
    const char *backend = getenv("GPUMEM_BACKEND");
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "cuda") == 0 || strcmp(argv[i], "sim") == 0)
            backend = argv[i];
        else {
            fprintf(stderr, "usage: bench_alloc [cuda|sim] [--quick]\n");
            return 2;
        }
    }
    if (!backend || !*backend)
        backend = "cuda";
    if (strcmp(backend, "cuda") != 0 && strcmp(backend, "sim") != 0) {
        fprintf(stderr, "bench_alloc: unknown backend '%s' (cuda or sim)\n", backend);
        return 2;
    }
    use_sim = strcmp(backend, "sim") == 0;
    gpumem_set_error_handler(quiet_handler, NULL);

    char gpu[300] = "simulated device (host memory)";
    size_t device_free = 0;
    if (!use_sim) {
        /* The runtime first: it makes device 0's primary context current on this thread,
         * the context gpumem then uses too. */
        int count = 0;
        cudaError_t e = cudaGetDeviceCount(&count);
        if (e == cudaSuccess && count > 0) {
            e = cudaSetDevice(0);
            if (e == cudaSuccess)
                e = cudaFree(NULL);
        }
        if (e != cudaSuccess || count == 0) {
            printf("bench_alloc: needs a GPU: the CUDA runtime says %s (%s); nothing measured "
                   "(run `bench_alloc sim` for gpumem's overhead over the simulated device)\n",
                   cudaGetErrorName(e), cudaGetErrorString(e));
            return 0;
        }
    }
    if (gpumem_backend_select(backend) != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        errors = 0;
        if (use_sim) {
            fprintf(stderr, "bench_alloc: cannot initialize gpumem on the simulated device\n");
            return 1;
        }
        printf("bench_alloc: needs a GPU: gpumem_init() failed: %s; nothing measured\n",
               gpumem_last_error()->message);
        return 0;
    }
    errors = 0;
    gpumem_device_info dev;
    if (gpumem_device_get(0, &dev) == GPUMEM_OK) {
        char total[32];
        snprintf(gpu, sizeof gpu, "%s (%s, compute capability %d.%d)", dev.name,
                 gpumem_format_bytes(dev.total_bytes, total, sizeof total), dev.cc_major,
                 dev.cc_minor);
        device_free = dev.free_bytes;
    }

    const size_t GiB = (size_t)1 << 30;
    const size_t sizes[] = {256, (size_t)1 << 20, GiB};
    /* Pairs per size, each: full runs take a few seconds on an H200 (docs/cuda-facts.md: about
     * 90 us a device pair, 1.3 ms a small pinned pair, 0.5 s or more a 1 GiB pinned pair). */
    const size_t n_device[] = {2000, 2000, 400};
    const size_t n_pinned[] = {200, 200, 5};
    size_t div = quick ? 5 : 1;
    char cpu[256];

    printf("## Allocation and release (bench_alloc %s%s)\n\n", backend, quick ? " --quick" : "");
    if (use_sim)
        printf("**Simulated device: these are not GPU numbers.** They show what gpumem adds "
               "(record, registry, checks) over the simulated driver, which itself is host "
               "malloc; on a GPU the same absolute cost sits on top of a CUDA call of 40 us "
               "or more.\n\n");
    printf("- gpumem %s, backend %s; device: %s\n", gpumem_version(), gpumem_backend(), gpu);
    printf("- CPU: %s, %ld cores online\n", bench_cpu_model(cpu, sizeof cpu), bench_cores());
    printf("- pairs interleaved in rotating order, one sample of each in turn; a sample is "
           "one alloc + free, each timed alone, or for pairs under 20 us (n shown as "
           "samples x 100) the mean of 100 in a row, timed together (alloc and free then "
           "'-'); times in us; 'vs raw (medians)' compares the medians of alloc+free, "
           "'(paired)' is the median over rounds of this pair minus the raw pair of the same "
           "round (it cancels drift both share), as a share of the raw median; "
           "alloc_ns/free_ns = -1 in RESULT lines means not timed apart\n\n");
    printf("| kind | size | pair | n | alloc median | free median | alloc+free median | "
           "p10 - p90 | mean | vs raw (medians) | vs raw (paired) | vs raw (means) |\n");
    printf("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    fflush(stdout);

    char summary[8][64];
    size_t nsummary = 0;
    int all_met = 1;
    for (int pinned = 0; pinned < 2; pinned++) {
        const pair *pairs = pinned ? (use_sim ? pinned_pairs_sim : pinned_pairs_cuda)
                                   : (use_sim ? device_pairs_sim : device_pairs_cuda);
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t n = (pinned ? n_pinned[i] : n_device[i]) / div;
            if (n < 2)
                n = 2;
            char sz[32];
            size_name(sizes[i], sz, sizeof sz);
            int fits = pinned ? host_available() >= sizes[i] * 3
                              : use_sim || device_free >= sizes[i] * 2;
            if (!fits) {
                printf("| %s | %s | (skipped: not enough free %s memory) | | | | | | | | | |\n",
                       pinned ? "pinned" : "device", sz, pinned ? "host" : "device");
                continue;
            }
            double over = 0.0;
            bench_case(pinned ? "pinned" : "device", pairs, sizes[i], n, &over);
            if (nsummary < sizeof summary / sizeof summary[0])
                snprintf(summary[nsummary++], sizeof summary[0], "%s %s: %+.2f %%",
                         pinned ? "pinned" : "device", sz, over);
            all_met = all_met && over <= 1.0;
        }
    }

    printf("\n%s gpumem alloc+free vs the raw pair, medians:", use_sim
               ? "Simulated device (not a GPU figure, no target applies):"
               : "Target: within 1 %;");
    for (size_t i = 0; i < nsummary; i++)
        printf("%s %s", i ? "," : "", summary[i]);
    printf("%s\n", use_sim ? "." : all_met ? ". Met." : ". NOT met.");
    if (!use_sim)
        printf("RESULT bench=alloc backend=cuda target=within_1pct met=%d\n", all_met);
    if (errors) {
        fprintf(stderr, "bench_alloc: %d allocations or releases failed\n", errors);
        return 1;
    }
    return 0;
}

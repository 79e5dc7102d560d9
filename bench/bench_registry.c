/* bench_registry: the registry alone, through the internal API.
 *
 * What one tracked allocation costs the registry: a new record, insert, exact lookup
 * (gpumem__reg_find of the base) and take (the release path, which moves the record into the
 * quarantine), with 1, 1 000 and 1 000 000 other allocations live, on 1 and on N threads
 * (default 8). Also insert + take without the lookup (what gpumem_device_alloc + gpumem_free
 * add to the CUDA calls), interior lookups (gpumem__reg_find of base + offset, the query and
 * error path) for small and large allocations and for a foreign pointer, and how the time
 * to release depends on how recently the same address was released before (the quarantine).
 *
 * Addresses are fake: 256-byte aligned addresses inside a reserved, inaccessible range (the
 * registry never dereferences them). Each thread has its own addresses, and in the main table
 * an address comes back only long after the quarantine has forgotten it (fresh addresses).
 * Every figure is the median over repetitions; on N threads it is aggregate: wall time from
 * the first thread's start to the last thread's end, divided by all allocations made.
 *
 * Usage: bench_registry [--quick] [--threads N]
 * Prints markdown tables and one `RESULT ...` line per measurement. Exits 1 if the registry
 * ever answers wrongly (a benchmark of a broken registry measures nothing). */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_util.h"
#include "internal.h"

#define SLOT ((uintptr_t)256)                  /* GPUMEM_ALIGNMENT: the densest packing */
#define MiB ((uintptr_t)1 << 20)
#define THREAD_SLOTS ((size_t)1 << 20)         /* fresh addresses per thread: 256 MiB */
#define THREAD_SPAN (512 * MiB)
#define BG_OFF ((uintptr_t)0)                  /* background allocations: up to 2M slots */
#define PROBE_OFF (512 * MiB)                  /* interior-lookup allocations */
#define THREAD_OFF (1024 * MiB)                /* thread t: THREAD_OFF + t * THREAD_SPAN */
#define MAX_THREADS 256

static const gpumem_site here = {"bench_registry.c", "bench", 0};

static uintptr_t region;    /* base of the address range, 1 MiB aligned */
static size_t region_bytes;
static int region_reserved; /* 1 when region is an mmap'd PROT_NONE range */
static size_t next_slot[MAX_THREADS + 1]; /* per address range: fresh addresses continue */
static int failures;

typedef struct {
    int index;         /* address range */
    size_t mask;       /* slots cycled: mask + 1, a power of two */
    long ops;
    int with_find;
    pthread_barrier_t *start;
    uint64_t t0, t1;
    int failed;
} worker;

static uintptr_t thread_base(int index)
{
    return region + THREAD_OFF + (uintptr_t)index * THREAD_SPAN;
}

/* Inserts a record as the allocation path does: built on the stack, copied in. */
static void insert_rec(uintptr_t base, size_t bytes)
{
    gpumem__rec r = {.base = base, .bytes = bytes, .kind = GPUMEM_KIND_DEVICE, .site = here};
    if (gpumem__reg_insert(&r) != 0) {
        fprintf(stderr, "bench_registry: out of host memory\n");
        exit(1);
    }
}

static void take_or_fail(uintptr_t a, int *failed)
{
    gpumem__rec out;
    int mismatch;
    if (gpumem__reg_take((const void *)a, here, 0, &mismatch, &out) != GPUMEM__TAKEN ||
        out.base != a)
        *failed = 1;
}

/* The same-address pair (insert + take of one address, as a loop that gets its pointer back
 * does) after `sweep` bytes of other memory were read and written, as a CUDA call between two
 * of gpumem's registry operations does: what the registry costs when its lines were pushed out
 * of the caches. ns a pair, the mean of `pairs`, each timed alone, less the timer's own cost. */
static double after_sweep(uintptr_t a, size_t sweep, long pairs)
{
    static volatile char *buf;
    const size_t cap = (size_t)64 << 20;
    if (!buf) {
        buf = malloc(cap);
        if (!buf) {
            fprintf(stderr, "bench_registry: out of host memory\n");
            exit(1);
        }
        for (size_t j = 0; j < cap; j += 64)
            buf[j] = 0;
    }
    uint64_t sum = 0, timer = 0;
    int failed = 0;
    for (long i = 0; i < pairs; i++) {
        for (size_t j = 0; j < sweep && j < cap; j += 64)
            buf[j]++;
        uint64_t t0 = bench_now_ns();
        insert_rec(a, SLOT);
        take_or_fail(a, &failed);
        uint64_t t1 = bench_now_ns();
        uint64_t t2 = bench_now_ns();
        sum += t1 - t0;
        timer += t2 - t1;
    }
    failures += failed;
    return ((double)sum - (double)timer) / (double)pairs;
}

static void run_ops(worker *w)
{
    uintptr_t base = thread_base(w->index);
    size_t next = next_slot[w->index];
    gpumem__rec out;
    for (long i = 0; i < w->ops; i++) {
        uintptr_t a = base + (uintptr_t)(next++ & w->mask) * SLOT;
        insert_rec(a, SLOT);
        if (w->with_find && (!gpumem__reg_find((const void *)a, &out) || out.base != a))
            w->failed = 1;
        take_or_fail(a, &w->failed);
    }
    next_slot[w->index] = next;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    w->t0 = bench_now_ns();
    run_ops(w);
    w->t1 = bench_now_ns();
    return NULL;
}

/* One repetition on `threads` threads; returns ns per allocation, aggregate. */
static double run_once(int threads, long ops_per_thread, int with_find, size_t mask,
                       int first_index)
{
    worker w[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){first_index + t, mask, ops_per_thread, with_find, &start, 0, 0, 0};
        if (pthread_create(&tid[t], NULL, worker_main, &w[t]) != 0) {
            fprintf(stderr, "bench_registry: cannot create thread %d\n", t);
            exit(1);
        }
    }
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        t0 = w[t].t0 < t0 ? w[t].t0 : t0;
        t1 = w[t].t1 > t1 ? w[t].t1 : t1;
        failures += w[t].failed;
    }
    pthread_barrier_destroy(&start);
    return (double)(t1 - t0) / ((double)ops_per_thread * threads);
}

/* Median ns per allocation over `reps` repetitions, after one warm-up repetition long enough
 * to fill the quarantine (its steady state: every release also evicts the oldest record). */
static double measure(int threads, long ops_per_thread, int reps, int with_find, size_t mask,
                      int first_index, long warm_ops)
{
    double v[64];
    long warm = warm_ops / threads + 1;
    run_once(threads, warm > ops_per_thread ? warm : ops_per_thread, with_find, mask,
             first_index);
    for (int r = 0; r < reps; r++)
        v[r] = run_once(threads, ops_per_thread, with_find, mask, first_index);
    return bench_median(v, (size_t)reps);
}

/* Other allocations live: grows the background to n (it never shrinks; levels ascend). */
static size_t background;
static void background_grow(size_t n)
{
    for (; background < n; background++)
        insert_rec(region + BG_OFF + (uintptr_t)background * SLOT, SLOT);
}

static void reserve_region(int threads)
{
    region_bytes = (size_t)(THREAD_OFF + (uintptr_t)(threads + 1) * THREAD_SPAN + MiB);
    void *p = mmap(NULL, region_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED) {
        /* Unreserved fake addresses work as well: the registry never dereferences them. */
        region = (uintptr_t)0x200000000000ull;
        return;
    }
    region_reserved = 1;
    region = ((uintptr_t)p + MiB - 1) & ~(MiB - 1);
}

typedef struct {
    const char *name;   /* table row */
    const char *key;    /* RESULT key */
    size_t bytes;       /* 0: no allocation (a miss) */
    size_t offset;
} probe_case;

static const probe_case probes[] = {
    {"exact: 256 B allocation, at its base", "exact_256B", 256, 0},
    {"interior: 4 KiB allocation, +2 KiB", "interior_4KiB_plus2KiB", 4096, 2048},
    {"interior: 64 KiB allocation, +64 KiB-256 (worst small case)", "interior_64KiB_plus64KiB-256",
     65536, 65536 - 256},
    {"interior: 1 MiB allocation (large), +512 KiB", "interior_1MiB_plus512KiB", 1u << 20,
     1u << 19},
    {"interior: 64 MiB allocation (large), +48 MiB", "interior_64MiB_plus48MiB", 64u << 20,
     48u << 20},
    {"miss: no allocation within 64 KiB (foreign pointer)", "miss_foreign", 0, 0},
};
#define NPROBES (sizeof probes / sizeof probes[0])

/* Interior lookups on one thread: median ns per gpumem__reg_find. */
static void measure_probes(size_t live, long finds, int reps)
{
    uintptr_t base[NPROBES];
    for (size_t i = 0; i < NPROBES; i++) {
        base[i] = region + PROBE_OFF + (uintptr_t)i * 80 * MiB + MiB;
        if (probes[i].bytes)
            insert_rec(base[i], probes[i].bytes);
    }
    for (size_t i = 0; i < NPROBES; i++) {
        const void *p = (const void *)(base[i] + probes[i].offset);
        int expect = probes[i].bytes != 0;
        double v[64];
        gpumem__rec out;
        long n = 1000;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up, and sizes the repetitions */
            uint64_t t0 = bench_now_ns();
            for (long k = 0; k < n; k++) {
                int found = gpumem__reg_find(p, &out);
                if (found != expect || (found && out.base != base[i]))
                    failures++;
            }
            double ns = (double)(bench_now_ns() - t0) / (double)n;
            if (r >= 0)
                v[r] = ns;
            else /* about 10 ms a repetition: slow lookups probe hundreds of shards */
                n = ns * (double)finds > 1e7 ? (long)(1e7 / ns) + 1 : finds;
        }
        double ns = bench_median(v, (size_t)reps);
        printf("| %zu | %s | %.1f |\n", live, probes[i].name, ns);
        printf("RESULT bench=registry op=find case=%s live=%zu threads=1 ns=%.1f\n",
               probes[i].key, live, ns);
    }
    int failed = 0;
    for (size_t i = 0; i < NPROBES; i++)
        if (probes[i].bytes)
            take_or_fail(base[i], &failed);
    failures += failed;
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_registry [--quick] [--threads N]\n");
}

int main(int argc, char **argv)
{
    int quick = 0, threads = 8;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1 || threads > MAX_THREADS) {
                fprintf(stderr, "bench_registry: --threads takes 1 to %d\n", MAX_THREADS);
                return 2;
            }
        } else {
            usage();
            return 2;
        }
    }
    /* The simulated backend: the registry needs gpumem initialized (options, shards), not a
     * GPU. GPUMEM_QUARANTINE is left as the environment says (default 65536), and reported. */
    if (gpumem_backend_select("sim") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        fprintf(stderr, "bench_registry: cannot initialize gpumem on the simulated device\n");
        return 1;
    }
    reserve_region(threads);

    const long ops = quick ? 20000 : 100000;     /* allocations per thread per repetition */
    const int reps = quick ? 3 : 7;
    const long finds = quick ? 10000 : 100000;
    const size_t levels[] = {1, 1000, 1000000};
    const size_t nlevels = sizeof levels / sizeof levels[0];
    const uint64_t quarantine = gpumem__opt_u64(GPUMEM__OPT_QUARANTINE);
    const long warm = (long)(quarantine < 10000000 ? quarantine : 10000000) + 1000;
    char cpu[256];

    printf("## Registry (bench_registry%s)\n\n", quick ? " --quick" : "");
    printf("- gpumem %s, registry alone through src/internal.h (no CUDA, no backend call)\n",
           gpumem_version());
    printf("- CPU: %s, %ld cores online; %d threads in the multi-thread rows\n",
           bench_cpu_model(cpu, sizeof cpu), bench_cores(), threads);
    printf("- GPUMEM_QUARANTINE=%llu (released records remembered; every release evicts the "
           "oldest once it is full)\n", (unsigned long long)quarantine);
    printf("- %ld allocations per thread per repetition, median of %d repetitions after a "
           "warm-up; 256-byte allocations at fake 256-byte aligned addresses (%s), fresh "
           "addresses per thread\n",
           ops, reps, region_reserved ? "in a reserved PROT_NONE range" : "unreserved");
    printf("- multi-thread ns/alloc is aggregate (wall time / all allocations); "
           "'x 1 thread' is throughput over the one-thread row at the same live count\n\n");
    fflush(stdout);

    printf("| other allocations live | threads | insert+find+take ns/alloc | M allocs/s | "
           "x 1 thread | insert+take ns/alloc | M allocs/s | x 1 thread |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    double ns_top[2] = {0, 0}, speedup_top[2] = {0, 0};
    for (size_t l = 0; l < nlevels; l++) {
        background_grow(levels[l]);
        double one[2] = {0, 0};
        int counts[2] = {1, threads};
        for (int c = 0; c < (threads > 1 ? 2 : 1); c++) { /* --threads 1: one row */
            double ns[2], x[2];
            for (int with_find = 1; with_find >= 0; with_find--) {
                int k = !with_find;
                ns[k] = measure(counts[c], ops, reps, with_find, THREAD_SLOTS - 1, 0, warm);
                if (c == 0)
                    one[k] = ns[k];
                x[k] = one[k] / ns[k];
                printf("RESULT bench=registry op=%s live=%zu threads=%d ns=%.1f mops=%.2f "
                       "speedup=%.2f\n",
                       with_find ? "insert_find_take" : "insert_take", levels[l], counts[c],
                       ns[k], 1000.0 / ns[k], x[k]);
            }
            printf("| %zu | %d | %.1f | %.2f | %.2f | %.1f | %.2f | %.2f |\n", levels[l],
                   counts[c], ns[0], 1000.0 / ns[0], x[0], ns[1], 1000.0 / ns[1], x[1]);
            fflush(stdout);
            if (l == nlevels - 1) {
                for (int k = 0; k < 2; k++) {
                    if (c == 0)
                        ns_top[k] = ns[k];
                    else
                        speedup_top[k] = x[k];
                }
            }
        }
    }

    printf("\n### Lookups on one thread (gpumem__reg_find; median of %d repetitions of up to "
           "%ld lookups)\n\n", reps, finds);
    printf("| other allocations live | address looked up | ns/lookup |\n|---:|---|---:|\n");
    for (size_t l = 0; l < nlevels; l++) {
        if (l == 0 || l == nlevels - 1 || !quick)
            measure_probes(levels[l], finds, reps);
    }

    /* How recently the address was last released: the release path looks for the address's
     * previous record in its shard's quarantine ring. */
    const size_t distances[] = {1, 64, 1024, 8192, 32768, 262144};
    printf("\n### Release of an address released before (1 thread, %zu other allocations live)"
           "\n\n", background);
    printf("The allocation cycles through D distinct addresses, so each address was last "
           "released D releases earlier (D = 1: a loop that gets the same pointer back).\n\n");
    printf("| D | insert+find+take ns/alloc | insert+take ns/alloc |\n|---:|---:|---:|\n");
    double ns_same[2] = {0, 0};
    for (size_t i = 0; i < sizeof distances / sizeof distances[0]; i++) {
        long n = quick ? ops : ops / 2;
        double ns[2];
        for (int with_find = 1; with_find >= 0; with_find--) {
            int k = !with_find;
            ns[k] = measure(1, n, reps, with_find, distances[i] - 1, threads,
                            2 * (long)distances[i]);
            printf("RESULT bench=registry op=%s_reuse distance=%zu live=%zu threads=1 "
                   "ns=%.1f\n", with_find ? "insert_find_take" : "insert_take", distances[i],
                   background, ns[k]);
            if (i == 0)
                ns_same[k] = ns[k];
        }
        printf("| %zu | %.1f | %.1f |\n", distances[i], ns[0], ns[1]);
        fflush(stdout);
    }

    printf("\n### The same address, after other memory traffic (1 thread, %zu other "
           "allocations live)\n\n", background);
    printf("Between pairs, S bytes of other memory are read and written (a CUDA call between "
           "gpumem's registry operations does that); each pair is timed alone.\n\n");
    printf("| S | insert+take ns/alloc |\n|---:|---:|\n");
    {
        const size_t sweeps[] = {0, (size_t)1 << 20, (size_t)8 << 20, (size_t)32 << 20};
        uintptr_t a = thread_base(threads) + (uintptr_t)(next_slot[threads]++ & (THREAD_SLOTS - 1)) * SLOT;
        for (size_t i = 0; i < sizeof sweeps / sizeof sweeps[0]; i++) {
            double v[7];
            int nrep = reps < 7 ? reps : 7;
            long pairs = sweeps[i] >= ((size_t)8 << 20) ? 200 : quick ? 2000 : 10000;
            for (int r = 0; r < nrep; r++)
                v[r] = after_sweep(a, sweeps[i], pairs);
            double med = bench_median(v, (size_t)nrep);
            printf("| %zu MiB | %.1f |\n", sweeps[i] >> 20, med);
            printf("RESULT bench=registry op=insert_take_after_sweep sweep_bytes=%zu live=%zu "
                   "threads=1 ns=%.1f\n", sweeps[i], background, med);
            fflush(stdout);
        }
    }

    printf("\n### Targets\n\n");
    const char *verdict[2] = {"NOT met", "met"};
    printf("- insert+find+take at %zu live, 1 thread: %.1f ns with fresh addresses (cold "
           "caches), %.1f ns when the same address comes back (D = 1); target <= 150 ns: %s "
           "/ %s\n",
           levels[nlevels - 1], ns_top[0], ns_same[0], verdict[ns_top[0] <= 150.0],
           verdict[ns_same[0] <= 150.0]);
    printf("- insert+take (the alloc + free path) at %zu live, 1 thread: %.1f ns fresh, %.1f ns "
           "same address; target <= 150 ns: %s / %s\n",
           levels[nlevels - 1], ns_top[1], ns_same[1], verdict[ns_top[1] <= 150.0],
           verdict[ns_same[1] <= 150.0]);
    printf("- %d threads vs 1 at %zu live: %.2fx (insert+find+take), %.2fx (insert+take); "
           "target >= 5x: %s\n",
           threads, levels[nlevels - 1], speedup_top[0], speedup_top[1],
           threads == 1 ? "not measured (--threads 1)"
           : bench_cores() < threads
               ? "cannot be shown here: fewer cores than threads"
               : (speedup_top[0] >= 5.0 && speedup_top[1] >= 5.0 ? "met" : "NOT met"));
    printf("RESULT bench=registry target=ns_1M_1thread addresses=fresh ns=%.1f met=%d\n",
           ns_top[0], ns_top[0] <= 150.0);
    printf("RESULT bench=registry target=ns_1M_1thread addresses=same ns=%.1f met=%d\n",
           ns_same[0], ns_same[0] <= 150.0);
    printf("RESULT bench=registry target=speedup threads=%d cores=%ld speedup=%.2f met=%d\n",
           threads, bench_cores(), speedup_top[0], speedup_top[0] >= 5.0);

    if (failures) {
        fprintf(stderr, "bench_registry: the registry answered wrongly %d times\n", failures);
        return 1;
    }
    return 0;
}

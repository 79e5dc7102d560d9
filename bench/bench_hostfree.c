/* bench_hostfree: what gpumem check adds to a checked program's free() while CUDA host memory
 * is live.
 *
 *   bench_hostfree [THREADS...]      (default 1 2 4 8 16, up to the CPUs here)
 *
 * Before anything is timed, two pinned buffers are recorded with the engine as gpumem check's
 * CUPTI callbacks record them: one below the heap and one high in the address space, as a
 * framework's host allocator leaves them (XLA's does). Then each thread makes malloc(64) +
 * free() pairs, three ways, side by side in one run:
 *   plain     malloc + free
 *   checked   malloc + the preloaded free()'s test (check_host_free) + free
 *   registry  malloc + a registry lookup + free: what each free() cost when the test was the
 *             span from the lowest to the highest CUDA host address ever live
 * Prints ns per pair (median of 5 rounds of 200 000 pairs per thread) and the aggregate rate.
 * No GPU is needed: the engine is driven by the events the callbacks would send. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "engine.h"
#include "internal.h"

#define PAIRS 200000
#define ROUNDS 5

enum { PLAIN, CHECKED, REGISTRY, WAYS };
static const char *const way_name[WAYS] = {"plain", "checked", "registry (span test)"};

typedef struct {
    int way;
    pthread_barrier_t *start;
    double ns;
} job;

static void *pairs(void *arg)
{
    job *j = arg;
    pthread_barrier_wait(j->start);
    uint64_t t0 = bench_now_ns();
    for (int i = 0; i < PAIRS; i++) {
        void *p = malloc(64);
        __asm__ volatile("" : : "r"(p) : "memory");
        if (j->way == CHECKED && check_host_free("free", (uintptr_t)p, 0) != 0)
            abort(); /* heap memory taken for CUDA memory: the test is wrong */
        if (j->way == REGISTRY) {
            gpumem__rec r;
            if (gpumem__reg_find(p, &r))
                abort();
        }
        free(p);
    }
    j->ns = (double)(bench_now_ns() - t0) / PAIRS;
    return NULL;
}

/* ns per pair on each of n threads, the median over the rounds of the threads' mean. */
static double run(int way, int n)
{
    double per_round[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t[64];
        job j[64];
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)n);
        for (int i = 0; i < n; i++) {
            j[i] = (job){.way = way, .start = &start};
            pthread_create(&t[i], NULL, pairs, &j[i]);
        }
        double sum = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(t[i], NULL);
            sum += j[i].ns;
        }
        pthread_barrier_destroy(&start);
        per_round[r] = sum / n;
    }
    return bench_median(per_round, ROUNDS);
}

int main(int argc, char **argv)
{
    int threads[16] = {1, 2, 4, 8, 16}, nt = 5;
    if (argc > 1) {
        nt = 0;
        for (int i = 1; i < argc && nt < 16; i++) {
            int v = atoi(argv[i]);
            if (v < 1 || v > 64) {
                fprintf(stderr, "bench_hostfree: error: thread count '%s' is not 1..64\n", argv[i]);
                return 2;
            }
            threads[nt++] = v;
        }
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* Two pinned buffers far apart: addresses nothing maps, as the engine never reads them. */
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, 0x1000000, 1 << 20, 0, 0, 0);
    check_alloc("cudaHostAlloc", GPUMEM_KIND_HOST, 0x7f0000000000, 1 << 20, 0, 0, 0);
    char cpu[128];
    printf("# gpumem check: free() with CUDA host memory live (%s, %ld CPUs)\n\n",
           bench_cpu_model(cpu, sizeof cpu), cpus);
    printf("| threads | way | ns per malloc+free pair | pairs/s, all threads |\n|---|---|---|---|\n");
    for (int k = 0; k < nt; k++) {
        if (threads[k] > cpus && k > 0)
            continue;
        for (int w = 0; w < WAYS; w++) {
            double ns = run(w, threads[k]);
            printf("| %d | %s | %.1f | %.3g |\n", threads[k], way_name[w], ns, threads[k] * 1e9 / ns);
            printf("RESULT bench=hostfree threads=%d way=%s ns_per_pair=%.2f\n", threads[k],
                   w == PLAIN ? "plain" : w == CHECKED ? "checked" : "registry", ns);
        }
    }
    return 0;
}

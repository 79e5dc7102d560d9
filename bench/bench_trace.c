/* What recording a trace costs (GPUMEM_TRACE): nanoseconds per allocation + release pair on
 * one thread, on the simulated device.
 *   record only:  the two hooks alone (gpumem__trace_alloc + gpumem__trace_release) on a
 *                 record, in bursts that fit the writer's queue: what the allocating thread
 *                 pays while the writer keeps up
 *   sustained:    the same, 4 M pairs in a row: when the writer falls behind, the recording
 *                 thread waits for it, so this is bounded by the writer's speed
 *   alloc + free: gpumem_device_alloc + gpumem_free on the simulated device, without and with
 *                 the trace, the difference being the cost a program sees
 * usage: bench_trace [TRACE_FILE]   (default /tmp/gpumem-bench-trace.json; deleted after) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_util.h"
#include "gpumem.h"
#include "internal.h"
#include "trace.h"

#define BURST 50000 /* pairs: 100 k events, 98 buffers, under the queue's limit */

static double pairs_alloc_free(long n)
{
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        void *p = gpumem_device_alloc(1, 4096);
        gpumem_free(p);
    }
    return (double)(bench_now_ns() - t0) / (double)n;
}

static double median_of(double (*fn)(long), long n, int reps)
{
    double v[64];
    for (int r = 0; r < reps; r++)
        v[r] = fn(n);
    return bench_median(v, (size_t)reps);
}

static double record_pairs(long n)
{
    static uint64_t seq = 1;
    gpumem__rec r = {.base = 0x7f0000000000, .bytes = 4096, .kind = GPUMEM_KIND_DEVICE,
                     .site = {"bench_trace.c", "record_pairs", 42}, .thread = 1};
    gpumem_site where = {"bench_trace.c", "record_pairs", 43};
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        r.seq = seq++;
        gpumem__trace_alloc(&r);
        gpumem__trace_release(&r, where, NULL);
    }
    return (double)(bench_now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/gpumem-bench-trace.json";
    char cpu[256];
    if (gpumem_backend_select("sim") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        fprintf(stderr, "bench_trace: the simulated device did not start\n");
        return 1;
    }
    pairs_alloc_free(100000); /* warm up */
    double off = median_of(pairs_alloc_free, 200000, 9);
    if (gpumem__trace_open(path, "gpumem", NULL) != 0)
        return 1;
    /* Bursts, each followed by a pause in which the writer catches up. */
    double burst[15];
    for (int r = 0; r < 15; r++) {
        burst[r] = record_pairs(BURST);
        usleep(300000);
    }
    double rec = bench_median(burst, 15);
    double best = burst[0];
    for (int r = 1; r < 15; r++)
        best = burst[r] < best ? burst[r] : best;
    uint64_t w0;
    gpumem__trace_counts(NULL, NULL, &w0);
    uint64_t t0 = bench_now_ns();
    double sustained = record_pairs(4000000);
    uint64_t w1;
    gpumem__trace_counts(NULL, NULL, &w1);
    (void)t0;
    usleep(2000000);
    double on_v[9];
    for (int r = 0; r < 9; r++) {
        on_v[r] = pairs_alloc_free(BURST);
        usleep(300000);
    }
    double on = bench_median(on_v, 9);
    uint64_t c0 = bench_now_ns();
    int rc = gpumem__trace_close();
    double close_ms = (double)(bench_now_ns() - c0) / 1e6;
    uint64_t events, dropped, waited;
    gpumem__trace_counts(&events, &dropped, &waited);
    unlink(path);

    printf("# GPUMEM_TRACE recording cost, one thread, simulated device\n\n");
    printf("cpu: %s, %ld online cores\n\n", bench_cpu_model(cpu, sizeof cpu),
           sysconf(_SC_NPROCESSORS_ONLN));
    printf("| measurement | ns per alloc+free pair |\n|---|---:|\n");
    printf("| record only, bursts of %d pairs (median of 15) | %.1f |\n", BURST, rec);
    printf("| record only, best burst | %.1f |\n", best);
    printf("| record only, 4 M pairs in a row (writer-bound) | %.1f |\n", sustained);
    printf("| gpumem_device_alloc + gpumem_free, no trace (median of 9) | %.1f |\n", off);
    printf("| gpumem_device_alloc + gpumem_free, trace on, bursts (median of 9) | %.1f |\n", on);
    printf("| difference (what a program sees) | %.1f |\n\n", on - off);
    printf("writer: %llu events written, %llu dropped; the recording thread waited for it %llu "
           "times during the 4 M run; finishing the file took %.1f ms\n",
           (unsigned long long)events, (unsigned long long)dropped,
           (unsigned long long)(w1 - w0), close_ms);
    printf("RESULT bench=trace record_ns=%.1f record_best_ns=%.1f sustained_ns=%.1f "
           "alloc_free_off_ns=%.1f alloc_free_on_ns=%.1f waits=%llu\n",
           rec, best, sustained, off, on, (unsigned long long)waited);
    return rc != 0;
}

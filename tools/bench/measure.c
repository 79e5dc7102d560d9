/* The measuring sections' shared helpers: the clock, medians, the repetition budget, progress
 * lines and failed calls. Below the sections (alloc.c, copy.c, host.c, devices.c, replay.c) and
 * the run (bench.c), calling none of them. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "gpumem.h"

volatile uint64_t bench_sink;

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    if (n <= 0)
        return BENCH_NOT_MEASURED;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int bench_more(const bench_ctx *c, int done, uint64_t t0)
{
    if (done < c->min_reps)
        return 1;
    return done < c->reps && (double)(bench_now_ns() - t0) < c->budget_ns;
}

void bench_progress(bench_ctx *c, const char *what)
{
    c->step++;
    /* On a terminal the line is rewritten in place; in a log every step gets its own. */
    if (isatty(STDERR_FILENO))
        fprintf(stderr, "\r[%d/%d] %s\033[K", c->step, c->steps, what);
    else
        fprintf(stderr, "[%d/%d] %s\n", c->step, c->steps, what);
    fflush(stderr);
}

int bench_fail(bench_ctx *c, bench_row *row, const char *call, int status)
{
    c->failures++;
    if (row && !row->note[0]) {
        if (status > 0)
            snprintf(row->note, sizeof row->note, "failed: %s: %s: %s", call,
                     cudaGetErrorName((cudaError_t)status),
                     cudaGetErrorString((cudaError_t)status));
        else
            snprintf(row->note, sizeof row->note, "failed: %s: %s", call,
                     gpumem_err_name(status));
    }
    return -1;
}


/* Small helpers shared by the benchmarks: a monotonic clock, order statistics, the machine.
 *
 * Every benchmark prints a markdown table for people and one `RESULT key=value ...` line per
 * measurement for scripts (bench/run.sh keeps both). Times are host wall clock. */
#ifndef GPUMEM_BENCH_UTIL_H
#define GPUMEM_BENCH_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile (0 <= q <= 1) of v[0..n), by nearest rank on a sorted copy; v is sorted in
 * place. The median of an even count is the mean of the two middle values. */
static inline double bench_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, bench_cmp_double);
    if (q == 0.5 && n % 2 == 0)
        return (v[n / 2 - 1] + v[n / 2]) / 2.0;
    size_t k = (size_t)(q * (double)(n - 1) + 0.5);
    return v[k < n ? k : n - 1];
}

static inline double bench_median(double *v, size_t n)
{
    return bench_quantile(v, n, 0.5);
}

static inline double bench_mean(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += v[i];
    return n ? s / (double)n : 0.0;
}

/* The CPU model from /proc/cpuinfo ("unknown" elsewhere) into buf. */
static inline const char *bench_cpu_model(char *buf, size_t n)
{
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return buf;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (!colon)
            break;
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        snprintf(buf, n, "%s", colon);
        buf[strcspn(buf, "\n")] = '\0';
        break;
    }
    fclose(f);
    return buf;
}

static inline long bench_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

#endif

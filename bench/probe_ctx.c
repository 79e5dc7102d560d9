/* probe_ctx: what the driver calls on a tracked allocation's path cost by themselves.
 *
 * gpumem_device_alloc asks the driver which context is current and its device
 * (cuCtxGetCurrent, cuCtxGetDevice) before cuMemAlloc; gpumem_free asks again before cuMemFree,
 * to free in the allocation's own device. This times each of those calls alone, a million in a
 * row on one thread (median of 7 such runs, ns a call), next to cuMemAlloc + cuMemFree of
 * 256 bytes (median of 7 runs of 2000 pairs), so that a tracked pair's cost over the raw one
 * can be split into its parts.
 *
 * Usage: probe_ctx. Prints a table and `RESULT ...` lines. Needs a GPU and its driver (exits 77
 * when the driver finds no device). */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RUNS 7

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v)
{
    qsort(v, RUNS, sizeof *v, cmp);
    return v[RUNS / 2];
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS) {
        printf("probe_ctx: no GPU here; nothing measured\n");
        return 77;
    }
    if (cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "probe_ctx: no context on device 0\n");
        return 1;
    }
    const long n = 1000000;
    double t[RUNS];
    volatile CUdevice sink_dev = 0;
    volatile CUcontext sink_ctx = NULL;
    printf("| call | ns a call (median of %d runs) |\n|---|---:|\n", RUNS);
    for (int r = 0; r < RUNS; r++) {
        double a = now_ns();
        for (long i = 0; i < n; i++) {
            CUcontext c;
            cuCtxGetCurrent(&c);
            sink_ctx = c;
        }
        t[r] = (now_ns() - a) / (double)n;
    }
    double get_current = median(t);
    for (int r = 0; r < RUNS; r++) {
        double a = now_ns();
        for (long i = 0; i < n; i++) {
            CUdevice d;
            cuCtxGetDevice(&d);
            sink_dev = d;
        }
        t[r] = (now_ns() - a) / (double)n;
    }
    double get_device = median(t);
    const long pairs = 2000;
    for (int r = 0; r < RUNS; r++) {
        double a = now_ns();
        for (long i = 0; i < pairs; i++) {
            CUdeviceptr p;
            if (cuMemAlloc(&p, 256) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
                fprintf(stderr, "probe_ctx: cuMemAlloc/cuMemFree failed\n");
                return 1;
            }
        }
        t[r] = (now_ns() - a) / (double)pairs;
    }
    double pair = median(t);
    (void)sink_dev, (void)sink_ctx;
    printf("| cuCtxGetCurrent | %.1f |\n| cuCtxGetDevice | %.1f |\n"
           "| cuMemAlloc + cuMemFree, 256 B | %.1f |\n", get_current, get_device, pair);
    printf("RESULT bench=probe_ctx cuCtxGetCurrent_ns=%.1f cuCtxGetDevice_ns=%.1f "
           "pair_256_ns=%.1f\n", get_current, get_device, pair);
    return 0;
}

// Shared by the check_overhead benchmarks: CHECK stops on a failed CUDA call (with its text,
// line and error name), now_s reads the monotonic clock, and result prints the line run.sh
// reads: "RESULT name seconds".
#ifndef GPUMEM_BENCH_CHECK_H
#define GPUMEM_BENCH_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t check_err_ = (call);                                                         \
        if (check_err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                 \
                    cudaGetErrorName(check_err_));                                               \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline void result(const char *name, double seconds)
{
    printf("RESULT %s %.6f\n", name, seconds);
    fflush(stdout);
}

#endif

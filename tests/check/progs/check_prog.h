// Shared by the programs of tests/check/progs (C and CUDA C++): CHECK and CHECK_CU stop the
// program, with the call's text, file, line and error name, when a call that must succeed
// fails; prog_init makes device 0's primary context current; prog_done prints the closing line
// that run_one.sh looks for ("<name>: done").
#ifndef GPUMEM_CHECK_PROG_H
#define GPUMEM_CHECK_PROG_H

#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t check_err_ = (call);                                                         \
        if (check_err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorName(check_err_), cudaGetErrorString(check_err_));               \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

// Driver API calls; a program that uses it links CUDA::cuda_driver.
#define CHECK_CU(call)                                                                           \
    do {                                                                                         \
        CUresult check_res_ = (call);                                                            \
        if (check_res_ != CUDA_SUCCESS) {                                                        \
            const char *check_name_ = "unknown CUresult";                                        \
            cuGetErrorName(check_res_, &check_name_);                                            \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, check_name_);   \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

// The call that is the planted bug is expected to fail, or may: its error is cleared so that
// it cannot be mistaken for a later call's.
#define PLANTED(call)                                                                            \
    do {                                                                                         \
        cudaError_t planted_err_ = (call);                                                       \
        printf("planted: %s returned %s\n", #call, cudaGetErrorName(planted_err_));              \
        fflush(stdout);                                                                          \
        (void)cudaGetLastError();                                                                \
    } while (0)

static inline void prog_init(void)
{
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceSynchronize());
}

static inline void prog_done(const char *name)
{
    printf("%s: done\n", name);
    fflush(stdout);
}

#endif

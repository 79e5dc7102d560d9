// The two helpers of CUDA samples' helper_cuda.h that vector_add.cu uses, written for the
// samples so that they compile without the CUDA samples tree: each reports the failed call
// with its expression, file and line, and exits.
#ifndef SAMPLES_HELPER_CUDA_H
#define SAMPLES_HELPER_CUDA_H
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

static inline void samples_check(cudaError_t err, const char *expr, const char *file, int line) {
    if (err != cudaSuccess) {
        fprintf(stderr, "CUDA error at %s:%d code=%d (%s) \"%s\"\n", file, line, (int)err,
                cudaGetErrorName(err), expr);
        exit(EXIT_FAILURE);
    }
}
#define checkCudaErrors(val) samples_check((val), #val, __FILE__, __LINE__)

static inline void samples_last_error(const char *msg, const char *file, int line) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "%s(%d): getLastCudaError(): %s: %s\n", file, line, msg,
                cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}
#define getLastCudaError(msg) samples_last_error((msg), __FILE__, __LINE__)
#endif

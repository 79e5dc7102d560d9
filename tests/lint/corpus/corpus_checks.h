// The error-check macros and helpers CUDA code bases commonly define, shared by the corpus
// files so that each one compiles as real code does: CUDA_CHECK (most projects),
// checkCudaErrors and getLastCudaError (CUDA samples' helper_cuda.h), CUDA_SAFE_CALL,
// cudaSafeCall and cudaCheckError (Rodinia and older SDKs), gpuErrchk (the common
// Stack Overflow answer). Each prints the error and exits, as the originals do.
#ifndef CORPUS_CHECKS_H
#define CORPUS_CHECKS_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CUDA_CHECK(call)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (call);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));  \
            exit(EXIT_FAILURE);                                                            \
        }                                                                                  \
    } while (0)

static inline void corpus_check(cudaError_t err, const char *expr, const char *file, int line) {
    if (err != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s: %s\n", file, line, expr, cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}
#define checkCudaErrors(call) corpus_check((call), #call, __FILE__, __LINE__)
#define CUDA_SAFE_CALL(call) corpus_check((call), #call, __FILE__, __LINE__)
#define cudaSafeCall(call) corpus_check((call), #call, __FILE__, __LINE__)
#define gpuErrchk(call) corpus_check((call), #call, __FILE__, __LINE__)

static inline void corpus_last_error(const char *msg, const char *file, int line) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s: %s\n", file, line, msg, cudaGetErrorString(err));
        exit(EXIT_FAILURE);
    }
}
#define getLastCudaError(msg) corpus_last_error((msg), __FILE__, __LINE__)
#define cudaCheckError() corpus_last_error("kernel", __FILE__, __LINE__)

#endif

// Corpus for GM004 (unchecked CUDA call or kernel launch).
// corpus-rules: GM004
#include <cstdio>
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <gpumem.h>
#include <cuda_occupancy.h>

__global__ void scale(float *d, int n) { if (threadIdx.x < n) d[threadIdx.x] *= 2.0f; }
void handle(cudaError_t e, const char *what);

// case: cudaMemcpy result dropped
void gm004_memcpy(float *d, const float *h, size_t n) {
    cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);  // expect: GM004
}

// case: cudaFree result dropped, and the program goes on with CUDA calls
void gm004_free(float *d, float *e, size_t n) {
    cudaFree(d);  // expect: GM004
    CUDA_CHECK(cudaMemset(e, 0, n));
}

// case: cudaMalloc result dropped
void gm004_malloc(float **d, size_t n) {
    cudaMalloc((void **)d, n);  // expect: GM004
}

// case: cudaMemset and cudaStreamCreate results dropped
void gm004_two(float *d, size_t n, cudaStream_t *s) {
    cudaMemset(d, 0, n);  // expect: GM004
    cudaStreamCreate(s);  // expect: GM004
}

// case: status stored and overwritten by the next call
int gm004_overwritten(float **d, float *h, size_t n) {
    cudaError_t err = cudaMalloc((void **)d, n);  // expect: GM004
    err = cudaMemcpy(*d, h, n, cudaMemcpyHostToDevice);
    if (err != cudaSuccess)
        return -1;
    return 0;
}

// case: status stored and never looked at
void gm004_never_checked(cudaEvent_t *e) {
    cudaError_t st = cudaEventCreate(e);  // expect: GM004
}

// case: status stored by assignment, next CUDA call first
void gm004_assign(float *d, cudaStream_t s) {
    cudaError_t rc;
    rc = cudaMemsetAsync(d, 0, 64, s);  // expect: GM004
    CUDA_CHECK(cudaStreamSynchronize(s));
    if (rc != cudaSuccess)
        printf("failed\n");
}

// case: launch followed by a copy, no cudaGetLastError
void gm004_launch_copy(float *d, float *h, int n) {
    scale<<<1, 128>>>(d, n);  // expect: GM004
    CUDA_CHECK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
}

// case: launch followed by another launch
void gm004_launch_launch(float *d, int n) {
    scale<<<1, 128>>>(d, n);  // expect: GM004
    scale<<<1, 128, 0, 0>>>(d, n);
    CUDA_CHECK(cudaGetLastError());
}

// case: launch followed by a synchronize (the launch error is never asked for)
void gm004_launch_sync(float *d, int n, cudaStream_t s) {
    scale<<<2, 64, 0, s>>>(d, n);  // expect: GM004
    CUDA_CHECK(cudaStreamSynchronize(s));
}

// case: event record result dropped inside a loop
void gm004_loop(cudaEvent_t *ev, int k, cudaStream_t s) {
    for (int i = 0; i < k; i++)
        cudaEventRecord(ev[i], s);  // expect: GM004
}

// case: device synchronize dropped after a checked launch
void gm004_sync_dropped(float *d, int n) {
    scale<<<1, 32>>>(d, n);
    CUDA_CHECK(cudaGetLastError());
    cudaDeviceSynchronize();  // expect: GM004
}

// ---- negatives ----

// case: every check macro
void ok_macros(float *d, float *h, size_t n) {
    CUDA_CHECK(cudaMemcpy(d, h, n, cudaMemcpyHostToDevice));
    checkCudaErrors(cudaMemset(d, 0, n));
    CUDA_SAFE_CALL(cudaDeviceSynchronize());
    gpuErrchk(cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost));
    GPUMEM_CHECK(cudaStreamSynchronize(0));
}

// case: teardown: releases last, nothing left to act on their statuses
void ok_teardown(float *d, float *h, cudaStream_t s) {
    cudaFree(d);
    cudaFreeHost(h);
    cudaStreamDestroy(s);
}

// case: an error path's cleanup: the function returns the error already
int ok_error_cleanup(float **a, float **b, size_t n) {
    if (cudaMalloc((void **)a, n) != cudaSuccess)
        return -1;
    if (cudaMalloc((void **)b, n) != cudaSuccess) {
        cudaFree(*a);
        return -1;
    }
    return 0;
}

// case: compared right away
int ok_compared(float **d, size_t n) {
    if (cudaMalloc((void **)d, n) != cudaSuccess)
        return -1;
    return 0;
}

// case: stored and checked before the next call
int ok_stored_checked(float *d, const float *h, size_t n) {
    cudaError_t e = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        fprintf(stderr, "copy: %s\n", cudaGetErrorString(e));
        return -1;
    }
    e = cudaDeviceSynchronize();
    return e == cudaSuccess ? 0 : -1;
}

// case: returned to the caller
cudaError_t ok_returned(float *d, size_t n) {
    return cudaMemset(d, 0, n);
}

// case: ignored on purpose
void ok_void_cast(float *d) {
    (void)cudaFree(d);
}

// case: passed to a handler function
void ok_handler(float *d, size_t n) {
    handle(cudaMemset(d, 0, n), "memset");
}

// case: launch checked with cudaGetLastError
void ok_launch_checked(float *d, int n) {
    scale<<<1, 128>>>(d, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
}

// case: launch checked with cudaPeekAtLastError and gpuErrchk
void ok_launch_peek(float *d, int n) {
    scale<<<1, 128>>>(d, n);
    gpuErrchk(cudaPeekAtLastError());
    gpuErrchk(cudaDeviceSynchronize());
}

// case: launch checked with GPUMEM_CHECK_LAUNCH
void ok_launch_gpumem(float *d, int n) {
    scale<<<1, 128>>>(d, n);
    GPUMEM_CHECK_LAUNCH();
    GPUMEM_CHECK(cudaDeviceSynchronize());
}

// case: launch checked with the samples' getLastCudaError
void ok_launch_samples(float *d, int n) {
    scale<<<1, 128>>>(d, n);
    getLastCudaError("scale failed");
    checkCudaErrors(cudaDeviceSynchronize());
}

// case: a launch wrapper: the caller checks
void ok_launch_wrapper(float *d, int n) {
    scale<<<(n + 127) / 128, 128>>>(d, n);
}

// case: status set on either branch, checked after
int ok_branches(float *d, const float *h, size_t n, int async, cudaStream_t s) {
    cudaError_t e;
    if (async)
        e = cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s);
    else
        e = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    return e != cudaSuccess;
}

// case: error strings and the last error itself need no check
void ok_error_queries(void) {
    cudaGetLastError();
    printf("%s\n", cudaGetErrorString(cudaPeekAtLastError()));
}

// case: a project helper named like the runtime is a check
void ok_helper(float *d) {
    cudaCheckError();
    cudaSafeCall(cudaFree(d));
}

// case: cudaLaunchKernel with its status dropped is a launch to check
void gm004_launch_api(float *d, float *h, void **args) {
    cudaLaunchKernel((const void *)scale, dim3(1), dim3(128), args, 0, 0);  // expect: GM004
    CUDA_CHECK(cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost));
}

// case: launch variants under #if are alternatives, checked after
void ok_preproc_launch(float *d, int n, void **args) {
#if USE_LAUNCH_API
    cudaLaunchKernel((const void *)scale, dim3(1), dim3(128), args, 0, 0);
#else
    scale<<<1, 128>>>(d, n);
#endif
    CUDA_CHECK(cudaGetLastError());
}

// case: the occupancy calculator returns cudaOccError, not cudaError_t
void ok_occupancy(cudaOccResult *r, const cudaOccDeviceProp *p) {
    cudaOccMaxActiveBlocksPerMultiprocessor(r, p, 0, 0, 128, 0);
}

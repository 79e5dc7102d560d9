// Corpus: kernel launches checked by the caller of the helper that launches (GM004).
// corpus-rules: GM004
#include <cuda_runtime.h>
#include "corpus_checks.h"

__global__ void kern(float *d, int n) { if (threadIdx.x < n) d[threadIdx.x] = 0; }

static void launch_kern(float *d, int n) {
    kern<<<1, 128>>>(d, n);
}

static void launch_forgotten(float *d, int n) {
    kern<<<1, 128>>>(d, n);  // expect: GM004
}

// case: the caller checks right after the helper
void ok_caller_checks(float *d, int n) {
    launch_kern(d, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
}

// case: the caller peeks through getLastCudaError
void ok_caller_samples(float *d, int n) {
    launch_kern(d, n);
    getLastCudaError("kern failed");
}

// case: the caller copies before asking
void gm004_caller_forgets(float *d, float *h, int n) {
    launch_forgotten(d, n);
    CUDA_CHECK(cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost));
}

// case: a stored status read on every path before the next call
int ok_stored_branches(float *d, size_t n, int zero) {
    cudaError_t e = zero ? cudaMemset(d, 0, n) : cudaMemset(d, 1, n);
    if (e != cudaSuccess)
        return -1;
    return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

// case: a stored status read on one path only
int gm004_stored_one_path(float *d, size_t n, int verbose) {
    cudaError_t e = cudaMemset(d, 0, n);  // expect: GM004
    if (verbose)
        printf("%s\n", cudaGetErrorString(e));
    CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
}

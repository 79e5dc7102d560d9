/* Mistakes `gpumem lint` finds without running anything: a CUDA program written without gpumem,
 * as many are. From the repository's root:
 *
 *     gpumem lint examples/lint_findings.c
 *
 * (the README shows what it says). This file is lint's input, not a program: it is not built.
 * Each mistake is one of the review checklist's (docs/lint-rules.md explains each rule). */
#include <cuda_runtime_api.h>
#include <string.h>

/* Copies n floats to the device through a pinned staging buffer. */
int upload(float **out, const float *data, size_t n)
{
    float *staging, *dev;
    if (cudaMallocHost((void **)&staging, n * sizeof *staging) != cudaSuccess)
        return -1;
    if (cudaMalloc((void **)&dev, n * sizeof *dev) != cudaSuccess)
        return -1; /* the staging buffer is never released on this path */
    memcpy(staging, data, n * sizeof *staging);
    cudaMemcpy(dev, staging, n * sizeof *dev, cudaMemcpyHostToDevice); /* status unchecked */
    cudaFree(staging); /* pinned memory is released with cudaFreeHost */
    *out = dev;
    return 0;
}

/* Samples-style C library: a solver context with init/destroy and a cleanup label.
 * No findings expected. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>

typedef struct solver {
    float *d_a, *d_b, *d_x;
    float *h_staging;
    size_t n;
    cudaStream_t stream;
} solver;

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    fprintf(stderr, "solver: %s: %s\n", what, cudaGetErrorString(e));
    return 0;
}

int solver_init(solver *s, size_t n)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    if (!cuda_ok(cudaStreamCreate(&s->stream), "stream"))
        return -1;
    if (!cuda_ok(cudaMalloc((void **)&s->d_a, n * n * sizeof(float)), "d_a"))
        goto fail;
    if (!cuda_ok(cudaMalloc((void **)&s->d_b, n * sizeof(float)), "d_b"))
        goto fail;
    if (!cuda_ok(cudaMalloc((void **)&s->d_x, n * sizeof(float)), "d_x"))
        goto fail;
    if (!cuda_ok(cudaMallocHost((void **)&s->h_staging, n * sizeof(float)), "staging"))
        goto fail;
    return 0;
fail:
    cudaFree(s->d_x);  /* gpumem-lint: ignore[GM004] best effort on the error path */
    cudaFree(s->d_b);  /* gpumem-lint: ignore[GM004] */
    cudaFree(s->d_a);  /* gpumem-lint: ignore[GM004] */
    cudaStreamDestroy(s->stream);  /* gpumem-lint: ignore[GM004] */
    return -1;
}

void solver_destroy(solver *s)
{
    cuda_ok(cudaFreeHost(s->h_staging), "free staging");
    cuda_ok(cudaFree(s->d_x), "free d_x");
    cuda_ok(cudaFree(s->d_b), "free d_b");
    cuda_ok(cudaFree(s->d_a), "free d_a");
    cuda_ok(cudaStreamDestroy(s->stream), "stream");
}

int solver_step(solver *s, const float *b)
{
    float *d_tmp = NULL;
    int rc = -1;
    memcpy(s->h_staging, b, s->n * sizeof(float));
    if (!cuda_ok(cudaMemcpyAsync(s->d_b, s->h_staging, s->n * sizeof(float),
                                 cudaMemcpyHostToDevice, s->stream), "upload"))
        return -1;
    if (!cuda_ok(cudaMallocAsync((void **)&d_tmp, s->n * sizeof(float), s->stream), "tmp"))
        return -1;
    if (!cuda_ok(cudaMemsetAsync(d_tmp, 0, s->n * sizeof(float), s->stream), "memset"))
        goto out;
    rc = cuda_ok(cudaStreamSynchronize(s->stream), "sync") ? 0 : -1;
out:
    cuda_ok(cudaFreeAsync(d_tmp, s->stream), "free tmp");
    return rc;
}

float *solver_result(const solver *s)
{
    float *out = (float *)malloc(s->n * sizeof(float));
    if (!out)
        return NULL;
    if (!cuda_ok(cudaMemcpy(out, s->d_x, s->n * sizeof(float), cudaMemcpyDeviceToHost),
                 "download")) {
        free(out);
        return NULL;
    }
    return out;
}

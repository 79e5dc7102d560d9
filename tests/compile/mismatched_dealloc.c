/* Wrong on purpose: compiled by tests/compile/run.sh, never linked or run. GCC >= 11 must flag
 * each mistake from the allocation functions' malloc(gpumem_free, 1) attributes:
 * -Wmismatched-dealloc for free() and cudaFree()/cudaFreeHost() on gpumem memory, and
 * -fanalyzer's leak warning for memory lost on an early return. */
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <gpumem.h>

void wrong_free(size_t n);
void wrong_free(size_t n)
{
    float *h = gpumem_pinned_alloc(n, sizeof *h);
    free(h); /* expected: -Wmismatched-dealloc (free) */
}

void wrong_cuda_free(size_t n);
void wrong_cuda_free(size_t n)
{
    float *d = gpumem_device_alloc(n, sizeof *d);
    cudaFree(d); /* expected: -Wmismatched-dealloc (cudaFree) */
    float *h = gpumem_host_alloc(n, sizeof *h, GPUMEM_HOST_MAPPED);
    cudaFreeHost(h); /* expected: -Wmismatched-dealloc (cudaFreeHost) */
}

int leak_on_early_return(size_t n, int fail);
int leak_on_early_return(size_t n, int fail)
{
    float *d = gpumem_device_alloc(n, sizeof *d);
    if (!d)
        return -1;
    if (fail)
        return 1; /* expected: -Wanalyzer-malloc-leak (d is lost here) */
    gpumem_free(d);
    return 0;
}

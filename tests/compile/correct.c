/* Right: the same program as mismatched_dealloc.c done correctly must compile without a single
 * warning under the same flags (-Wall -Wextra -fanalyzer), scopes and GPUMEM_AUTO included. */
#include <stdlib.h>

#include <cuda_runtime_api.h>
#include <gpumem.h>

void right_free(size_t n);
void right_free(size_t n)
{
    float *h = gpumem_pinned_alloc(n, sizeof *h);
    gpumem_free(h);
    float *d = gpumem_device_alloc_async(n, sizeof *d, NULL);
    gpumem_free_async(d, NULL);
    int (*release)(void *) = gpumem_free;
    release(gpumem_managed_alloc(n, 4, 0));
}

int no_leak_on_early_return(size_t n, int fail);
int no_leak_on_early_return(size_t n, int fail)
{
    float *d = gpumem_device_alloc(n, sizeof *d);
    if (!d)
        return -1;
    if (fail) {
        gpumem_free(d);
        return 1;
    }
    gpumem_free(d);
    return 0;
}

#if GPUMEM_HAVE_CLEANUP
int automatic(size_t n, int fail);
int automatic(size_t n, int fail)
{
    GPUMEM_AUTO float *d = gpumem_device_alloc(n, sizeof *d);
    GPUMEM_SCOPE(s);
    float *h = gpumem_adopt(s, gpumem_host_alloc(n, sizeof *h, 0));
    if (!d || !h || fail)
        return 1;
    return 0;
}

float *handed_on(size_t n);
float *handed_on(size_t n)
{
    GPUMEM_AUTO float *d = gpumem_device_alloc(n, sizeof *d);
    return gpumem_steal(&d);
}
#endif

/* A sample program with a peak and a leak, through gpumem (runs on the simulated device too):
 * model weights that live throughout, per-step activations, a workspace that makes the peak
 * at step 6, and a cache that is filled and never released. `GPUMEM_TRACE=trace.json` records
 * it; docs/timeline.md shows the picture. */
#include <stdio.h>
#include <time.h>

#include "gpumem.h"

#define MiB ((size_t)1 << 20)

static void pause_us(long us)
{
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

static void *load_weights(size_t bytes)
{
    return gpumem_device_alloc(bytes, 1);
}

static void *alloc_activations(size_t bytes)
{
    return gpumem_device_alloc(bytes, 1);
}

static void *alloc_workspace(size_t bytes)
{
    return gpumem_device_alloc(bytes, 1);
}

static void *cache_batch(size_t bytes)
{
    return gpumem_pinned_alloc(bytes, 1); /* never released: the leak */
}

int main(void)
{
    void *weights[4];
    for (int i = 0; i < 4; i++) {
        weights[i] = load_weights(64 * MiB);
        pause_us(2000);
    }
    void *staging = gpumem_pinned_alloc(16 * MiB, 1);
    for (int step = 0; step < 12; step++) {
        void *act[6];
        for (int i = 0; i < 6; i++) {
            act[i] = alloc_activations((size_t)(8 + 4 * i) * MiB);
            pause_us(300);
        }
        void *ws = alloc_workspace(step == 6 ? 192 * MiB : 24 * MiB);
        pause_us(1500);
        gpumem_free(ws);
        for (int i = 5; i >= 0; i--) {
            gpumem_free(act[i]);
            pause_us(200);
        }
        if (step % 3 == 0)
            cache_batch(4 * MiB);
        pause_us(1000);
    }
    gpumem_free(staging);
    for (int i = 0; i < 4; i++)
        gpumem_free(weights[i]);
    printf("sample: done (4 pinned batches left allocated on purpose)\n");
    return 0;
}

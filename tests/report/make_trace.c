/* Writes traces for gpumem report's tests and benchmark, through the library on the simulated
 * device (run with GPUMEM_BACKEND=sim GPUMEM_TRACE=FILE):
 *   make_trace            a known scenario: 4 x 1 MiB weights (load_weights), an 8 MiB
 *                         workspace that makes the 12.0 MiB peak (make_peak), a checkpoint, a
 *                         1 PiB request that fails (ask_too_much), then 3 x 64 KiB left
 *                         allocated (leak_cache)
 *   make_trace many N     N events (N/2 allocations and their releases) from 200 call sites
 *                         with up to 2000 allocations live at once */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static void *load_weights(void)
{
    return gpumem_device_alloc(1, MiB);
}

static void *make_peak(void)
{
    return gpumem_device_alloc(8, MiB);
}

static void *leak_cache(void)
{
    return gpumem_pinned_alloc(64, KiB);
}

static void *ask_too_much(void)
{
    return gpumem_device_alloc(1, (size_t)1 << 50);
}

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static int scenario(void)
{
    gpumem_set_error_handler(quiet, NULL);
    void *w[4];
    for (int i = 0; i < 4; i++)
        w[i] = load_weights();
    void *ws = make_peak();
    gpumem_free(ws);
    gpumem_checkpoint();
    if (ask_too_much())
        return 1;
    for (int i = 0; i < 3; i++)
        if (!leak_cache())
            return 1;
    for (int i = 0; i < 4; i++)
        gpumem_free(w[i]);
    return 0;
}

static int many(long n)
{
    enum { LIVE = 2000, SITES = 200 };
    static void *live[LIVE];
    uint64_t x = 88172645463325252ull;
    long made = 0, released = 0;
    int nlive = 0;
    while (made + released < n) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        /* The live count follows three slow waves, with noise. */
        double target = (LIVE - 1) * (0.5 - 0.5 * cos(6.2831853 * 3 * (double)(made + released) / (double)n));
        int grow = made < n / 2 && nlive < LIVE && (nlive == 0 || nlive < target || (x & 7) == 0);
        if (grow) {
            int site = (int)((x >> 20) % SITES);
            /* Site 0 .. 199 get sizes that differ by site, so that they rank. */
            size_t bytes = 256 + (size_t)((x >> 32) % (64 * KiB)) * (size_t)(SITES - site) / 8;
            live[nlive] = gpumem_device_alloc_at(1, bytes, (gpumem_site){"model.c", "layer", 1000 + site});
            if (!live[nlive])
                return 1;
            nlive++;
            made++;
        } else {
            int i = (int)((x >> 24) % (uint64_t)nlive);
            gpumem_free(live[i]);
            live[i] = live[--nlive];
            released++;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "many") == 0)
        return many(atol(argv[2]));
    return scenario();
}

/* pool_loop: alloc + free pairs on N threads for S seconds, for a profiler or a debugger to
 * sample (bench/sample_stacks.sh); at the end, the pairs a second and the aggregate ns a pair.
 * Each thread has a stream of its own and the pool is shared, as in bench_pool.
 *
 * Pairs: device (a device pool; gpumem_pool_alloc + gpumem_free_async), pinned (a pinned pool;
 * gpumem_pool_alloc + gpumem_free), tracked-async (gpumem_device_alloc_async +
 * gpumem_free_async, no pool), raw-async (cudaMallocAsync + cudaFreeAsync).
 *
 * Usage: pool_loop [--threads N] [--bytes B] [--seconds S] [--pair NAME]
 *        (defaults: 16 threads, 4096 bytes, 3 seconds, device). Needs a GPU for raw-async and
 *        for streams of its own; exits 1 if an allocation fails. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpumem.h"

enum { DEVICE, PINNED, TRACKED_ASYNC, RAW_ASYNC };
static const char *const pair_names[] = {"device", "pinned", "tracked-async", "raw-async"};

static gpumem_pool *pool;
static size_t bytes = 4096;
static int pair = DEVICE;
static atomic_int stop, failed, cuda_failed; /* cuda_failed: raw-async's cudaError_t */
static atomic_long total;

static void *run(void *arg)
{
    (void)arg;
    cudaStream_t s = NULL;
    if (pair != PINNED && cudaStreamCreate(&s) != cudaSuccess)
        s = NULL; /* the legacy stream (no GPU: the simulated device) */
    long n = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < 1000; i++) {
            void *p = NULL;
            if (pair == RAW_ASYNC) {
                cudaError_t e = cudaMallocAsync(&p, bytes, s);
                if (e == cudaSuccess)
                    e = cudaFreeAsync(p, s);
                if (e != cudaSuccess) {
                    atomic_store(&cuda_failed, (int)e);
                    p = NULL;
                }
            } else if (pair == TRACKED_ASYNC) {
                p = gpumem_device_alloc_async(1, bytes, s);
                gpumem_free_async(p, s);
            } else {
                p = gpumem_pool_alloc(pool, 1, bytes, s);
                if (pair == DEVICE)
                    gpumem_free_async(p, s);
                else
                    gpumem_free(p);
            }
            if (!p) {
                atomic_store(&failed, 1);
                atomic_store(&stop, 1);
                break;
            }
        }
        n += 1000;
    }
    atomic_fetch_add(&total, n);
    if (s)
        cudaStreamDestroy(s);
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: pool_loop [--threads N] [--bytes B] [--seconds S] "
                    "[--pair device|pinned|tracked-async|raw-async]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int threads = 16, secs = 3;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        const char *v = argv[++i];
        if (strcmp(argv[i - 1], "--threads") == 0)
            threads = atoi(v);
        else if (strcmp(argv[i - 1], "--bytes") == 0)
            bytes = (size_t)strtoull(v, NULL, 10);
        else if (strcmp(argv[i - 1], "--seconds") == 0)
            secs = atoi(v);
        else if (strcmp(argv[i - 1], "--pair") == 0) {
            pair = -1;
            for (int k = 0; k < 4; k++)
                if (strcmp(v, pair_names[k]) == 0)
                    pair = k;
            if (pair < 0)
                return usage();
        } else
            return usage();
    }
    if (threads < 1 || threads > 256 || secs < 1 || bytes == 0) {
        fprintf(stderr, "pool_loop: --threads takes 1 to 256, --seconds at least 1, --bytes "
                        "at least 1\n");
        return 2;
    }
    if (pair == DEVICE || pair == PINNED) {
        pool = gpumem_pool_create(pair == DEVICE ? GPUMEM_KIND_DEVICE : GPUMEM_KIND_PINNED, 0,
                                  NULL);
        if (!pool) {
            fprintf(stderr, "pool_loop: %s\n", gpumem_last_error()->message);
            return 1;
        }
    }
    pthread_t t[256];
    int started = 0;
    for (; started < threads; started++)
        if (pthread_create(&t[started], NULL, run, NULL) != 0)
            break;
    struct timespec d = {secs, 0};
    nanosleep(&d, NULL);
    atomic_store(&stop, 1);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    if (atomic_load(&failed)) {
        int e = atomic_load(&cuda_failed);
        if (e)
            fprintf(stderr, "pool_loop: cudaMallocAsync or cudaFreeAsync failed: %s (raw-async "
                            "needs a GPU)\n", cudaGetErrorName((cudaError_t)e));
        else
            fprintf(stderr, "pool_loop: an allocation failed (gpumem's error is above)\n");
        return 1;
    }
    printf("RESULT bench=pool_loop pair=%s threads=%d bytes=%zu pairs_per_s=%.3g "
           "ns_per_pair_aggregate=%.1f\n", pair_names[pair], started, bytes,
           (double)total / secs, 1e9 * secs / (double)total);
    if (pool)
        gpumem_pool_destroy(pool);
    return 0;
}

/* bench_copy: host <-> device copy bandwidth: gpumem_copy from and to pageable memory against
 * cudaMemcpy from pinned and from pageable memory.
 *
 * For each size (4 KiB to 1 GiB; 64 MiB with --quick; 32 MiB, the smallest size the speed
 * target names, included) and each direction, ten timed runs of each path, after one warm-up:
 *   pinned:    cudaMemcpy from or to cudaMallocHost memory, the physical ceiling;
 *   pageable:  cudaMemcpy from or to malloc memory (6.2 GB/s to an H200, as measured before);
 *   staged:    gpumem_copy from or to the same malloc memory through the pinned staging ring
 *              (GPUMEM_COPY_STAGE_MIN=1 unless set, so every size is staged), with the
 *              registration cache off;
 *   cached:    gpumem_copy with the registration cache on, from 1 MiB: the buffer's first copy
 *              (staged; it queues the registration) is reported on its own; the ten runs,
 *              after the registration is done, are hits.
 * A run is one synchronous copy, or for sizes under 4 MiB the mean over enough copies to move
 * 4 MiB. Each row gives the minimum, median and maximum GB/s (1e9 bytes a second) of the ten
 * runs and the ratio of the median to the pinned median. The pageable buffer is touched first,
 * so no page fault is timed. On the sim backend (no GPU), "device" memory is host RAM and the
 * figures show only the machinery's own cost.
 *
 * --fill adds the bound staging works under: memcpy from malloc memory into pinned memory by
 * 1, 2, 4, 8 and 16 threads at once (32 MiB and 256 MiB).
 * --paths staged measures only the staged path (for comparing ring shapes quickly).
 * --json FILE writes every row (every run's GB/s too).
 *
 * Between two devices (with two or more; skipped, and said so, with fewer): gpumem_copy from
 * device 0's memory to device 1's and back, against the backend's own cuMemcpyPeerAsync (what
 * cudaMemcpyPeer does), from 1 MiB to the largest size; gpumem's copy is a peer copy when the
 * devices can reach each other and is staged through pinned memory when not.
 *
 * Usage: bench_copy [cuda|sim] [--quick] [--fill] [--paths all|staged] [--json FILE]
 * Prints a markdown table and `RESULT ...` lines. Exits 1 when a copy fails or is wrong. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"
#include "gpumem.h"
#include "internal.h"

enum { PINNED, PAGEABLE, STAGED, CACHED, NPATHS };
enum { H2D, D2H };
#define RUNS 10
#define MAX_SIZES 16

static const char *const path_names[NPATHS] = {"pinned cudaMemcpy", "pageable cudaMemcpy",
                                               "gpumem_copy staged", "gpumem_copy cached"};
static const char *const path_keys[NPATHS] = {"pinned", "pageable", "staged", "cached"};
static const char *const dir_names[] = {"h2d", "d2h"};
static int failed, use_cudart;

typedef struct row {
    int dir, path;
    size_t bytes;
    double run[RUNS], min, median, max, first; /* first: the registering copy (cached only) */
} row;

/* Byte i of what the host buffer holds, so that what comes back can be checked against it. */
static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + (i >> 12));
}

/* One synchronous copy by path p in direction dir; 0 on success. */
static int copy_once(int p, int dir, void *dev, void *host, void *pinned, size_t n)
{
    if (p == STAGED || p == CACHED)
        return dir == H2D ? gpumem_copy(dev, host, n) : gpumem_copy(host, dev, n);
    void *h = p == PINNED ? pinned : host;
    if (use_cudart)
        return (int)(dir == H2D ? cudaMemcpy(dev, h, n, cudaMemcpyDefault)
                                : cudaMemcpy(h, dev, n, cudaMemcpyDefault));
    int err = dir == H2D ? gpumem__be->memcpy_async(dev, h, n, NULL)
                         : gpumem__be->memcpy_async(h, dev, n, NULL);
    return err ? err : gpumem__be->stream_sync(NULL);
}

/* GB/s of one run: enough copies to move 4 MiB, at least one. */
static double run_once(int p, int dir, void *dev, void *host, void *pinned, size_t n)
{
    size_t reps = n >= ((size_t)4 << 20) ? 1 : ((size_t)4 << 20) / n;
    uint64_t t0 = bench_now_ns();
    for (size_t i = 0; i < reps; i++)
        if (copy_once(p, dir, dev, host, pinned, n) != 0) {
            failed = 1;
            return 0.0;
        }
    return (double)n * (double)reps / (double)(bench_now_ns() - t0);
}

static void measure(row *r, void *dev, void *host, void *pinned)
{
    int p = r->path;
    if (p == CACHED)
        gpumem__regcache_reset(); /* the first copy registers, as a program's first would */
    if (gpumem__regcache_set_enabled(p == CACHED) != (p == CACHED)) {
        r->path = -1; /* the cache cannot be on here: no row */
        return;
    }
    uint64_t t0 = bench_now_ns();
    if (copy_once(p, r->dir, dev, host, pinned, r->bytes) != 0) /* warm: rings, caches */
        failed = 1;
    r->first = (double)r->bytes / (double)(bench_now_ns() - t0);
    if (p == CACHED)
        gpumem__regcache_settle(); /* the registration the first copy queued, done */
    double v[RUNS];
    for (int k = 0; k < RUNS; k++)
        v[k] = r->run[k] = run_once(p, r->dir, dev, host, pinned, r->bytes);
    r->median = bench_median(v, RUNS); /* sorts v */
    r->min = v[0];
    r->max = v[RUNS - 1];
    if (p == CACHED)
        gpumem__regcache_reset(); /* unregisters: the next size starts cold */
    gpumem__regcache_set_enabled(0);
}

/* ---- --fill: memcpy from pageable into pinned memory by several threads ---- */

typedef struct fill_arg {
    char *dst;
    const char *src;
    size_t n;
    pthread_barrier_t *start;
} fill_arg;

static void *fill_main(void *a)
{
    fill_arg *f = a;
    pthread_barrier_wait(f->start);
    memcpy(f->dst, f->src, f->n);
    return NULL;
}

static double fill_gbps(char *dst, const char *src, size_t n, unsigned threads)
{
    double v[RUNS];
    for (int k = 0; k < RUNS; k++) {
        pthread_t t[16];
        fill_arg a[16];
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, threads + 1);
        size_t part = (n / threads + 4095) & ~(size_t)4095;
        for (unsigned i = 0; i < threads; i++) {
            size_t off = part * i < n ? part * i : n;
            a[i] = (fill_arg){dst + off, src + off, n - off < part ? n - off : part, &start};
            pthread_create(&t[i], NULL, fill_main, &a[i]);
        }
        pthread_barrier_wait(&start);
        uint64_t t0 = bench_now_ns();
        for (unsigned i = 0; i < threads; i++)
            pthread_join(t[i], NULL);
        v[k] = (double)n / (double)(bench_now_ns() - t0);
        pthread_barrier_destroy(&start);
    }
    return bench_median(v, RUNS);
}

static void fill_bound(FILE *json, char *pinned, const char *host, size_t max_bytes)
{
    static const unsigned threads[] = {1, 2, 4, 8, 16};
    printf("\nmemcpy from malloc into pinned memory, median of %d runs, GB/s\n\n", RUNS);
    printf("| bytes | 1 thread | 2 | 4 | 8 | 16 |\n|---:|---:|---:|---:|---:|---:|\n");
    size_t sizes[] = {(size_t)32 << 20, (size_t)256 << 20};
    for (int z = 0; z < 2; z++) {
        size_t n = sizes[z];
        if (n > max_bytes)
            break;
        double g[5];
        for (int t = 0; t < 5; t++)
            g[t] = fill_gbps(pinned, host, n, threads[t]);
        printf("| %zu | %.1f | %.1f | %.1f | %.1f | %.1f |\n", n, g[0], g[1], g[2], g[3], g[4]);
        for (int t = 0; t < 5; t++) {
            printf("RESULT bench=copy_fill bytes=%zu threads=%u gbps=%.3f\n", n, threads[t], g[t]);
            if (json)
                fprintf(json, ",\n  {\"bench\": \"copy_fill\", \"bytes\": %zu, \"threads\": %u, "
                              "\"gbps\": %.3f}",
                        n, threads[t], g[t]);
        }
        fflush(stdout);
    }
}

/* One synchronous copy between two devices: gpumem_copy, or cuMemcpyPeerAsync itself. */
static int peer_once(int gpumem, void *dst, int dd, const void *src, int sd, size_t n)
{
    if (gpumem)
        return gpumem_copy(dst, src, n);
    int err = gpumem__be->memcpy_peer_async(dst, dd, src, sd, n, NULL);
    return err ? err : gpumem__be->stream_sync(NULL);
}

/* GB/s of n bytes between two devices: the median of RUNS timed copies after a warm-up. */
static double measure_peer(int gpumem, void *dst, int dd, const void *src, int sd, size_t n)
{
    double v[RUNS];
    if (peer_once(gpumem, dst, dd, src, sd, n) != 0)
        failed = 1;
    for (int k = 0; k < RUNS; k++) {
        uint64_t t0 = bench_now_ns();
        if (peer_once(gpumem, dst, dd, src, sd, n) != 0)
            failed = 1;
        v[k] = (double)n / (double)(bench_now_ns() - t0);
    }
    return bench_median(v, RUNS);
}

/* Device 0 <-> device 1: gpumem_copy against cuMemcpyPeerAsync, with the data checked. */
static void bench_peer(size_t max_bytes)
{
    int ndev = gpumem_device_count();
    if (ndev < 2) {
        printf("RESULT bench=copy key=peer skipped=yes why=\"needs two devices, %d here\"\n\n",
               ndev);
        return;
    }
    int can01 = 0, can10 = 0;
    gpumem_device_can_access_peer(1, 0, &can01);
    gpumem_device_can_access_peer(0, 1, &can10);
    unsigned char *d[2] = {NULL, NULL};
    for (int i = 0; i < 2; i++) {
        gpumem_device_set(i);
        d[i] = gpumem_device_alloc(max_bytes, 1);
    }
    gpumem_device_set(0);
    unsigned char *host = malloc(4096), *back = malloc(4096);
    if (!d[0] || !d[1] || !host || !back) {
        fprintf(stderr, "bench_copy: cannot allocate %zu bytes on each of two devices: %s\n",
                max_bytes, gpumem_last_error()->message);
        failed = 1;
    } else {
        printf("| peer | bytes | gpumem_copy GB/s | cuMemcpyPeerAsync GB/s | gpumem / peer |\n");
        printf("|---|---:|---:|---:|---:|\n");
        for (size_t i = 0; i < 4096; i++)
            host[i] = pattern(i);
        if (gpumem_copy(d[0], host, 4096) != GPUMEM_OK)
            failed = 1;
        for (int dir = 0; dir < 2; dir++) {
            int from = dir, to = 1 - dir;
            for (size_t n = (size_t)1 << 20; n <= max_bytes; n *= 4) {
                double g = measure_peer(1, d[to], to, d[from], from, n);
                double c = measure_peer(0, d[to], to, d[from], from, n);
                printf("| %d to %d | %zu | %.2f | %.2f | %.2fx |\n", from, to, n, g, c, g / c);
                printf("RESULT bench=copy key=peer from=%d to=%d bytes=%zu gpumem_gbps=%.3f "
                       "peer_gbps=%.3f gpumem_vs_peer=%.3f can_access_peer=%d\n",
                       from, to, n, g, c, g / c, to == 1 ? can01 : can10);
                fflush(stdout);
            }
        }
        /* The data went 0 -> 1 -> 0 by both paths: device 0's first 4 KiB are the pattern. */
        memset(back, 0, 4096);
        if (gpumem_copy(back, d[0], 4096) != GPUMEM_OK || memcmp(back, host, 4096) != 0) {
            fprintf(stderr, "bench_copy: the copies between devices 0 and 1 did not bring the "
                            "data back; run test_devices for the failing case\n");
            failed = 1;
        }
        printf("\n");
    }
    free(host);
    free(back);
    gpumem_free(d[0]);
    gpumem_free(d[1]);
}

int main(int argc, char **argv)
{
    const char *backend = "cuda", *json_path = NULL;
    size_t max_bytes = (size_t)1 << 30;
    int fill = 0, only_staged = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            max_bytes = (size_t)64 << 20;
        else if (strcmp(argv[i], "--fill") == 0)
            fill = 1;
        else if (strcmp(argv[i], "--paths") == 0 && i + 1 < argc)
            only_staged = strcmp(argv[++i], "staged") == 0;
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json_path = argv[++i];
        else if (argv[i][0] != '-')
            backend = argv[i];
        else {
            fprintf(stderr, "usage: %s [cuda|sim] [--quick] [--fill] [--paths all|staged] "
                            "[--json FILE]\n", argv[0]);
            return 2;
        }
    }
    setenv("GPUMEM_COPY_STAGE_MIN", "1", 0); /* measure staging at every size */
    if (gpumem_backend_select(backend) != GPUMEM_OK) {
        fprintf(stderr, "usage: %s [cuda|sim] [--quick] [--fill] [--paths all|staged] "
                        "[--json FILE]\n", argv[0]);
        return 2;
    }
    if (gpumem_init() != GPUMEM_OK) {
        printf("bench_copy: no usable CUDA device here (%s); nothing measured. Run it on a GPU "
               "machine, or `bench_copy sim` for the staging machinery's own cost.\n",
               gpumem_last_error()->message);
        return 0;
    }
    use_cudart = strcmp(gpumem_backend(), "cuda") == 0;
    unsigned char *host = malloc(max_bytes);
    unsigned char *pinned = gpumem_pinned_alloc(max_bytes, 1);
    unsigned char *dev = gpumem_device_alloc(max_bytes, 1);
    if (!host || !pinned || !dev) {
        fprintf(stderr, "bench_copy: cannot allocate %zu bytes: %s\n", max_bytes,
                gpumem_last_error()->message);
        free(host);
        gpumem_free(pinned);
        gpumem_free(dev);
        return 1;
    }
    for (size_t i = 0; i < max_bytes; i++)
        host[i] = pattern(i);
    memcpy(pinned, host, max_bytes);
    FILE *json = NULL;
    if (json_path && !(json = fopen(json_path, "w"))) {
        perror(json_path);
        return 1;
    }

    char cpu[128];
    printf("# bench_copy on %s (%s, %ld cores); staging: GPUMEM_COPY_SLOTS=%llu x "
           "GPUMEM_COPY_SLOT_BYTES=%llu, GPUMEM_COPY_THREADS=%llu (0: one a core, up to 16); "
           "%d runs a row\n\n",
           gpumem_backend(), bench_cpu_model(cpu, sizeof cpu), bench_cores(),
           (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOTS),
           (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES),
           (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_THREADS), RUNS);
    if (json)
        fprintf(json, "{\"bench\": \"copy\", \"backend\": \"%s\", \"cores\": %ld, "
                      "\"slots\": %llu, \"slot_bytes\": %llu, \"threads\": %llu, \"runs\": %d, "
                      "\"rows\": [\n  {\"bench\": \"machine\", \"cpu\": \"%s\"}",
                gpumem_backend(), bench_cores(),
                (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOTS),
                (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES),
                (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_THREADS), RUNS, cpu);
    printf("| direction | bytes | path | min GB/s | median GB/s | max GB/s | median / pinned "
           "| first copy GB/s |\n|---|---:|---|---:|---:|---:|---:|---:|\n");

    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (size_t n = 4096; n <= max_bytes && nsizes < MAX_SIZES - 1; n *= 4) {
        sizes[nsizes++] = n;
        if (n == ((size_t)16 << 20) && n * 2 <= max_bytes)
            sizes[nsizes++] = n * 2; /* 32 MiB */
    }
    for (int dir = 0; dir < 2; dir++) {
        for (int z = 0; z < nsizes; z++) {
            double pinned_median = 0.0;
            for (int p = 0; p < NPATHS; p++) {
                if (only_staged && p != STAGED)
                    continue;
                if (p == CACHED && sizes[z] < ((size_t)1 << 20))
                    continue;
                row r = {dir, p, sizes[z], {0}, 0, 0, 0, 0};
                measure(&r, dev, host, pinned);
                if (r.path < 0)
                    continue;
                if (p == PINNED)
                    pinned_median = r.median;
                double ratio = pinned_median > 0 ? r.median / pinned_median : 0.0;
                printf("| %s | %zu | %s | %.2f | %.2f | %.2f | %.3f |", dir_names[dir], r.bytes,
                       path_names[p], r.min, r.median, r.max, ratio);
                if (p == CACHED)
                    printf(" %.2f |\n", r.first);
                else
                    printf(" |\n");
                printf("RESULT bench=copy dir=%s bytes=%zu path=%s min_gbps=%.3f "
                       "median_gbps=%.3f max_gbps=%.3f vs_pinned=%.3f",
                       dir_names[dir], r.bytes, path_keys[p], r.min, r.median, r.max, ratio);
                if (p == CACHED)
                    printf(" first_gbps=%.3f", r.first);
                printf("\n");
                fflush(stdout);
                if (json) {
                    fprintf(json, ",\n  {\"bench\": \"copy\", \"dir\": \"%s\", \"bytes\": %zu, "
                                  "\"path\": \"%s\", \"min_gbps\": %.3f, \"median_gbps\": %.3f, "
                                  "\"max_gbps\": %.3f, \"vs_pinned\": %.3f, \"first_gbps\": %.3f, "
                                  "\"runs_gbps\": [",
                            dir_names[dir], r.bytes, path_keys[p], r.min, r.median, r.max, ratio,
                            r.first);
                    for (int k = 0; k < RUNS; k++)
                        fprintf(json, "%s%.3f", k ? ", " : "", r.run[k]);
                    fprintf(json, "]}");
                }
            }
        }
    }
    /* The data made the round trip: host holds what the last staged copy from the device
     * brought back, and its first 4 KiB are read back once more through the staged path. */
    memset(host, 0, 4096);
    size_t bad = 0;
    if (gpumem_copy(host, dev, 4096) != GPUMEM_OK)
        failed = 1;
    while (bad < max_bytes && host[bad] == pattern(bad))
        bad++;
    if (bad < max_bytes) {
        fprintf(stderr, "bench_copy: byte %zu read back from the device is %u, want %u: a staged "
                        "copy is wrong; run test_copy for the failing case\n",
                bad, host[bad], pattern(bad));
        failed = 1;
    }
    gpumem__regcache_counts rc;
    gpumem__regcache_counts_get(&rc);
    printf("\nRESULT bench=copy key=regcache state=%s hits=%llu misses=%llu registered=%llu "
           "evicted=%llu refused=%llu%s%s\n",
           rc.off_reason ? "off" : "on", (unsigned long long)rc.hits,
           (unsigned long long)rc.misses, (unsigned long long)rc.registered,
           (unsigned long long)rc.evicted, (unsigned long long)rc.refused,
           rc.off_reason ? " reason=" : "", rc.off_reason ? rc.off_reason : "");
    if (fill)
        fill_bound(json, (char *)pinned, (const char *)host, max_bytes);
    if (json) {
        fprintf(json, "\n]}\n");
        fclose(json);
    }
    free(host);
    gpumem_free(pinned);
    gpumem_free(dev);
    printf("\n");
    bench_peer(max_bytes);
    return failed;
}

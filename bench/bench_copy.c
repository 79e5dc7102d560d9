/* bench_copy: host <-> device copy bandwidth, direct against staged (issue 7).
 *
 * For each size from 4 KiB to 1 GiB (64 MiB with --quick) and each direction:
 *   pinned: one cuMemcpyAsync from or to pinned memory, the physical ceiling;
 *   direct: one cuMemcpyAsync from or to pageable memory, what cudaMemcpy does (6.2 GB/s to
 *           an H200 in docs/cuda-facts.md);
 *   staged: gpumem_copy from or to pageable memory through the pinned staging ring (forced at
 *           every size here: GPUMEM_COPY_STAGE_MIN=1 unless set in the environment).
 * Each figure is the median of repeated synchronous copies (at least 3, for at least 0.2 s;
 * 0.05 s with --quick), with the pageable buffer touched beforehand so no page fault is timed.
 * The threshold: the smallest size from which staging beats the direct copy at that size and
 * every larger one, per direction; GPUMEM_COPY_STAGE_MIN should be the larger of the two.
 *
 * Between two devices (with two or more; skipped, and said so, with fewer): gpumem_copy from
 * device 0's memory to device 1's and back, against the backend's own cuMemcpyPeerAsync (what
 * cudaMemcpyPeer does), from 1 MiB to the largest size; gpumem's copy is a peer copy when the
 * devices can reach each other and is staged through pinned memory when not.
 *
 * Backends: `cuda` (the default; needs a GPU, else it says so and exits 0) or `sim` (the
 * simulated device: only the staging machinery's own cost over host memory, not a link).
 *
 * Usage: bench_copy [cuda|sim] [--quick]
 * Prints a markdown table and `RESULT ...` lines. Exits 1 when a copy fails or is wrong. */
#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "gpumem.h"
#include "internal.h"

enum { PINNED, DIRECT, STAGED, NPATHS };
enum { H2D, D2H };
#define MAX_SIZES 24

static double min_seconds = 0.2;
static int failed;

/* Byte i of what the host buffer holds, so that what comes back can be checked against it. */
static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 7 + (i >> 12));
}

/* One synchronous copy by path p in direction dir; 0 on success. */
static int copy_once(int p, int dir, void *dev, void *host, void *pinned, size_t n)
{
    if (p == STAGED)
        return dir == H2D ? gpumem_copy(dev, host, n) : gpumem_copy(host, dev, n);
    void *h = p == PINNED ? pinned : host;
    int err = dir == H2D ? gpumem__be->memcpy_async(dev, h, n, NULL)
                         : gpumem__be->memcpy_async(h, dev, n, NULL);
    return err ? err : gpumem__be->stream_sync(NULL);
}

/* GB/s (1e9 bytes a second): the median over the repetitions. */
static double measure(int p, int dir, void *dev, void *host, void *pinned, size_t n)
{
    double v[512];
    size_t k = 0;
    if (copy_once(p, dir, dev, host, pinned, n) != 0) /* warm: rings, contexts, caches */
        failed = 1;
    uint64_t start = bench_now_ns();
    while (k < sizeof v / sizeof *v &&
           (k < 3 || (double)(bench_now_ns() - start) < min_seconds * 1e9)) {
        uint64_t t0 = bench_now_ns();
        if (copy_once(p, dir, dev, host, pinned, n) != 0) {
            failed = 1;
            break;
        }
        v[k++] = (double)n / (double)(bench_now_ns() - t0);
    }
    return bench_median(v, k);
}

/* One synchronous copy between two devices: gpumem_copy, or cuMemcpyPeerAsync itself. */
static int peer_once(int gpumem, void *dst, int dd, const void *src, int sd, size_t n)
{
    if (gpumem)
        return gpumem_copy(dst, src, n);
    int err = gpumem__be->memcpy_peer_async(dst, dd, src, sd, n, NULL);
    return err ? err : gpumem__be->stream_sync(NULL);
}

static double measure_peer(int gpumem, void *dst, int dd, const void *src, int sd, size_t n)
{
    double v[512];
    size_t k = 0;
    if (peer_once(gpumem, dst, dd, src, sd, n) != 0)
        failed = 1;
    uint64_t start = bench_now_ns();
    while (k < sizeof v / sizeof *v &&
           (k < 3 || (double)(bench_now_ns() - start) < min_seconds * 1e9)) {
        uint64_t t0 = bench_now_ns();
        if (peer_once(gpumem, dst, dd, src, sd, n) != 0) {
            failed = 1;
            break;
        }
        v[k++] = (double)n / (double)(bench_now_ns() - t0);
    }
    return bench_median(v, k);
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
    const char *backend = "cuda";
    size_t max_bytes = (size_t)1 << 30;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            max_bytes = (size_t)64 << 20;
            min_seconds = 0.05;
        } else {
            backend = argv[i];
        }
    }
    setenv("GPUMEM_COPY_STAGE_MIN", "1", 0); /* measure staging at every size */
    if (gpumem_backend_select(backend) != GPUMEM_OK) {
        fprintf(stderr, "usage: %s [cuda|sim] [--quick]\n", argv[0]);
        return 2;
    }
    if (gpumem_init() != GPUMEM_OK) {
        printf("bench_copy: no usable CUDA device here (%s); nothing measured. Run it on a GPU "
               "machine, or `bench_copy sim` for the staging machinery's own cost.\n",
               gpumem_last_error()->message);
        return 0;
    }
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

    char cpu[128];
    printf("# bench_copy on %s (%s, %ld cores); staging: GPUMEM_COPY_SLOTS=%llu x "
           "GPUMEM_COPY_SLOT_BYTES=%llu, GPUMEM_COPY_THREADS=%llu (0: one a core, up to 16)\n\n",
           gpumem_backend(), bench_cpu_model(cpu, sizeof cpu), bench_cores(),
           (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOTS),
           (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_SLOT_BYTES),
           (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_COPY_THREADS));
    printf("| direction | bytes | pinned GB/s | pageable direct GB/s | pageable staged GB/s | "
           "staged / pinned | staged / direct |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");

    static const char *const dir_names[] = {"h2d", "d2h"};
    size_t sizes[MAX_SIZES];
    int nsizes = 0;
    for (size_t n = 4096; n <= max_bytes && nsizes < MAX_SIZES; n *= 4)
        sizes[nsizes++] = n;
    if (sizes[nsizes - 1] != max_bytes && nsizes < MAX_SIZES)
        sizes[nsizes++] = max_bytes;
    double gbps[2][MAX_SIZES][NPATHS];
    for (int dir = 0; dir < 2; dir++) {
        for (int z = 0; z < nsizes; z++) {
            size_t n = sizes[z];
            for (int p = 0; p < NPATHS; p++)
                gbps[dir][z][p] = measure(p, dir, dev, host, pinned, n);
            const double *g = gbps[dir][z];
            printf("| %s | %zu | %.2f | %.2f | %.2f | %.2f | %.2fx |\n", dir_names[dir], n,
                   g[PINNED], g[DIRECT], g[STAGED], g[STAGED] / g[PINNED], g[STAGED] / g[DIRECT]);
            printf("RESULT bench=copy dir=%s bytes=%zu pinned_gbps=%.3f direct_gbps=%.3f "
                   "staged_gbps=%.3f staged_vs_pinned=%.3f staged_vs_direct=%.3f\n",
                   dir_names[dir], n, g[PINNED], g[DIRECT], g[STAGED], g[STAGED] / g[PINNED],
                   g[STAGED] / g[DIRECT]);
            fflush(stdout);
        }
    }
    /* The data made the round trip. The last copy each way was a staged copy of the largest
     * size, so host holds what the device got from it; its first 4 KiB are read back once more
     * through the staged path. Both are checked against the pattern, not against pinned, which
     * the d2h copies overwrote with the device's bytes, right or wrong. */
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
    printf("\n");
    size_t suggest = 0;
    for (int dir = 0; dir < 2; dir++) {
        int from = nsizes; /* staged wins from sizes[from] up */
        while (from > 0 && gbps[dir][from - 1][STAGED] > gbps[dir][from - 1][DIRECT])
            from--;
        size_t t = from < nsizes ? sizes[from] : 0;
        if (from == nsizes)
            printf("RESULT bench=copy key=threshold_%s bytes=none\n", dir_names[dir]);
        else
            printf("RESULT bench=copy key=threshold_%s bytes=%zu\n", dir_names[dir], t);
        if (t > suggest)
            suggest = t;
        const double *g = gbps[dir][nsizes - 1];
        printf("RESULT bench=copy key=largest_%s bytes=%zu staged_gbps=%.3f staged_vs_pinned=%.3f "
               "target_vs_pinned=0.90 meets_target=%s\n",
               dir_names[dir], sizes[nsizes - 1], g[STAGED], g[STAGED] / g[PINNED],
               g[STAGED] >= 0.9 * g[PINNED] ? "yes" : "no");
    }
    if (suggest)
        printf("RESULT bench=copy key=stage_min_suggested bytes=%zu\n", suggest);
    else
        printf("RESULT bench=copy key=stage_min_suggested bytes=none (staging never won: keep "
               "GPUMEM_COPY_STAGE_MIN=0)\n");
    free(host);
    gpumem_free(pinned);
    gpumem_free(dev);
    printf("\n");
    bench_peer(max_bytes);
    return failed;
}

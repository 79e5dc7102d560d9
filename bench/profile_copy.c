/* profile_copy: where the time of a staged gpumem_copy goes, from the DMA engine's side.
 *
 * CUPTI's activity records give the start and end of every transfer the copy queued (its
 * chunks), in the same clock as cuptiGetTimestamp. Around each synchronous gpumem_copy between
 * malloc memory and the device, the time splits into:
 *   lead: from the call to the first chunk's transfer start (the first fill, to the device;
 *         the first transfer's queueing, from it),
 *   busy: the chunks' transfers (one stream: they never overlap),
 *   gaps: between one chunk's end and the next one's start (the engine waits for the host),
 *   tail: from the last transfer's end to the return (from the device: the last drain).
 * busy at the link's rate is the floor; the rest is what staging adds. The same is shown for a
 * cudaMemcpy from pinned memory, the reference, and for the same pinned memory copied in the
 * staged path's chunk sizes, one cudaMemcpyAsync and one event each, on the legacy default
 * stream and on a stream of its own (what the driver does with such a sequence, gpumem aside).
 *
 * The registration cache is turned off (GPUMEM_REGCACHE=0) unless the environment sets it, so
 * that every copy is staged.
 *
 * Usage: profile_copy [--runs N] [--timeline] [size_MiB ...]   (default: 5 runs; 32 256)
 * Needs a GPU; without one it says so and exits 77. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"

#define MAX_CHUNKS 4096

typedef struct {
    uint64_t start, end, bytes;
    int kind; /* CUPTI_ACTIVITY_MEMCPY_KIND_* */
} chunk;

static chunk chunks[MAX_CHUNKS];
static size_t nchunks;
static int dropped;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *size = (size_t)4 << 20;
    *buffer = aligned_alloc(8, *size);
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_MEMCPY)
            continue;
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        if (nchunks == MAX_CHUNKS) {
            dropped = 1;
            continue;
        }
        chunks[nchunks++] = (chunk){m->start, m->end, m->bytes, m->copyKind};
    }
    free(buffer);
}

static int cmp_start(const void *a, const void *b)
{
    const chunk *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

typedef struct {
    double total, lead, busy, gaps, tail; /* us */
    size_t n;
    double min_rate, med_rate; /* GB/s of single chunks */
} split;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The chunks of one copy made between t0 and t1, sorted; their split. */
static split split_of(uint64_t t0, uint64_t t1, int timeline, const char *label)
{
    split s = {0};
    qsort(chunks, nchunks, sizeof *chunks, cmp_start);
    static double rate[MAX_CHUNKS];
    uint64_t prev_end = 0;
    for (size_t i = 0; i < nchunks; i++) {
        const chunk *c = &chunks[i];
        if (c->start < t0 || c->end > t1)
            continue;
        if (s.n == 0)
            s.lead = (double)(c->start - t0) / 1e3;
        else
            s.gaps += c->start > prev_end ? (double)(c->start - prev_end) / 1e3 : 0;
        s.busy += (double)(c->end - c->start) / 1e3;
        rate[s.n] = c->end > c->start ? (double)c->bytes / (double)(c->end - c->start) : 0;
        if (timeline)
            printf("| %s | %zu | %.1f | %.1f | %.1f | %.1f | %.1f |\n", label, s.n,
                   (double)(c->start - t0) / 1e3, s.n ? (double)(c->start - prev_end) / 1e3 : 0.0,
                   (double)(c->end - c->start) / 1e3, (double)c->bytes / 1048576.0, rate[s.n]);
        prev_end = c->end;
        s.n++;
    }
    s.total = (double)(t1 - t0) / 1e3;
    s.tail = s.n ? (double)(t1 - prev_end) / 1e3 : 0;
    if (s.n) {
        qsort(rate, s.n, sizeof *rate, cmp_double);
        s.min_rate = rate[0];
        s.med_rate = rate[s.n / 2];
    }
    return s;
}

/* The staged path's chunk sizes (src/copy.c, chunk_at, with its default 4 MiB slots): from
 * 256 KiB, doubling up to a slot, halving towards the end. */
static size_t chunk_size(size_t off, size_t bytes)
{
    const size_t min = (size_t)256 << 10, part = (size_t)64 << 10, slot = (size_t)4 << 20;
    size_t left = bytes - off;
    size_t c = off < left / 2 ? off : left / 2;
    if (c < min)
        c = min;
    c -= c % part;
    if (c > slot)
        c = slot;
    if (left - (c < left ? c : left) < min && left <= slot)
        c = left;
    return c < left ? c : left;
}

/* Pinned memory copied in the staged path's chunks, one cudaMemcpyAsync each, an event
 * recorded after each as the staged path does, then synchronized: what the driver and the
 * engine do with that sequence, without gpumem. On the legacy default stream (which the
 * synchronous gpumem_copy uses, as cudaMemcpy does) or, with own_stream, on a non-blocking
 * stream of its own. */
static int chunked(char *d, char *pin, size_t n, int dir, int own_stream)
{
    static cudaStream_t mine;
    static cudaEvent_t ev[64];
    if (!mine) {
        if (cudaStreamCreateWithFlags(&mine, cudaStreamNonBlocking) != cudaSuccess)
            return 1;
        for (int i = 0; i < 64; i++)
            if (cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming) != cudaSuccess)
                return 1;
    }
    cudaStream_t s = own_stream ? mine : 0;
    unsigned k = 0;
    for (size_t off = 0; off < n; k++) {
        size_t c = chunk_size(off, n);
        cudaError_t e = dir == 0 ? cudaMemcpyAsync(d + off, pin + off, c, cudaMemcpyHostToDevice, s)
                                 : cudaMemcpyAsync(pin + off, d + off, c, cudaMemcpyDeviceToHost, s);
        if (e != cudaSuccess || cudaEventRecord(ev[k % 64], s) != cudaSuccess)
            return 1;
        off += c;
    }
    return cudaStreamSynchronize(s) != cudaSuccess;
}

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "profile_copy: %s: %s\n", what, cudaGetErrorString(e));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int runs = 5, timeline = 0;
    size_t sizes[16], nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
            if (runs < 1 || runs > 100) {
                fprintf(stderr, "profile_copy: --runs takes 1 to 100\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--timeline") == 0) {
            timeline = 1;
        } else if (argv[i][0] >= '1' && argv[i][0] <= '9' && nsizes < 16) {
            long mib = atol(argv[i]);
            if (mib < 1 || mib > 16384) {
                fprintf(stderr, "profile_copy: a size is 1 to 16384 MiB, not %s\n", argv[i]);
                return 2;
            }
            sizes[nsizes++] = (size_t)mib << 20;
        } else {
            fprintf(stderr, "usage: profile_copy [--runs N] [--timeline] [size_MiB ...]\n");
            return 2;
        }
    }
    if (!nsizes) {
        sizes[nsizes++] = (size_t)32 << 20;
        sizes[nsizes++] = (size_t)256 << 20;
    }
    setenv("GPUMEM_REGCACHE", "0", 0);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("profile_copy: no GPU here; nothing measured\n");
        return 77;
    }
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
        fprintf(stderr, "profile_copy: CUPTI refused the memcpy activity records\n");
        return 1;
    }
    printf("## profile_copy: staged gpumem_copy against pinned cudaMemcpy, from the DMA side\n\n"
           "- gpumem %s; GPUMEM_REGCACHE=%s; %d runs a row (times in us, the median run by "
           "total; chunk rates are single transfers' GB/s)\n\n",
           gpumem_version(), getenv("GPUMEM_REGCACHE"), runs);
    printf("| copy | MiB | total | lead | busy | gaps | tail | chunks | busy GB/s | chunk GB/s "
           "min / median | of pinned total |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t k = 0; k < nsizes; k++) {
        size_t n = sizes[k];
        char *h = malloc(n), *pin = NULL, *d = NULL;
        if (!h) {
            fprintf(stderr, "profile_copy: no %zu MiB of host memory for the pageable buffer; "
                            "give smaller sizes\n", n >> 20);
            return 1;
        }
        if (check(cudaMallocHost((void **)&pin, n), "cudaMallocHost") ||
            check(cudaMalloc((void **)&d, n), "cudaMalloc"))
            return 1;
        memset(h, 1, n);
        memset(pin, 2, n);
        for (int dir = 0; dir < 2; dir++) {
            split pinned_s[100], staged_s[100], chunked_s[100], bare_s[100];
            for (int kind = 0; kind < 4; kind++) {
                split *out = kind == 0 ? pinned_s : kind == 1 ? staged_s : kind == 2 ? chunked_s
                                                                                      : bare_s;
                for (int r = -1; r < runs; r++) { /* r = -1: warm-up */
                    uint64_t t0, t1;
                    cuptiActivityFlushAll(0);
                    nchunks = 0;
                    cuptiGetTimestamp(&t0);
                    int bad;
                    if (kind == 0)
                        bad = check(dir == 0 ? cudaMemcpy(d, pin, n, cudaMemcpyHostToDevice)
                                             : cudaMemcpy(pin, d, n, cudaMemcpyDeviceToHost),
                                    "cudaMemcpy");
                    else if (kind == 1)
                        bad = dir == 0 ? gpumem_copy(d, h, n) : gpumem_copy(h, d, n);
                    else
                        bad = chunked(d, pin, n, dir, kind == 3);
                    cuptiGetTimestamp(&t1);
                    if (bad) {
                        fprintf(stderr, "profile_copy: the copy failed\n");
                        return 1;
                    }
                    cuptiActivityFlushAll(0);
                    if (r >= 0)
                        out[r] = split_of(t0, t1, 0, NULL);
                }
            }
            /* The median run of each, by total. */
            static const char *const names[4] = {"cudaMemcpy pinned", "gpumem_copy staged",
                                                 "pinned chunks, legacy stream",
                                                 "pinned chunks, own stream"};
            static const char *const keys[4] = {"pinned", "staged", "chunks_legacy",
                                                "chunks_own"};
            for (int kind = 0; kind < 4; kind++) {
                split *v = kind == 0 ? pinned_s : kind == 1 ? staged_s : kind == 2 ? chunked_s
                                                                                    : bare_s;
                for (int i = 1; i < runs; i++)
                    for (int j = i; j > 0 && v[j].total < v[j - 1].total; j--) {
                        split t = v[j];
                        v[j] = v[j - 1];
                        v[j - 1] = t;
                    }
                const split *m = &v[runs / 2];
                double ref = pinned_s[runs / 2].total;
                printf("| %s %s | %zu | %.1f | %.1f | %.1f | %.1f | %.1f | %zu | %.1f | %.1f / "
                       "%.1f | %.0f %% |\n",
                       names[kind], dir ? "from device" : "to device", n >> 20, m->total, m->lead, m->busy,
                       m->gaps, m->tail, m->n, m->busy > 0 ? (double)n / m->busy / 1e3 : 0,
                       m->min_rate, m->med_rate, 100.0 * ref / m->total);
                printf("RESULT bench=profile_copy path=%s dir=%s bytes=%zu total_us=%.1f "
                       "lead_us=%.1f busy_us=%.1f gaps_us=%.1f tail_us=%.1f chunks=%zu\n",
                       keys[kind], dir ? "d2h" : "h2d", n, m->total, m->lead,
                       m->busy, m->gaps, m->tail, m->n);
            }
            fflush(stdout);
        }
        if (timeline) {
            /* One more staged copy each way, chunk by chunk. */
            printf("\n| copy | chunk | start | gap before | transfer | MiB | GB/s |\n"
                   "|---|---:|---:|---:|---:|---:|---:|\n");
            for (int dir = 0; dir < 2; dir++) {
                uint64_t t0, t1;
                cuptiActivityFlushAll(0);
                nchunks = 0;
                cuptiGetTimestamp(&t0);
                int bad = dir == 0 ? gpumem_copy(d, h, n) : gpumem_copy(h, d, n);
                cuptiGetTimestamp(&t1);
                cuptiActivityFlushAll(0);
                if (bad)
                    return 1;
                char label[64];
                snprintf(label, sizeof label, "%zu MiB %s", n >> 20, dir ? "from device" : "to device");
                split s = split_of(t0, t1, 1, label);
                printf("| %s: total %.1f, lead %.1f, tail %.1f | | | | | | |\n", label, s.total,
                       s.lead, s.tail);
            }
            printf("\n| copy | MiB | total | lead | busy | gaps | tail | chunks | busy GB/s | "
                   "chunk GB/s min / median | of pinned total |\n"
                   "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        }
        cudaFree(d);
        cudaFreeHost(pin);
        free(h);
    }
    if (dropped)
        fprintf(stderr, "profile_copy: more than %d transfers in one copy; some not shown\n",
                MAX_CHUNKS);
    return 0;
}

/* `gpumem bench`: every way data crosses the link, host to device (H2D) and back (D2H).
 *
 * One buffer of each kind, of copy_bytes, made once with gpumem (what is measured here is the
 * copy, not the allocation). A sample times one crossing with the host clock, from the call
 * to the end of the work on the device: setup a path needs before each crossing (putting
 * managed pages back where they start) happens before the clock starts. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "gpumem.h"

enum { H2D, D2H };
static const char *const dir_name[2] = {"H2D", "D2H"};

typedef struct buffers {
    size_t bytes;
    void *dev;
    void *pageable;
    void *pinned;
    void *wc;
    void *mapped, *mapped_dev;
    void *managed;
} buffers;

typedef struct copy_path copy_path;
/* One crossing in direction @dir; *ns is the timed part. Returns 0, or -1 with the note set. */
typedef int (*crossing_fn)(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns);

struct copy_path {
    const char *key;
    const char *label;
    crossing_fn cross;
    int needs_kernels;
    int needs_managed;
};

#define CK_CUDA(row, call)                                                                       \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess)                                                                   \
            return bench_fail(c, (row), #call, (int)e_);                                         \
    } while (0)
#define CK_GPUMEM(row, call)                                                                     \
    do {                                                                                         \
        int s_ = (call);                                                                         \
        if (s_ != GPUMEM_OK)                                                                     \
            return bench_fail(c, (row), #call, s_);                                              \
    } while (0)

static int cross_pageable(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    uint64_t t = bench_now_ns();
    if (dir == H2D)
        CK_CUDA(row, cudaMemcpy(b->dev, b->pageable, b->bytes, cudaMemcpyHostToDevice));
    else
        CK_CUDA(row, cudaMemcpy(b->pageable, b->dev, b->bytes, cudaMemcpyDeviceToHost));
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

static int cross_async(bench_ctx *c, bench_row *row, const buffers *b, void *host, int dir,
                       double *ns)
{
    uint64_t t = bench_now_ns();
    if (dir == H2D)
        CK_CUDA(row, cudaMemcpyAsync(b->dev, host, b->bytes, cudaMemcpyHostToDevice, c->stream));
    else
        CK_CUDA(row, cudaMemcpyAsync(host, b->dev, b->bytes, cudaMemcpyDeviceToHost, c->stream));
    CK_CUDA(row, cudaStreamSynchronize(c->stream));
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

static int cross_pinned(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    return cross_async(c, row, b, b->pinned, dir, ns);
}

static int cross_wc(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    return cross_async(c, row, b, b->wc, dir, ns);
}

/* gpumem's own copy: pageable memory staged through its pinned slots. */
static int cross_staged(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    void *dst = dir == H2D ? b->dev : b->pageable;
    const void *src = dir == H2D ? b->pageable : b->dev;
    uint64_t t = bench_now_ns();
    CK_GPUMEM(row, gpumem_copy(dst, src, b->bytes));
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

static int cross_staged_async(bench_ctx *c, bench_row *row, const buffers *b, int dir,
                              double *ns)
{
    void *dst = dir == H2D ? b->dev : b->pageable;
    const void *src = dir == H2D ? b->pageable : b->dev;
    uint64_t t = bench_now_ns();
    CK_GPUMEM(row, gpumem_copy_async(dst, src, b->bytes, c->stream));
    CK_CUDA(row, cudaStreamSynchronize(c->stream));
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

#ifdef GPUMEM_BENCH_HAVE_KERNELS
/* The host reads one word of every 4 KiB page: enough to fault each page in, little enough
 * that the time is the migration's, not the reading's. */
static void touch_pages(const void *p, size_t bytes)
{
    const volatile uint64_t *w = (const volatile uint64_t *)p;
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes / 8; i += 4096 / 8)
        sum += w[i];
    bench_sink = sum;
}

static int blocks(const bench_ctx *c)
{
    return c->sm_count * 8;
}

static int cross_mapped(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    uint64_t t = bench_now_ns();
    if (dir == H2D)
        CK_CUDA(row, (cudaError_t)bench_kernel_read(b->mapped_dev, b->bytes, blocks(c), c->stream));
    else
        CK_CUDA(row, (cudaError_t)bench_kernel_write(b->mapped_dev, b->bytes, blocks(c), c->stream));
    CK_CUDA(row, cudaStreamSynchronize(c->stream));
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

/* Managed pages where a crossing starts: on the host, written by it (H2D), or on the device,
 * written by a kernel (D2H). */
static int managed_start(bench_ctx *c, bench_row *row, const buffers *b, int dir)
{
    if (dir == H2D) {
        CK_GPUMEM(row, gpumem_prefetch(b->managed, b->bytes, GPUMEM_HOST, c->stream));
        CK_CUDA(row, cudaStreamSynchronize(c->stream));
        memset(b->managed, 1, b->bytes);
    } else {
        CK_GPUMEM(row, gpumem_prefetch(b->managed, b->bytes, c->device, c->stream));
        CK_CUDA(row, (cudaError_t)bench_kernel_write(b->managed, b->bytes, blocks(c), c->stream));
        CK_CUDA(row, cudaStreamSynchronize(c->stream));
    }
    return 0;
}

static int cross_managed(bench_ctx *c, bench_row *row, const buffers *b, int dir, int prefetch,
                         double *ns)
{
    if (managed_start(c, row, b, dir) != 0)
        return -1;
    uint64_t t = bench_now_ns();
    if (dir == H2D) {
        if (prefetch)
            CK_GPUMEM(row, gpumem_prefetch(b->managed, b->bytes, c->device, c->stream));
        CK_CUDA(row, (cudaError_t)bench_kernel_read(b->managed, b->bytes, blocks(c), c->stream));
        CK_CUDA(row, cudaStreamSynchronize(c->stream));
    } else {
        if (prefetch) {
            CK_GPUMEM(row, gpumem_prefetch(b->managed, b->bytes, GPUMEM_HOST, c->stream));
            CK_CUDA(row, cudaStreamSynchronize(c->stream));
        }
        touch_pages(b->managed, b->bytes);
    }
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

static int cross_first_touch(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    return cross_managed(c, row, b, dir, 0, ns);
}

static int cross_prefetched(bench_ctx *c, bench_row *row, const buffers *b, int dir, double *ns)
{
    return cross_managed(c, row, b, dir, 1, ns);
}
#define KERNEL_PATH(fn) fn
#else
/* Built without nvcc: these rows say so and are never measured. */
#define KERNEL_PATH(fn) NULL
#endif

static const copy_path paths[] = {
    {"pageable", "pageable (malloc), cudaMemcpy", cross_pageable, 0, 0},
    {"pinned", "pinned (cudaMallocHost)", cross_pinned, 0, 0},
    {"write_combined", "write-combined pinned", cross_wc, 0, 0},
    {"mapped", "mapped zero-copy, kernel access", KERNEL_PATH(cross_mapped), 1, 0},
    {"managed_first_touch", "managed, first touch (faults)", KERNEL_PATH(cross_first_touch), 1, 1},
    {"managed_prefetch", "managed, gpumem_prefetch first", KERNEL_PATH(cross_prefetched), 1, 1},
    {"gpumem_copy", "gpumem_copy (pageable)", cross_staged, 0, 0},
    {"gpumem_copy_async", "gpumem_copy_async (pageable)", cross_staged_async, 0, 0},
};
enum { NPATHS = sizeof paths / sizeof paths[0] };

int bench_copy_steps(const bench_ctx *c)
{
    (void)c;
    return 2 * NPATHS;
}

static void buffers_free(buffers *b)
{
    gpumem_free(b->dev);
    free(b->pageable);
    gpumem_free(b->pinned);
    gpumem_free(b->wc);
    gpumem_free(b->mapped);
    gpumem_free(b->managed);
    memset(b, 0, sizeof *b);
}

/* Returns 0, or the status of what failed (a gpumem status or a cudaError_t, as bench_fail()
 * takes it); on failure nothing is left allocated. */
static int buffers_make(bench_ctx *c, buffers *b)
{
    size_t n = c->report->copy_bytes;
    memset(b, 0, sizeof *b);
    b->bytes = n;
    /* Each call only once the one before succeeded, so that gpumem_last_error() is the
     * failed call's: the record is overwritten by the thread's next gpumem call. */
    b->dev = gpumem_device_alloc(1, n);
    b->pinned = b->dev ? gpumem_pinned_alloc(1, n) : NULL;
    b->wc = b->pinned ? gpumem_host_alloc(1, n, GPUMEM_HOST_WRITE_COMBINED) : NULL;
    b->mapped = b->wc ? gpumem_host_alloc(1, n, GPUMEM_HOST_MAPPED) : NULL;
    b->mapped_dev = b->mapped ? gpumem_device_ptr(b->mapped) : NULL;
    if (b->mapped_dev && c->managed_ok)
        b->managed = gpumem_managed_alloc(1, n, GPUMEM_ATTACH_GLOBAL);
    if (!b->mapped_dev || (c->managed_ok && !b->managed)) {
        int status = gpumem_last_error()->code;
        buffers_free(b);
        return status != GPUMEM_OK ? status : GPUMEM_ENOMEM; /* never 0: that is success */
    }
    b->pageable = malloc(n);
    if (!b->pageable) {
        buffers_free(b);
        return GPUMEM_ENOMEM;
    }
    /* Every host page exists before the first copy: first-use faults are not the link's. */
    memset(b->pageable, 1, n);
    memset(b->pinned, 1, n);
    memset(b->wc, 1, n);
    memset(b->mapped, 1, n);
    cudaError_t e = cudaMemset(b->dev, 1, n);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        buffers_free(b);
        return (int)e;
    }
    return 0;
}

/* While copies are in flight, the link runs at its working speed: ask NVML then. */
static void read_busy_link(bench_ctx *c, bench_row *row, const buffers *b)
{
    for (int i = 0; i < 8; i++)
        if (cudaMemcpyAsync(b->dev, b->pinned, b->bytes, cudaMemcpyHostToDevice, c->stream) !=
            cudaSuccess)
            break;
    bench_link_busy(&c->report->link);
    cudaError_t e = cudaStreamSynchronize(c->stream);
    if (e != cudaSuccess)
        bench_fail(c, row, "cudaStreamSynchronize", (int)e);
}

static void measure(bench_ctx *c, const copy_path *p, bench_row *row, const buffers *b, int dir)
{
    if (row->note[0])
        return; /* the other direction failed already */
    double v[64];
    int n = 0;
    /* One crossing first, not counted: first use of a path costs more. */
    if (p->cross(c, row, b, dir, &v[0]) != 0)
        return;
    uint64_t t0 = bench_now_ns();
    while (n < (int)(sizeof v / sizeof v[0]) && bench_more(c, n, t0)) {
        if (p->cross(c, row, b, dir, &v[n]) != 0)
            return;
        n++;
    }
    double med = bench_median(v, n);
    row->value[dir] = med > 0.0 ? (double)b->bytes / med : BENCH_NOT_MEASURED;
    row->samples[dir] = n;
}

void bench_copy_run(bench_ctx *c)
{
    buffers b;
    char size[32], what[128];
    gpumem_format_bytes(c->report->copy_bytes, size, sizeof size);
    int buffers_status = buffers_make(c, &b);
    for (int i = 0; i < NPATHS; i++) {
        const copy_path *p = &paths[i];
        bench_row *row = bench_row_add(c->report, BENCH_COPY, p->key, p->label);
        if (!row)
            break; /* a full table: the buffers are still freed below */
        if (buffers_status != 0) {
            bench_fail(c, row, "allocating and filling the buffers", buffers_status);
        } else if (p->needs_kernels && !c->have_kernels) {
            snprintf(row->note, sizeof row->note, "not measured: built without nvcc (it needs a kernel)");
        } else if (p->needs_managed && !c->managed_ok) {
            snprintf(row->note, sizeof row->note,
                     "not measured: the device has no concurrent managed access, so pages do "
                     "not migrate on faults");
        }
        for (int dir = H2D; dir <= D2H; dir++) {
            snprintf(what, sizeof what, "%s %s %s", p->label, dir_name[dir], size);
            bench_progress(c, what);
            measure(c, p, row, &b, dir);
        }
        if (buffers_status == 0 && strcmp(p->key, "pinned") == 0)
            read_busy_link(c, row, &b);
    }
    if (buffers_status == 0)
        buffers_free(&b);
}

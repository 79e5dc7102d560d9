/* `gpumem bench`: what crosses between devices, on a machine with several.
 *
 * Peer copies: for every ordered pair of the first BENCH_MAX_DEVICES devices, peer_bytes from
 * one device's memory to the other's, by the backend's cuMemcpyPeerAsync (what
 * cudaMemcpyPeer does: CUDA alone) and by gpumem_copy (gpumem's lookup of both ends, then a
 * peer copy, or its own staging through pinned memory where the devices cannot reach each
 * other). Each twice: with peer access off, as a process starts, and on
 * (cudaDeviceEnablePeerAccess both ways), since CUDA copies without it through the host
 * rather than over the devices' own link. Each device's pool: gpumem_pool_alloc +
 * gpumem_free_async with the device current, and, for the devices after the first, with
 * device 0 current (every call then switches context and back).
 *
 * Everything here goes through gpumem and its backend, so that the section runs on the
 * simulated devices too (GPUMEM_BACKEND=sim GPUMEM_SIM_DEVICES=N): their figures are host
 * memcpy's, but the rows, their notes and the JSON are the real run's. The CUDA runtime is
 * called only on a GPU, to wait for the device at the end of a pool's batch. */
// gpumem-lint: ignore-file[GM005] measuring allocation in a loop is the point
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench.h"
#include "gpumem.h"
#include "peer.h"

enum { ACCESS_OFF, ACCESS_ON };
enum { RAW, GPUMEM };
#define POOL_INNER 1000 /* pairs a pool sample times, as in alloc.c */

typedef struct dev_info {
    char bus[32];
    int cc_major, cc_minor;
} dev_info;

static int measured(const bench_ctx *c)
{
    return c->report->ndev < BENCH_MAX_DEVICES ? c->report->ndev : BENCH_MAX_DEVICES;
}

int bench_devices_steps(const bench_ctx *c)
{
    int n = measured(c);
    if (n < 2)
        return 0;
    return n * (n - 1) * 4 + (2 * n - 1);
}

/* ---- peer copies ---- */

/* One copy of @row's pair by @how; *ns is its time. Returns 0, or -1 with the note set. */
static int cross(bench_ctx *c, bench_row *row, int how, void *const *buf, double *ns)
{
    int src = row->device, dst = row->peer;
    size_t n = c->report->peer_bytes;
    uint64_t t = bench_now_ns();
    if (how == RAW) {
        int err = gpumem__peer_copy(buf[dst], dst, buf[src], src, n);
        if (err)
            return bench_fail(c, row, "cuMemcpyPeerAsync", err);
    } else {
        int st = gpumem_copy(buf[dst], buf[src], n);
        if (st != GPUMEM_OK)
            return bench_fail(c, row, "gpumem_copy", st);
    }
    *ns = (double)(bench_now_ns() - t);
    return 0;
}

static void measure_peer(bench_ctx *c, bench_row *row, int how, int access, void *const *buf)
{
    double v[64];
    int n = 0;
    if (row->note[0] || cross(c, row, how, buf, &v[0]) != 0) /* first use: not counted */
        return;
    uint64_t t0 = bench_now_ns();
    while (n < (int)(sizeof v / sizeof v[0]) && bench_more(c, n, t0)) {
        if (cross(c, row, how, buf, &v[n]) != 0)
            return;
        n++;
    }
    double med = bench_median(v, n);
    row->value[access] = med > 0.0 ? (double)c->report->peer_bytes / med : BENCH_NOT_MEASURED;
    row->samples[access] = n;
}

/* Peer access of every ordered pair of the first @n devices on or off. Where the devices
 * cannot reach each other CUDA refuses it, and raw_skip() says so in their rows. */
static void set_access(int on, int n)
{
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b) /* "enabled already" and "not enabled" are the answers of a no-op */
                (void)gpumem__peer_access(a, b, on);
}

/* Why the @access column of a raw pair is not measured, or NULL when it is. */
static const char *raw_skip(const bench_ctx *c, int can, int access)
{
    if (can)
        return NULL;
    if (access == ACCESS_ON)
        return "not measured with peer access on: the devices cannot reach each other's memory "
               "(cuDeviceCanAccessPeer)";
    return c->sim ? "not measured: the simulated devices refuse a peer copy without peer access "
                    "(GPUMEM_SIM_PEER_ACCESS=0), where CUDA stages it through the host"
                  : NULL;
}

static void peer_rows(bench_ctx *c, int n, void *const *buf, bench_row **rows)
{
    char what[160], size[32];
    gpumem_format_bytes(c->report->peer_bytes, size, sizeof size);
    for (int access = ACCESS_OFF; access <= ACCESS_ON; access++) {
        set_access(access == ACCESS_ON, n);
        for (int k = 0, a = 0; a < n; a++) {
            for (int b = 0; b < n; b++) {
                if (a == b)
                    continue;
                int can = 0;
                (void)gpumem_device_can_access_peer(b, a, &can);
                for (int how = RAW; how <= GPUMEM; how++, k++) {
                    bench_row *row = rows[k];
                    if (!row)
                        continue;
                    snprintf(what, sizeof what, "%s %d -> %d, peer access %s, %s", row->label, a,
                             b, access ? "on" : "off", size);
                    bench_progress(c, what);
                    const char *skip = how == RAW ? raw_skip(c, can, access) : NULL;
                    if (skip && !row->note[0])
                        snprintf(row->note, sizeof row->note, "%s", skip);
                    else if (!skip)
                        measure_peer(c, row, how, access, buf);
                }
            }
        }
    }
    set_access(0, n); /* as the process started */
}

/* ---- each device's pool ---- */

/* The stream-ordered releases of a batch are done once the device is: waited for on a GPU. */
static int device_done(bench_ctx *c, bench_row *row, int device)
{
    if (c->sim)
        return 0;
    int cur = 0;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess)
        e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = cudaSetDevice(cur);
    return e == cudaSuccess ? 0 : bench_fail(c, row, "cudaDeviceSynchronize", (int)e);
}

static int pool_pairs(bench_ctx *c, bench_row *row, gpumem_pool *pool, size_t bytes, int n)
{
    for (int i = 0; i < n; i++) {
        void *p = gpumem_pool_alloc(pool, 1, bytes, NULL);
        if (!p)
            return bench_fail(c, row, "gpumem_pool_alloc", gpumem_last_error()->code);
        int st = gpumem_free_async(p, NULL);
        if (st != GPUMEM_OK)
            return bench_fail(c, row, "gpumem_free_async", st);
    }
    return device_done(c, row, row->device);
}

/* @row's device's pool, with device @current current. */
static void measure_pool(bench_ctx *c, bench_row *row, int current)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, row->device, NULL);
    if (!pool) {
        bench_fail(c, row, "gpumem_pool_create", gpumem_last_error()->code);
        return;
    }
    int st = gpumem_device_set(current);
    for (int s = 0; s < 2 && st == GPUMEM_OK && !row->note[0]; s++) {
        size_t bytes = c->report->alloc_bytes[s];
        double v[64];
        int n = 0;
        if (pool_pairs(c, row, pool, bytes, 1) != 0) /* first use fills the cache */
            break;
        uint64_t t0 = bench_now_ns();
        while (n < (int)(sizeof v / sizeof v[0]) && bench_more(c, n, t0)) {
            uint64_t t = bench_now_ns();
            if (pool_pairs(c, row, pool, bytes, POOL_INNER) != 0)
                break;
            v[n++] = (double)(bench_now_ns() - t) / POOL_INNER;
        }
        if (row->note[0])
            break;
        row->value[s] = bench_median(v, n);
        row->samples[s] = n;
    }
    if (st != GPUMEM_OK)
        bench_fail(c, row, "gpumem_device_set", st);
    st = gpumem_pool_destroy(pool);
    if (st != GPUMEM_OK)
        bench_fail(c, row, "gpumem_pool_destroy", st);
}

static void pool_rows(bench_ctx *c, int n)
{
    char what[160], a[32], b[32];
    for (int d = 0; d < n; d++) {
        for (int other = 0; other < 2; other++) {
            if (other && d == 0)
                continue;
            bench_row *row = bench_row_add(c->report, BENCH_DEVICE_POOL,
                                           other ? "pool_device_other_current" : "pool_device",
                                           other ? "the same, device 0 current"
                                                 : "gpumem device pool");
            if (!row)
                return;
            row->device = d;
            row->vs = other ? "pool_device" : NULL;
            snprintf(what, sizeof what, "device %d: %s, %s and %s", d, row->label,
                     gpumem_format_bytes(c->report->alloc_bytes[0], a, sizeof a),
                     gpumem_format_bytes(c->report->alloc_bytes[1], b, sizeof b));
            bench_progress(c, what);
            measure_pool(c, row, other ? 0 : d);
        }
    }
    (void)gpumem_device_set(c->device);
}

/* ---- the section ---- */

/* The bus id and compute capability of each device, and what joins each ordered pair. */
static int devices_describe(bench_ctx *c, int n, dev_info *info)
{
    bench_report *r = c->report;
    for (int d = 0; d < n; d++) {
        gpumem_device_info gi;
        if (gpumem_device_get(d, &gi) != GPUMEM_OK)
            return -1;
        info[d].cc_major = gi.cc_major;
        info[d].cc_minor = gi.cc_minor;
        if (!c->sim && cudaDeviceGetPCIBusId(info[d].bus, (int)sizeof info[d].bus, d) != cudaSuccess)
            info[d].bus[0] = '\0';
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            if (a == b || r->npairs >= BENCH_MAX_PAIRS)
                continue;
            bench_pair_link *p = &r->pairs[r->npairs++];
            memset(p, 0, sizeof *p);
            p->src = a;
            p->dst = b;
            if (c->sim)
                snprintf(p->why, sizeof p->why, "simulated devices");
            else if (!info[a].bus[0] || !info[b].bus[0])
                snprintf(p->why, sizeof p->why, "CUDA gave no PCI bus id");
            else
                bench_link_pair(info[a].bus, info[b].bus, info[a].cc_major, info[a].cc_minor, p);
        }
    }
    return 0;
}

/* One buffer of peer_bytes on each device, written once (every page exists before the first
 * copy). Returns 0, or a gpumem status with what was made released. */
static int buffers_make(bench_ctx *c, int n, void **buf)
{
    size_t bytes = c->report->peer_bytes;
    unsigned char *host = malloc(bytes);
    int st = host ? GPUMEM_OK : GPUMEM_ENOMEM;
    if (host)
        memset(host, 1, bytes);
    for (int d = 0; d < n && st == GPUMEM_OK; d++) {
        st = gpumem_device_set(d);
        buf[d] = st == GPUMEM_OK ? gpumem_device_alloc(1, bytes) : NULL;
        if (st == GPUMEM_OK && !buf[d])
            st = gpumem_last_error()->code;
        if (st == GPUMEM_OK)
            st = gpumem_copy(buf[d], host, bytes);
    }
    free(host);
    (void)gpumem_device_set(c->device);
    if (st != GPUMEM_OK)
        for (int d = 0; d < n; d++)
            gpumem_free(buf[d]);
    return st;
}

void bench_devices_run(bench_ctx *c)
{
    bench_report *r = c->report;
    int n = measured(c);
    r->ndev_measured = n < 2 ? 0 : n;
    if (n < 2) {
        snprintf(r->devices_note, sizeof r->devices_note,
                 "not measured: one device here (peer copies and each device's pool need two)");
        return;
    }
    if (r->ndev > n)
        snprintf(r->devices_note, sizeof r->devices_note,
                 "the first %d of %d devices measured", n, r->ndev);
    dev_info info[BENCH_MAX_DEVICES];
    memset(info, 0, sizeof info);
    void *buf[BENCH_MAX_DEVICES] = {NULL};
    bench_row *rows[2 * BENCH_MAX_PAIRS] = {NULL};
    for (int k = 0, a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            for (int how = RAW; a != b && how <= GPUMEM; how++, k++) {
                rows[k] = bench_row_add(r, BENCH_PEER, how == RAW ? "peer_copy" : "gpumem_copy",
                                        how == RAW ? "cuMemcpyPeer" : "gpumem_copy");
                if (rows[k]) {
                    rows[k]->device = a;
                    rows[k]->peer = b;
                }
            }
    int st = devices_describe(c, n, info) != 0 ? gpumem_last_error()->code
                                               : buffers_make(c, n, buf);
    if (st != GPUMEM_OK) {
        for (int k = 0; k < n * (n - 1) * 2; k++)
            if (rows[k])
                bench_fail(c, rows[k], "allocating and filling a buffer on each device", st);
        c->step += n * (n - 1) * 4;
    } else {
        peer_rows(c, n, buf, rows);
        for (int d = 0; d < n; d++)
            gpumem_free(buf[d]);
    }
    pool_rows(c, n);
}

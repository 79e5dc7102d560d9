/* `gpumem bench`: the host's own access to pinned and to write-combined memory.
 *
 * Write-combined memory is for the host to write and the device to read: its writes bypass the
 * cache in combining buffers, and its reads are uncached. This shows what that costs here (in
 * some virtual machines the two kinds do not differ). Reading it is the point, so the lint rule
 * against host reads of write-combined memory (GM007) is off for the file. */
// gpumem-lint: ignore-file[GM007] measuring the host's reads of write-combined memory
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "gpumem.h"

static const struct {
    const char *key;
    const char *label;
    unsigned flags;
} kinds[] = {
    {"pinned", "pinned (cudaMallocHost)", 0},
    {"write_combined", "write-combined pinned", GPUMEM_HOST_WRITE_COMBINED},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

int bench_host_steps(const bench_ctx *c)
{
    (void)c;
    return NKINDS;
}

/* A sum of every 64-bit word (kept in bench_sink, so that the loads stay). */
static uint64_t sum_words(const void *p, size_t bytes)
{
    const uint64_t *w = p;
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes / 8; i++)
        sum += w[i];
    return sum;
}

static void measure(bench_ctx *c, void *p, size_t bytes, bench_row *row)
{
    double w[64], r[64];
    int nw = 0, nr = 0;
    memset(p, 0, bytes); /* first touch, not counted */
    uint64_t t0 = bench_now_ns();
    while (nw < 64 && bench_more(c, nw, t0)) {
        uint64_t t = bench_now_ns();
        memset(p, nw + 1, bytes);
        w[nw++] = (double)(bench_now_ns() - t);
    }
    t0 = bench_now_ns();
    while (nr < 64 && bench_more(c, nr, t0)) {
        uint64_t t = bench_now_ns();
        bench_sink = sum_words(p, bytes);
        r[nr++] = (double)(bench_now_ns() - t);
    }
    row->value[0] = (double)bytes / bench_median(w, nw);
    row->value[1] = (double)bytes / bench_median(r, nr);
    row->samples[0] = nw;
    row->samples[1] = nr;
}

void bench_host_run(bench_ctx *c)
{
    size_t bytes = c->report->host_bytes;
    char size[32], what[128];
    gpumem_format_bytes(bytes, size, sizeof size);
    for (int i = 0; i < NKINDS; i++) {
        snprintf(what, sizeof what, "host writes and reads, %s %s", kinds[i].label, size);
        bench_progress(c, what);
        bench_row *row = bench_row_add(c->report, BENCH_HOST, kinds[i].key, kinds[i].label);
        if (!row)
            return;
        void *p = kinds[i].flags ? gpumem_host_alloc(1, bytes, kinds[i].flags)
                                 : gpumem_pinned_alloc(1, bytes);
        if (!p) {
            bench_fail(c, row, kinds[i].flags ? "gpumem_host_alloc" : "gpumem_pinned_alloc",
                       gpumem_last_error()->code);
            continue;
        }
        measure(c, p, bytes, row);
        gpumem_free(p);
    }
}

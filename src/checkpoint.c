/* Checkpoints: the seed's cudaMemGetInfo method made precise. A checkpoint is the next
 * sequence number plus device memory as CUDA and gpumem see it; the difference later is what
 * gpumem allocated since and still holds, by call site, and what device memory went
 * elsewhere (another library, a raw cudaMalloc). */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "trace.h"

static uint64_t device_resident_bytes(void)
{
    gpumem_live live;
    gpumem__reg_live(&live);
    return live.bytes[GPUMEM_KIND_DEVICE] + live.bytes[GPUMEM_KIND_DEVICE_ASYNC];
}

/* cudaMemGetInfo of the caller's current device; 0 when it cannot be read. */
static int read_device(int *dev, size_t *free_bytes, size_t *total)
{
    return gpumem__backend_try() && gpumem__be->current_device(dev) == 0 &&
           gpumem__be->mem_info(*dev, free_bytes, total) == 0;
}

gpumem_checkpoint_t gpumem_checkpoint(void)
{
    gpumem_checkpoint_t cp = {0, 0, 0, 0, -1};
    gpumem__init_once();
    /* Device memory first, then gpumem's side, so that an allocation racing with this call is
     * never counted as gpumem's without its device memory. */
    int dev = -1;
    if (!read_device(&dev, &cp.device_free, &cp.device_total))
        dev = -1;
    cp.device = dev;
    cp.seq = gpumem__seq_next() - 1;
    cp.device_bytes = device_resident_bytes();
    gpumem__trace_checkpoint(cp.seq);
    return cp;
}

int gpumem_checkpoint_diff(const gpumem_checkpoint_t *cp, FILE *out,
                           gpumem_checkpoint_diff_t *diff)
{
    if (!cp)
        return GPUMEM_EINVAL;
    gpumem_checkpoint_diff_t d = {0, 0, 0, 0, 0, 0, 0};
    gpumem__group *g = NULL;
    long n = gpumem__group_live(cp->seq, 0, &g, NULL);
    if (n < 0)
        return GPUMEM_ENOMEM;
    for (long i = 0; i < n; i++) {
        d.count += g[i].count;
        d.bytes += g[i].bytes;
    }
    d.sites = (uint64_t)n;
    int dev = -1;
    size_t free_now = 0, total = 0;
    if (cp->device >= 0 && read_device(&dev, &free_now, &total) && dev == cp->device) {
        d.device_known = 1;
        d.device_used = (int64_t)cp->device_free - (int64_t)free_now;
        d.gpumem_device = (int64_t)device_resident_bytes() - (int64_t)cp->device_bytes;
        d.unattributed = d.device_used - d.gpumem_device;
    }
    if (out) {
        char a[32], b[32], c[32];
        fprintf(out, "gpumem checkpoint: %llu allocation%s (%s) made since the checkpoint are "
                     "still live%s\n",
                (unsigned long long)d.count, d.count == 1 ? "" : "s",
                gpumem_format_bytes(d.bytes, a, sizeof a), n ? ":" : "");
        for (long i = 0; i < n; i++) {
            char where[256];
            fprintf(out, "  %10s in %llu %s allocation%s at %s\n",
                    gpumem_format_bytes(g[i].bytes, a, sizeof a),
                    (unsigned long long)g[i].count, gpumem_kind_name(g[i].kind),
                    g[i].count == 1 ? "" : "s", gpumem__site_str(g[i].site, where, sizeof where));
        }
        if (d.device_known) {
            int64_t u = d.device_used, gm = d.gpumem_device, un = d.unattributed;
            fprintf(out,
                    "  device %d: used memory %s%s; gpumem's device memory %s%s; "
                    "unattributed %s%s\n",
                    cp->device, u < 0 ? "-" : "+",
                    gpumem_format_bytes((uint64_t)(u < 0 ? -u : u), a, sizeof a),
                    gm < 0 ? "-" : "+",
                    gpumem_format_bytes((uint64_t)(gm < 0 ? -gm : gm), b, sizeof b),
                    un < 0 ? "-" : "+",
                    gpumem_format_bytes((uint64_t)(un < 0 ? -un : un), c, sizeof c));
        } else {
            fprintf(out, "  device memory: not known (no usable device, or the current device "
                         "changed since the checkpoint)\n");
        }
    }
    free(g);
    if (diff)
        *diff = d;
    return GPUMEM_OK;
}

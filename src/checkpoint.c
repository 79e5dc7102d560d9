/* Checkpoints: the seed's cudaMemGetInfo method made precise. A checkpoint is the next
 * sequence number plus device memory as CUDA and gpumem see it; the difference later is what
 * gpumem allocated since and still holds, by call site, and what device memory went
 * elsewhere (another library, a raw cudaMalloc). Each checkpoint is of one device: the caller's
 * current one, or the one named; gpumem's part is its memory on that device only, wherever the
 * allocating thread's current device was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "trace.h"

static int add_resident(const gpumem__rec *r, void *arg)
{
    uint64_t *bytes = arg;
    if (r->kind == GPUMEM_KIND_DEVICE || r->kind == GPUMEM_KIND_DEVICE_ASYNC)
        bytes[gpumem__dev_slot(r->device)] += r->bytes;
    return 0;
}

void gpumem__device_resident(uint64_t bytes[GPUMEM_STATS_DEVICES])
{
    memset(bytes, 0, sizeof(uint64_t) * GPUMEM_STATS_DEVICES);
    gpumem__reg_foreach(add_resident, bytes, 0);
}

/* gpumem's device-resident bytes live on device dev: what cudaMemGetInfo of that device can
 * attribute to gpumem, whichever device was current when they were allocated. */
static uint64_t device_resident_bytes(int dev)
{
    uint64_t bytes[GPUMEM_STATS_DEVICES];
    gpumem__device_resident(bytes);
    return bytes[gpumem__dev_slot(dev)];
}

/* A checkpoint of device dev, or of the caller's current device. */
static gpumem_checkpoint_t checkpoint_of(int dev, int current)
{
    gpumem_checkpoint_t cp = {0, 0, 0, 0, -1};
    gpumem__init_once();
    /* Device memory first, then gpumem's side, so that an allocation racing with this call is
     * never counted as gpumem's without its device memory. */
    if (!gpumem__backend_try() || (current && gpumem__be->current_device(&dev) != 0) || dev < 0 ||
        gpumem__be->mem_info(dev, &cp.device_free, &cp.device_total) != 0)
        dev = -1;
    cp.device = dev;
    cp.seq = gpumem__seq_checkpoint() - 1;
    cp.device_bytes = dev >= 0 ? device_resident_bytes(dev) : 0;
    gpumem__trace_checkpoint(cp.seq);
    return cp;
}

gpumem_checkpoint_t gpumem_checkpoint(void)
{
    return checkpoint_of(-1, 1);
}

gpumem_checkpoint_t gpumem_checkpoint_device(int device)
{
    return checkpoint_of(device, 0);
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
    size_t free_now = 0, total = 0;
    if (cp->device >= 0 && gpumem__backend_try() &&
        gpumem__be->mem_info(cp->device, &free_now, &total) == 0) {
        d.device_known = 1;
        d.device_used = (int64_t)cp->device_free - (int64_t)free_now;
        d.gpumem_device = (int64_t)device_resident_bytes(cp->device) - (int64_t)cp->device_bytes;
        d.unattributed = d.device_used - d.gpumem_device;
    }
    if (out) {
        char a[32], b[32], c[32];
        fprintf(out, "gpumem checkpoint: %llu allocation%s (%s) made since the checkpoint are "
                     "still live%s\n",
                (unsigned long long)d.count, d.count == 1 ? "" : "s",
                gpumem_format_bytes(d.bytes, a, sizeof a), n ? ":" : "");
        int several = 0; /* devices: with more than one, each line names its own */
        for (long i = 1; i < n; i++)
            several |= g[i].device != g[0].device;
        for (long i = 0; i < n; i++) {
            char where[256], on[32] = "";
            if (several)
                snprintf(on, sizeof on, " on device %d", g[i].device);
            fprintf(out, "  %10s in %llu %s allocation%s%s at %s\n",
                    gpumem_format_bytes(g[i].bytes, a, sizeof a),
                    (unsigned long long)g[i].count, gpumem_kind_name(g[i].kind),
                    g[i].count == 1 ? "" : "s", on,
                    gpumem__site_str(g[i].site, where, sizeof where));
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
            fprintf(out, "  device memory: not known (no usable device, or the device could not "
                         "be read)\n");
        }
    }
    free(g);
    if (diff)
        *diff = d; /* right also when writing failed: only the text is incomplete */
    return out ? gpumem__err_stream(out, 0, "gpumem_checkpoint_diff") : GPUMEM_OK;
}

/* Out-of-memory context: the device's free and total memory (when the backend is up), what
 * gpumem holds by kind and, when more than one device holds some, its device memory on each,
 * and the five call sites that hold the most. Grouping the sites takes host memory; without
 * it the list is left out and the rest still says what matters. */
void gpumem__err_oom(gpumem_error *e, int device)
{
    char a[32], b[32];
    int dev = device;
    if (gpumem__backend_try() && (dev >= 0 || gpumem__be->current_device(&dev) == 0) &&
        gpumem__be->mem_info(dev, &e->device_free, &e->device_total) == 0)
        gpumem__err_append(e, "\n    device %d: %s free of %s", dev,
                           gpumem_format_bytes(e->device_free, a, sizeof a),
                           gpumem_format_bytes(e->device_total, b, sizeof b));
    uint64_t on[GPUMEM_STATS_DEVICES];
    gpumem__device_resident(on);
    int holders = 0;
    for (int d = 0; d < GPUMEM_STATS_DEVICES; d++)
        holders += on[d] != 0;
    for (int d = 0, shown = 0; holders > 1 && d < GPUMEM_STATS_DEVICES; d++) {
        if (!on[d])
            continue;
        gpumem__err_append(e, "%sdevice %d%s %s", shown++ ? ", " : "\n    gpumem's device memory by device: ",
                           d, d == GPUMEM_STATS_DEVICES - 1 ? "+" : "",
                           gpumem_format_bytes(on[d], a, sizeof a));
    }
    gpumem_live live;
    gpumem__reg_live(&live);
    e->live_bytes = live.bytes[0];
    gpumem__err_append(e, "\n    live in gpumem: %s", gpumem_format_bytes(live.bytes[0], a, sizeof a));
    const char *sep = " (";
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        if (!live.count[k])
            continue;
        gpumem__err_append(e, "%s%s %s", sep, gpumem_format_bytes(live.bytes[k], a, sizeof a),
                           gpumem_kind_name(k));
        sep = ", ";
    }
    if (*sep == ',')
        gpumem__err_append(e, ")");
    /* Who holds it: the five call sites with the most live bytes. */
    gpumem__group *g = NULL;
    long n = live.count[0] ? gpumem__group_live(0, 0, &g, NULL) : 0;
    for (long i = 0; i < n && i < 5; i++) {
        char where[256];
        gpumem__err_append(e, "%s%s (%s, %llu)", i ? ", " : "\n    largest holders: ",
                           gpumem__site_str(g[i].site, where, sizeof where),
                           gpumem_format_bytes(g[i].bytes, a, sizeof a),
                           (unsigned long long)g[i].count);
    }
    if (n > 5)
        gpumem__err_append(e, ", ...");
    free(g);
}

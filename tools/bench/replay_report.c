/* `gpumem bench --replay`: the table and the JSON of a finished replay. Pure: no CUDA;
 * tests/bench/ checks them on made-up results. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "gpumem.h"
#include "replay.h"

double replay_fragmentation(const replay_result *r)
{
    if (!r->peak_reserved || r->requested_at_peak >= r->peak_reserved)
        return 0.0;
    return (double)(r->peak_reserved - r->requested_at_peak) / (double)r->peak_reserved;
}

int replay_print_table(FILE *out, const replay_report *r)
{
    char a[32], b[32], c[32];
    fprintf(out, "replay of %s (%s): %zu operations, %zu allocations on %d stream%s, peak "
                 "requested %s",
            r->path, r->backend, r->ops, r->allocs, r->nstreams, r->nstreams == 1 ? "" : "s",
            gpumem_format_bytes(r->peak_requested, a, sizeof a));
    if (r->skipped)
        fprintf(out, "; %zu releases of allocations made before the recording skipped",
                r->skipped);
    if (r->npids > 1 || r->ndevices > 1)
        fprintf(out, "; the allocations of %d processes on %d devices, replayed as one "
                     "program's on one device", r->npids > 1 ? r->npids : 1,
                r->ndevices > 1 ? r->ndevices : 1);
    if (r->limit)
        fprintf(out, "; limit %s", gpumem_format_bytes(r->limit, b, sizeof b));
    if (r->cold)
        fprintf(out, "; time/op with the CPU's caches made cold (%s written before each "
                     "operation)", gpumem_format_bytes(r->cold, b, sizeof b));
    fprintf(out, "\n%-40s %14s %9s %13s %10s %10s %11s %10s  %s\n", "allocator", "peak reserved",
            "x request", "fragmentation", "time/op", "CUDA asks", "pages moved", "CUDA/op",
            "out of memory");
    for (int i = 0; i < r->nresults; i++) {
        const replay_result *x = &r->results[i];
        if (!x->ran) {
            fprintf(out, "%-40s %14s  (%s)\n", x->label, "-", x->note);
            continue;
        }
        char oom[48] = "no";
        if (x->oom_at >= 0)
            snprintf(oom, sizeof oom, "at operation %lld", x->oom_at);
        double ratio = r->peak_requested ? (double)x->peak_reserved / (double)r->peak_requested
                                         : 0.0;
        char asks[24] = "-", moved[24] = "-", in_cuda[32] = "-";
        if (x->counted) {
            snprintf(asks, sizeof asks, "%" PRIu64, x->cuda_asks);
            snprintf(moved, sizeof moved, "%" PRIu64, x->pages_moved);
            bench_format_ns((double)x->cuda_ns / (double)(r->ops ? r->ops : 1), in_cuda,
                            sizeof in_cuda);
        }
        fprintf(out, "%-40s %14s %8.2fx %12.1f%% %10s %10s %11s %10s  %s\n", x->label,
                gpumem_format_bytes(x->peak_reserved, a, sizeof a), ratio,
                100.0 * replay_fragmentation(x),
                x->ns_per_op > 0 ? bench_format_ns(x->ns_per_op, c, sizeof c) : "-", asks, moved,
                in_cuda, oom);
    }
    fprintf(out, "peak reserved: the most the allocator held; x request: that over the peak "
                 "requested;\nfragmentation: the share of it that held no requested byte then; "
                 "time/op: one allocation or release;\nCUDA asks: allocations that asked CUDA "
                 "for memory or a mapping; pages moved: pages mapped\nanew where a block needed "
                 "them; CUDA/op: the time of the CUDA calls that got, mapped,\nunmapped and gave "
                 "back memory, over the operations (gpumem's pools only)\n");
    return ferror(out) ? -1 : 0;
}

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(out, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(out, "\\u%04x", *s);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

int replay_write_json(FILE *out, const replay_report *r, char *err, size_t errn)
{
    fprintf(out, "{\"replay\": ");
    json_str(out, r->path);
    fprintf(out, ", \"backend\": ");
    json_str(out, r->backend);
    fprintf(out, ", \"operations\": %zu, \"allocations\": %zu, \"skipped\": %zu, \"streams\": %d, "
                 "\"processes\": %d, \"devices\": %d, \"peak_requested\": %" PRIu64
                 ", \"limit\": %" PRIu64 ", \"cold\": %" PRIu64 ", \"allocators\": [",
            r->ops, r->allocs, r->skipped, r->nstreams, r->npids > 1 ? r->npids : 1,
            r->ndevices > 1 ? r->ndevices : 1, r->peak_requested, r->limit, r->cold);
    for (int i = 0; i < r->nresults; i++) {
        const replay_result *x = &r->results[i];
        fprintf(out, "%s\n  {\"key\": ", i ? "," : "");
        json_str(out, x->key);
        fprintf(out, ", \"label\": ");
        json_str(out, x->label);
        fprintf(out, ", \"ran\": %s", x->ran ? "true" : "false");
        if (x->ran) {
            fprintf(out, ", \"peak_reserved\": %" PRIu64 ", \"requested_at_peak\": %" PRIu64
                         ", \"fragmentation\": %.4f, \"ns_per_op\": %.1f, \"oom_at\": %lld",
                    x->peak_reserved, x->requested_at_peak, replay_fragmentation(x),
                    x->ns_per_op, x->oom_at);
            if (x->counted)
                fprintf(out, ", \"cuda_asks\": %" PRIu64 ", \"pages_moved\": %" PRIu64
                             ", \"cuda_ns\": %" PRIu64,
                        x->cuda_asks, x->pages_moved, x->cuda_ns);
        } else {
            fprintf(out, ", \"note\": ");
            json_str(out, x->note);
        }
        fputc('}', out);
    }
    fprintf(out, "]}\n");
    if (ferror(out)) {
        snprintf(err, errn, "writing failed");
        return -1;
    }
    return 0;
}

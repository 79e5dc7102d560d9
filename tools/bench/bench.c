/* `gpumem bench`: the command line and the run; the sections measure (alloc.c, copy.c, host.c,
 * devices.c) with the helpers of measure.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "../cli.h"
#include "../tool.h"
#include "bench.h"
#include "gpumem.h"
#include "replay.h"

#define BENCH_USAGE                                                                              \
    "usage: gpumem bench [--quick] [--json PATH] [--device N]\n"                                 \
    "       gpumem bench --replay FILE [--only KEYS] [--limit BYTES] [--cold BYTES]\n"         \
    "                    [--json PATH] [--device N]\n"                                          \
    "       gpumem bench --replay FILE --write-log OUT\n"

static void usage_measures(FILE *out);

static void bench_usage(FILE *out)
{
    fprintf(out,
            BENCH_USAGE
            "\n"
            "Measures, on the machine at hand, what allocation and every host-device copy path\n"
            "cost, and prints each bandwidth next to the PCIe link's limit (from NVML).\n"
            "\n"
            "  --quick      about 10x fewer repetitions and smaller sizes (seconds, not minutes)\n"
            "  --json PATH  also write every result to PATH as JSON\n"
            "  --device N   measure CUDA device N (default 0)\n"
            "  --replay FILE\n"
            "               replay the allocations FILE recorded (a trace of GPUMEM_TRACE or\n"
            "               gpumem check --trace, or a replay log, gzipped or not) into every\n"
            "               allocator here: gpumem's device pool in each design,\n"
            "               cudaMallocAsync (threshold 0 and UINT64_MAX), cudaMalloc, and\n"
            "               PyTorch's caching allocator (default and expandable segments) where\n"
            "               python3 -m gpumem.replay finds torch; per allocator: peak reserved,\n"
            "               fragmentation at that peak, time an operation, and where it ran out\n"
            "               of memory under --limit. With GPUMEM_BACKEND=sim, gpumem's pools\n"
            "               alone, on the simulated device\n"
            "  --only KEYS  with --replay: only the allocators named, by the keys of the JSON,\n"
            "               separated by commas (gpumem_vmm,torch_expandable); --help lists them\n"
            "  --limit BYTES\n"
            "               with --replay: the most each allocator may reserve (1073741824, 1GiB,\n"
            "               512MiB)\n"
            "  --cold BYTES\n"
            "               with --replay: before each timed operation, write BYTES of memory (a\n"
            "               byte a cache line), as a program's own work between allocations\n"
            "               would, and time the operations alone: what each allocator costs\n"
            "               with its data out of the CPU's caches (8MiB, about an L3's worth)\n"
            "  --write-log OUT\n"
            "               with --replay: write FILE's allocations as a replay log to OUT (about\n"
            "               a tenth of a trace's size) and replay nothing; needs no GPU\n"
            "  --help, --version\n"
            "Options take their value as --json PATH or --json=PATH.\n");
    fprintf(out, "\nAllocators of --replay, by key (--only, and the JSON's \"key\"):\n ");
    for (size_t i = 0, col = 1; replay_key(i); i++) { /* wrapped at 80 columns */
        size_t len = strlen(replay_key(i)) + 2;
        if (col + len > 80)
            col = (size_t)fprintf(out, "\n ") - 1;
        col += (size_t)fprintf(out, " %s%s", replay_key(i), replay_key(i + 1) ? "," : "");
    }
    fprintf(out, "\n");
    usage_measures(out);
}

/* What the full run measures, for --help. */
static void usage_measures(FILE *out)
{
    fprintf(out,
            "\n"
            "Allocation: one allocate + release pair, median, at 1 MiB and 64 MiB (16 MiB\n"
            "with --quick), for each kind, raw and pooled:\n"
            "  cudaMalloc + cudaFree                 device memory\n"
            "  cudaMallocManaged + cudaFree          managed memory\n"
            "  cudaMallocHost + cudaFreeHost         pinned host memory\n"
            "  cudaHostAlloc write-combined          pinned, write-combined\n"
            "  cudaHostAlloc mapped                  pinned, mapped into the device (zero-copy)\n"
            "  gpumem_device_alloc + gpumem_free     tracked device memory, no pool\n"
            "  gpumem_pinned_alloc + gpumem_free     tracked pinned memory, no pool\n"
            "  gpumem device pool                    gpumem_pool_alloc + gpumem_free_async\n"
            "  and its peers: cudaMallocAsync on the device's default pool, release threshold\n"
            "  0 (as CUDA makes it) and UINT64_MAX (as programs set it); CUB's\n"
            "  CachingDeviceAllocator (deprecated by CCCL)\n"
            "  gpumem pinned pool                    gpumem_pool_alloc + gpumem_free\n"
            "  and its peer: the CUDA host memory pool\n");
    fprintf(out,
            "\n"
            "Copies: 256 MiB (32 MiB with --quick) each way, H2D and D2H, median GB/s:\n"
            "  pageable       cudaMemcpy from and to malloc memory (CUDA stages it itself)\n"
            "  pinned         cudaMemcpyAsync from and to cudaMallocHost memory\n"
            "  write-combined cudaMemcpyAsync from and to write-combined pinned memory\n"
            "  mapped         a kernel reads (H2D) or writes (D2H) mapped host memory: no copy\n"
            "  managed, first touch\n"
            "                 H2D: a kernel reads managed memory the host wrote (pages migrate\n"
            "                 on the GPU's faults); D2H: the host touches each 4 KiB page of\n"
            "                 managed memory a kernel wrote (pages migrate on the CPU's faults)\n"
            "  managed, prefetched\n"
            "                 the same, with gpumem_prefetch before the kernel or the host\n"
            "  gpumem_copy    gpumem_copy from and to malloc memory, staged through gpumem's\n"
            "                 pinned slots (docs/copies.md)\n"
            "  gpumem_copy_async\n"
            "                 the same with gpumem_copy_async on a stream, then synchronize\n"
            "\n"
            "Host access: one thread writes (memset) and reads (a sum of 64-bit words) 256 MiB\n"
            "(32 MiB with --quick) of pinned and of write-combined memory, GB/s.\n"
            "\n"
            "Several devices (the first 8), each ordered pair: 256 MiB (32 MiB with --quick) from\n"
            "one device's memory to the other's by cuMemcpyPeer (CUDA alone) and by gpumem_copy,\n"
            "with peer access off and on (cudaDeviceEnablePeerAccess), GB/s and the share of\n"
            "their NVLink or PCIe limit; each device's pool, with the device current and with\n"
            "device 0 current. With one device, one line says so. With GPUMEM_BACKEND=sim this\n"
            "section alone runs, on the simulated devices (GPUMEM_SIM_DEVICES=N).\n"
            "\n"
            "Each bandwidth is also shown as a share of one direction of the PCIe link: rate\n"
            "times lanes times the line code (128b/130b from PCIe 3.0, 8b/10b before). DMA\n"
            "copies reach about 85-90 %% of it. docs/bench.md explains every row.\n"
            "Progress goes to stderr, the table to stdout.\n"
            "\n"
            "Exit status: 0; 1 when a measurement failed; 2 for a usage error; 77 when it\n"
            "cannot run here (no NVIDIA driver or no CUDA device; the reason is printed).\n");
}

/* A byte count: digits and an optional unit (K, M, G or T, then nothing, B or iB). */
static int parse_bytes(const char *s, uint64_t *out)
{
    static const char units[] = "KMGT";
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    if (*end) {
        const char *u = strchr(units, *end);
        if (!u)
            return -1;
        shift = 10u * (unsigned)(u - units + 1);
        end++;
        if (*end && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0)
            return -1;
    }
    if (shift && v > (UINT64_MAX >> shift))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > 1024)
        return -1;
    *out = (int)v;
    return 0;
}

/* Everything about the device the run needs, read once. */
static int device_setup(bench_ctx *c, bench_report *r)
{
    struct cudaDeviceProp prop;
    cudaError_t e = cudaSetDevice(c->device);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, c->device);
    if (e == cudaSuccess)
        e = cudaDeviceGetPCIBusId(c->pci_bus_id, (int)sizeof c->pci_bus_id, c->device);
    if (e == cudaSuccess)
        e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        fprintf(stderr, "gpumem bench: error: device %d: %s: %s\n", c->device,
                cudaGetErrorName(e), cudaGetErrorString(e));
        return -1;
    }
    snprintf(r->device_name, sizeof r->device_name, "%s", prop.name);
    r->cc_major = prop.major;
    r->cc_minor = prop.minor;
    c->sm_count = prop.multiProcessorCount;
    c->managed_ok = prop.concurrentManagedAccess;
#ifdef GPUMEM_BENCH_HAVE_KERNELS
    c->have_kernels = 1;
#endif
    return 0;
}

/* --replay: on the simulated device when GPUMEM_BACKEND=sim says so (gpumem's pools alone),
 * else on the real one. */
static int bench_replay(const char *path, const replay_opts *o)
{
    const char *be = getenv("GPUMEM_BACKEND");
    int sim = be && strcmp(be, "sim") == 0;
    if (!sim && !cli_have_driver("bench", "gpumem bench --replay needs a GPU, or "
                                          "GPUMEM_BACKEND=sim for gpumem's pools alone"))
        return CLI_EXIT_UNAVAILABLE;
    if (gpumem_backend_select(sim ? "sim" : "cuda") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        fprintf(stderr, "gpumem bench: error: gpumem cannot use the device: %s\n",
                gpumem_last_error()->message);
        return sim ? 1 : CLI_EXIT_UNAVAILABLE;
    }
    return replay_main(path, o);
}

/* The devices there are, and that --device N is one of them: 0, or the exit status. On a GPU
 * the CUDA runtime is asked; on the simulated device (GPUMEM_BACKEND=sim), gpumem. */
static int count_devices(bench_ctx *ctx, int *ndev)
{
    cudaError_t e = cudaSuccess;
    *ndev = 0;
    if (ctx->sim) {
        if (gpumem_backend_select("sim") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
            fprintf(stderr, "gpumem bench: error: the simulated device did not start: %s\n",
                    gpumem_last_error()->message);
            return 1;
        }
        *ndev = gpumem_device_count();
    } else {
        if (!cli_have_driver("bench", "gpumem bench needs a GPU to measure"))
            return CLI_EXIT_UNAVAILABLE;
        e = cudaGetDeviceCount(ndev);
    }
    if (e != cudaSuccess || *ndev == 0) {
        if (e != cudaSuccess)
            fprintf(stderr, "gpumem bench: error: no CUDA device (%s: %s); nothing to measure\n",
                    cudaGetErrorName(e), cudaGetErrorString(e));
        else
            fprintf(stderr, "gpumem bench: error: no CUDA device (the driver found none); nothing "
                            "to measure\n");
        cli_say_without_gpu();
        return CLI_EXIT_UNAVAILABLE;
    }
    if (ctx->device >= *ndev) {
        fprintf(stderr, "gpumem bench: error: no device %d: this machine has %d (0 to %d)\n",
                ctx->device, *ndev, *ndev - 1);
        return 2;
    }
    return 0;
}

/* The simulated device measures what goes through gpumem alone: the devices section. */
static int sim_setup(bench_ctx *c, bench_report *r)
{
    gpumem_device_info info;
    if (gpumem_device_get(c->device, &info) != GPUMEM_OK ||
        gpumem_device_set(c->device) != GPUMEM_OK) {
        fprintf(stderr, "gpumem bench: error: device %d: %s\n", c->device,
                gpumem_last_error()->message);
        return -1;
    }
    snprintf(r->device_name, sizeof r->device_name, "%s", info.name);
    r->cc_major = info.cc_major;
    r->cc_minor = info.cc_minor;
    snprintf(r->link.why, sizeof r->link.why, "simulated device");
    return 0;
}

static void report_start(bench_ctx *ctx, bench_report *report, int ndev)
{
    memset(report, 0, sizeof *report);
    ctx->report = report;
    report->version = gpumem_version();
    report->device = ctx->device;
    report->quick = ctx->quick;
    report->sim = ctx->sim;
    report->ndev = ndev;
    report->alloc_bytes[0] = (size_t)1 << 20;
    report->alloc_bytes[1] = ctx->quick ? (size_t)16 << 20 : (size_t)64 << 20;
    report->copy_bytes = ctx->quick ? (size_t)32 << 20 : (size_t)256 << 20;
    report->host_bytes = report->copy_bytes;
    report->peer_bytes = report->copy_bytes;
    ctx->reps = ctx->quick ? 3 : 30;
    ctx->min_reps = ctx->quick ? 1 : 3;
    ctx->budget_ns = ctx->quick ? 0.4e9 : 3e9;
}

/* Every section, on a GPU; the devices section alone on the simulated device. */
static int measure_all(bench_ctx *ctx, bench_report *report)
{
    if (ctx->sim ? sim_setup(ctx, report) != 0 : device_setup(ctx, report) != 0)
        return -1;
    if (!ctx->sim)
        bench_link_open(ctx->pci_bus_id, &report->link);
    fprintf(stderr, "gpumem bench: device %d, %s (%s), %s run\n", ctx->device,
            report->device_name, ctx->sim ? "simulated" : ctx->pci_bus_id,
            ctx->quick ? "quick" : "full");
    ctx->steps = bench_devices_steps(ctx);
    if (!ctx->sim)
        ctx->steps += bench_alloc_steps(ctx) + bench_copy_steps(ctx) + bench_host_steps(ctx);
    if (!ctx->sim) {
        bench_alloc_run(ctx);
        bench_copy_run(ctx);
        bench_host_run(ctx);
        bench_link_close();
    }
    bench_devices_run(ctx);
    if (isatty(STDERR_FILENO))
        fputc('\n', stderr);
    return 0;
}

/* The table on stdout, the JSON to @json (closed here): the exit status. */
static int report_out(bench_ctx *ctx, bench_report *report, FILE *json, const char *json_path)
{
    int status = ctx->failures ? 1 : 0;
    if (bench_print_table(stdout, report) != 0)
        status = 1;
    if (json) {
        char err[200];
        if (bench_write_json(json, report, err, sizeof err) != 0) {
            fprintf(stderr, "gpumem bench: error: %s: %s\n", json_path, err);
            status = 1;
        }
        if (fclose(json) != 0) {
            fprintf(stderr, "gpumem bench: error: %s: %s\n", json_path, strerror(errno));
            status = 1;
        }
    }
    if (ctx->failures)
        fprintf(stderr, "gpumem bench: %d measurement%s failed (see the notes in the table)\n",
                ctx->failures, ctx->failures == 1 ? "" : "s");
    if (!ctx->sim && cudaStreamDestroy(ctx->stream) != cudaSuccess)
        status = 1;
    return status;
}

static int bench_run(bench_ctx *ctx, const char *json_path)
{
    const char *be = getenv("GPUMEM_BACKEND");
    ctx->sim = be && strcmp(be, "sim") == 0;
    int ndev = 0;
    int rc = count_devices(ctx, &ndev);
    if (rc != 0)
        return rc;
    FILE *json = NULL;
    if (json_path && !(json = fopen(json_path, "w"))) {
        fprintf(stderr, "gpumem bench: error: cannot write %s: %s\n", json_path, strerror(errno));
        return 1;
    }
    /* The measurements are of real memory: the simulated device would measure host RAM. */
    if (!ctx->sim && (gpumem_backend_select("cuda") != GPUMEM_OK || gpumem_init() != GPUMEM_OK)) {
        fprintf(stderr, "gpumem bench: error: gpumem cannot use the device: %s\n",
                gpumem_last_error()->message);
        if (json)
            fclose(json);
        return 1;
    }
    static bench_report report;
    report_start(ctx, &report, ndev);
    uint64_t t0 = bench_now_ns();
    if (measure_all(ctx, &report) != 0) {
        if (json)
            fclose(json);
        return 1;
    }
    report.seconds = (double)(bench_now_ns() - t0) / 1e9;
    return report_out(ctx, &report, json, json_path);
}

int gpumem_bench_main(int argc, char **argv)
{
    bench_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    const char *json_path = NULL, *replay = NULL, *write_log = NULL, *only = NULL;
    uint64_t limit = 0, cold = 0;
    char bad[64];
    enum { OPT_QUICK, OPT_JSON, OPT_DEVICE, OPT_REPLAY, OPT_LIMIT, OPT_COLD, OPT_WRITE_LOG, OPT_ONLY };
    static const cli_opt opts[] = {{"--quick", 0, CLI_FLAG, OPT_QUICK},
                                   {"--json", 0, CLI_VALUE, OPT_JSON},
                                   {"--device", 0, CLI_VALUE, OPT_DEVICE},
                                   {"--replay", 0, CLI_VALUE, OPT_REPLAY},
                                   {"--limit", 0, CLI_VALUE, OPT_LIMIT},
                                   {"--cold", 0, CLI_VALUE, OPT_COLD},
                                   {"--write-log", 0, CLI_VALUE, OPT_WRITE_LOG},
                                   {"--only", 0, CLI_VALUE, OPT_ONLY}};
    static const cli_cmd cmd = {"bench", opts, CLI_COUNT(opts), bench_usage, CLI_NO_OPERANDS};
    cli c;
    cli_start(&c, &cmd, argc, argv);
    for (int id; (id = cli_next(&c)) != CLI_DONE;) {
        if (id == CLI_EXIT)
            return c.status;
        if (id == OPT_QUICK)
            ctx.quick = 1;
        else if (id == OPT_JSON && !*c.value)
            return cli_usage_error(&c, "--json needs a path");
        else if (id == OPT_JSON)
            json_path = c.value;
        else if (id == OPT_REPLAY && !*c.value)
            return cli_usage_error(&c, "--replay needs a file");
        else if (id == OPT_REPLAY)
            replay = c.value;
        else if (id == OPT_LIMIT && (parse_bytes(c.value, &limit) != 0 || !limit))
            return cli_usage_error(&c, "--limit takes a byte count (1073741824, 1GiB), not '%s'",
                                   c.value);
        else if (id == OPT_LIMIT)
            continue;
        else if (id == OPT_COLD && (parse_bytes(c.value, &cold) != 0 || !cold))
            return cli_usage_error(&c, "--cold takes a byte count (8388608, 8MiB), not '%s'",
                                   c.value);
        else if (id == OPT_COLD)
            continue;
        else if (id == OPT_WRITE_LOG && !*c.value)
            return cli_usage_error(&c, "--write-log needs a path");
        else if (id == OPT_WRITE_LOG)
            write_log = c.value;
        else if (id == OPT_ONLY && replay_check_keys(c.value, bad, sizeof bad) != 0)
            return *bad ? cli_usage_error(&c, "--only: no allocator is called '%s' (gpumem "
                                              "bench --help lists them)", bad)
                        : cli_usage_error(&c, "--only takes keys separated by commas, not '%s'",
                                          c.value);
        else if (id == OPT_ONLY)
            only = c.value;
        else if (parse_int(c.value, &ctx.device) != 0)
            return cli_usage_error(&c, "--device takes a device number, not '%s'", c.value);
    }
    if (json_path && !bench_have_json()) {
        fprintf(stderr, "gpumem bench: error: --json: this gpumem was built without jansson, so "
                        "it cannot write JSON (apt-get install libjansson-dev, then rebuild)\n");
        return 2;
    }

    if ((limit || cold || write_log || only) && !replay)
        return cli_usage_error(&c, "%s goes with --replay",
                               limit ? "--limit" : cold ? "--cold" : only ? "--only" : "--write-log");
    if (write_log)
        return replay_convert(replay, write_log);
    if (replay)
        return bench_replay(replay, &(replay_opts){limit, cold, json_path, only, ctx.device});
    return bench_run(&ctx, json_path);
}

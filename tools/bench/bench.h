/* `gpumem bench`: what allocation and every copy path cost on the machine at hand.
 *
 * bench.c reads the command line and drives the run; alloc.c, copy.c and host.c measure one
 * concern each, devices.c what crosses between devices (peer copies, each device's pool), all
 * with measure.c's helpers (clock, medians, progress), which call none of them;
 * link.c asks NVML for the PCIe link and the NVLink links between devices; report.c turns a
 * finished report into the table and the JSON document (pure functions: tests/bench/ calls
 * them with made-up results); kernels.cu holds the two kernels the mapped and managed paths
 * need. */
#ifndef GPUMEM_TOOL_BENCH_H
#define GPUMEM_TOOL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

enum bench_section {
    BENCH_ALLOC, /* value[i]: median ns of one allocate + release pair at alloc_bytes[i] */
    BENCH_COPY,  /* value[0]: host to device GB/s, value[1]: device to host GB/s */
    BENCH_HOST,  /* value[0]: host write GB/s, value[1]: host read GB/s */
    BENCH_PEER,  /* device -> peer: value[0] GB/s with peer access off, value[1] with it on */
    BENCH_DEVICE_POOL, /* as BENCH_ALLOC, for one device's pool */
    BENCH_SECTIONS
};

#define BENCH_NOT_MEASURED (-1.0)
/* The devices section measures the first BENCH_MAX_DEVICES devices: every ordered pair of
 * them (two rows each) and each one's pool (two rows each). */
#define BENCH_MAX_DEVICES 8
#define BENCH_MAX_PAIRS (BENCH_MAX_DEVICES * (BENCH_MAX_DEVICES - 1))
#define BENCH_MAX_ROWS (48 + 2 * BENCH_MAX_PAIRS + 2 * BENCH_MAX_DEVICES)

/* One row of the table. A value below 0 was not measured; note then says why. */
typedef struct bench_row {
    int section;
    const char *key;   /* stable, for JSON and scripts: "pinned", "pool_device" */
    const char *label; /* for people: "pinned (cudaMallocHost)" */
    double value[2];
    int samples[2]; /* repetitions behind each median */
    char note[200];
    const char *vs; /* allocation rows: key of the gpumem row this peer is compared with */
    const char *deprecated; /* a peer its makers deprecated: what they point to instead */
    int device;     /* the device measured (peer rows: the source) */
    int peer;       /* peer rows: the destination device; -1 elsewhere */
} bench_row;

/* The PCIe link as NVML reports it. Generations and widths are 0 where unknown. */
typedef struct bench_link {
    int known;      /* 1 when max_gen and max_width were read */
    char why[200];  /* when not known: the reason, ready to print */
    unsigned cur_gen, cur_width;   /* before the run, the link at rest */
    unsigned max_gen, max_width;   /* what the device and the system can reach */
    unsigned busy_gen, busy_width; /* read right after the pinned copies; 0 when not read */
} bench_link;

/* What joins two devices, for one direction: NVLink links from src that reach dst (directly or
 * through NVSwitch), or else PCIe (the lower of the two devices' links), as NVML reports it. */
typedef struct bench_pair_link {
    int src, dst;
    unsigned nvlinks;       /* NVLink links used; 0: none, the devices talk over PCIe */
    double nvlink_gbps;     /* one link, one direction (from the compute capability) */
    unsigned pcie_gen, pcie_width; /* without NVLink: the lower link's maximum */
    double limit_gbps;      /* 0 when unknown */
    char why[200];          /* when unknown: the reason, ready to print */
} bench_pair_link;

typedef struct bench_report {
    const char *version;
    int device;
    char device_name[256];
    int cc_major, cc_minor;
    int quick;
    size_t alloc_bytes[2];
    size_t copy_bytes;
    size_t host_bytes;
    double seconds; /* wall time of the whole run */
    bench_link link;
    int sim;           /* run on the simulated device (GPUMEM_BACKEND=sim) */
    int ndev;          /* devices on the machine */
    int ndev_measured; /* of them in the devices section (at most BENCH_MAX_DEVICES) */
    size_t peer_bytes; /* one peer copy */
    char devices_note[200]; /* when the devices section was not measured: why */
    int npairs;
    bench_pair_link pairs[BENCH_MAX_PAIRS];
    int nrows;
    bench_row rows[BENCH_MAX_ROWS];
} bench_report;

/* ---- report.c: arithmetic and formatting, no CUDA ---- */

/* The payload limit of one direction of a PCIe link of generation @gen and @width lanes, in
 * GB/s (1e9 bytes): transfer rate times lanes times the line code's share (8b/10b for
 * generations 1 and 2, 128b/130b for 3 to 5, the FLIT's 242/256 for 6). 0 when unknown. */
double bench_link_gbps(unsigned gen, unsigned width);
/* The limit fractions are taken against: the link's maximum, 0 when unknown. */
double bench_link_limit(const bench_link *link);
/* "PCIe 5.0 x16, limit 63.0 GB/s a direction" (and what differs at rest or under load), or
 * "link limit unknown (...)". Returns @buf. */
char *bench_link_describe(const bench_link *link, char *buf, size_t n);
/* The limit of one direction of @nvlinks NVLink links of a device of compute capability
 * @cc_major.@cc_minor, in GB/s: the links times NVIDIA's published rate of one link (20 GB/s for
 * 6.0; 25 for 7.x, 8.0 and 9.0; 14.0625 for 8.6; 50 for 10.x), 0 when the rate is not known. */
double bench_nvlink_gbps(int cc_major, int cc_minor);
/* "NVLink, 18 links of 25 GB/s, limit 450.0 GB/s a direction", "PCIe 5.0 x16 (no NVLink
 * between them), limit 63.0 GB/s a direction" or "link limit unknown (...)". Returns @buf. */
char *bench_pair_describe(const bench_pair_link *pair, char *buf, size_t n);
/* The link from @src to @dst in @r, NULL when the run has none. */
const bench_pair_link *bench_pair_find(const bench_report *r, int src, int dst);
/* A duration in ns as "0.12 us", "91.0 us", "1.29 ms", "2.10 s". Returns @buf. */
char *bench_format_ns(double ns, char *buf, size_t n);
/* The table (stdout in the tool). Returns 0, or -1 when writing failed. */
int bench_print_table(FILE *out, const bench_report *r);
/* Writes the report as JSON to @out. Returns 0; -1 with a message in @err when the build has
 * no jansson or writing failed. */
int bench_write_json(FILE *out, const bench_report *r, char *err, size_t errn);
/* 1 when this build can write JSON (jansson was found). */
int bench_have_json(void);

/* value / the value of the row keyed @row->vs at size @i: above 1, gpumem's row is faster;
 * below 0 when either was not measured or there is no such row. */
double bench_vs_ratio(const bench_report *r, const bench_row *row, int i);
/* Adds a row (NULL when the table is full); its values start as not measured. */
bench_row *bench_row_add(bench_report *r, int section, const char *key, const char *label);

/* ---- link.c: NVML, loaded at run time ---- */

/* Fills @link for the CUDA device whose PCI bus id is @pci_bus_id ("0000:3B:00.0"): the link
 * at rest and its maximum, or why they are unknown. Keeps NVML open for bench_link_busy(). */
void bench_link_open(const char *pci_bus_id, bench_link *link);
/* Reads the current generation and width into busy_gen and busy_width (a quick query, to be
 * made while copies run); nothing when NVML is not open. */
void bench_link_busy(bench_link *link);
/* Closes NVML; bench_link_open() may be called again. */
void bench_link_close(void);
/* Fills @pair (src, dst already set) for the devices whose PCI bus ids are @src_bus and
 * @dst_bus, the source of compute capability @cc_major.@cc_minor: the NVLink links of the
 * source that reach the destination (to it, or to an NVSwitch) and their limit, else the PCIe
 * limit of the slower of the two, or why neither is known. Opens and closes NVML itself. */
void bench_link_pair(const char *src_bus, const char *dst_bus, int cc_major, int cc_minor,
                     bench_pair_link *pair);

/* ---- the measuring side (bench.c, alloc.c, copy.c, host.c, devices.c; measure.c) ---- */

typedef struct bench_ctx {
    bench_report *report;
    int quick;
    int device;
    int sm_count;
    int have_kernels;   /* built with nvcc: the mapped and managed rows can run */
    int managed_ok;     /* concurrent managed access: first touch migrates on faults */
    char pci_bus_id[32];
    cudaStream_t stream;
    int reps;           /* repetitions a row aims for */
    int min_reps;       /* at least these, even past the time budget */
    double budget_ns;   /* time a row may take before it stops at min_reps */
    int step, steps;    /* progress */
    int failures;
    int sim;            /* the simulated device: the devices section alone, no CUDA runtime */
} bench_ctx;

/* Progress on stderr: "[13/28] pinned (cudaMallocHost) H2D 256.0 MiB". */
void bench_progress(bench_ctx *c, const char *what);
/* Records a failed CUDA or gpumem call in @row's note and counts it; returns -1. */
int bench_fail(bench_ctx *c, bench_row *row, const char *call, int status);
/* Where host loops store what they read, so that the reads are not optimized away. */
extern volatile uint64_t bench_sink;
/* Monotonic host clock in ns. */
uint64_t bench_now_ns(void);
/* The median of @v[0..n) (sorts @v). */
double bench_median(double *v, int n);
/* 1 while a row should take another sample: fewer than reps, or fewer than min_reps, and
 * within the budget since @t0. */
int bench_more(const bench_ctx *c, int done, uint64_t t0);

int bench_alloc_steps(const bench_ctx *c);
/* Allocation row @i in table order: its key, the gpumem row it is compared with (NULL for
 * gpumem's own) and why it is deprecated (NULL if it is not). Returns 0 past the last row. */
int bench_alloc_row_info(int i, const char **key, const char **vs, const char **deprecated);
void bench_alloc_run(bench_ctx *c);
int bench_copy_steps(const bench_ctx *c);
void bench_copy_run(bench_ctx *c);
int bench_host_steps(const bench_ctx *c);
void bench_host_run(bench_ctx *c);
/* The devices section: with one device, only devices_note is set ("one device here..."). */
int bench_devices_steps(const bench_ctx *c);
void bench_devices_run(bench_ctx *c);

/* ---- kernels.cu (only when GPUMEM_BENCH_HAVE_KERNELS) ---- */
#ifdef __cplusplus
extern "C" {
#endif
/* Reads @bytes (a multiple of 16) at @p on @stream; returns the launch's cudaError_t. */
int bench_kernel_read(const void *p, size_t bytes, int blocks, cudaStream_t stream);
/* Writes @bytes (a multiple of 16) at @p on @stream; returns the launch's cudaError_t. */
int bench_kernel_write(void *p, size_t bytes, int blocks, cudaStream_t stream);
#ifdef __cplusplus
}
#endif

#endif

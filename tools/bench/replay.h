/* `gpumem bench --replay FILE`: a program's recorded allocations replayed into every
 * allocator the machine has, side by side (docs/bench.md, "Replaying a program's
 * allocations"). replay_load.c reads traces and replay logs (no CUDA), replay.c replays,
 * replay_report.c prints the table and the JSON (no CUDA). */
#ifndef GPUMEM_TOOL_BENCH_REPLAY_H
#define GPUMEM_TOOL_BENCH_REPLAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define REPLAY_MAX_STREAMS 64

/* One allocation or release, in the program's order. */
typedef struct {
    uint64_t bytes;  /* the allocation's (a release carries its allocation's too) */
    int64_t ns;      /* since the trace began */
    uint32_t slot;   /* 1.. : which allocation (a release names its allocation's slot) */
    uint32_t thread; /* the recording's thread number (the replay runs on one thread) */
    int stream;      /* index into replay_trace.streams */
    int alloc;       /* 1 allocation, 0 release */
} replay_op;

typedef struct {
    replay_op *ops;
    size_t n, cap;
    size_t nslots;           /* allocations: slots are 1 to nslots */
    size_t allocs, skipped;  /* skipped: releases of allocations the file does not have */
    uint64_t live, peak_requested;
    uint64_t streams[REPLAY_MAX_STREAMS]; /* the recording's stream handles */
    int nstreams;
    /* A trace's processes and devices (a job's merged trace, a program on several GPUs), all
     * replayed as one program's on one device; a log has neither (0). At most
     * REPLAY_MAX_STREAMS of each are counted. */
    uint64_t pids[REPLAY_MAX_STREAMS], devices[REPLAY_MAX_STREAMS];
    int npids, ndevices;
} replay_trace;

/* Reads a gpumem trace or a replay log. Returns 0, or -1 with the reason in err. */
int replay_load(const char *path, replay_trace *t, char *err, size_t errn);
/* Writes t as a replay log ("gpumem-replay 1"). Returns 0, or -1 when writing failed. */
int replay_write_log(FILE *out, const replay_trace *t);
void replay_free(replay_trace *t);

/* One allocator's replay. */
typedef struct {
    const char *key;   /* stable, for JSON and scripts: "gpumem_vmm", "torch_expandable" */
    const char *label; /* for people */
    int ran;           /* 0: not measured (note says why) */
    uint64_t peak_reserved;
    uint64_t requested_at_peak; /* requested bytes when reserved was at its peak */
    double ns_per_op;           /* wall time of the replay without measuring, per operation */
    long long oom_at;           /* the operation that ran out of memory under the limit, or -1 */
    char note[200];
    /* gpumem's pools (counted 1): the allocations that asked CUDA for memory or a mapping,
     * the pages moved from where no block needed them, and the time spent in the CUDA calls
     * that got, mapped, unmapped and gave back memory (gpumem_pool_stats_t's misses, remaps
     * and cuda_ns), in the measured replay. */
    int counted;
    uint64_t cuda_asks, pages_moved, cuda_ns;
} replay_result;

#define REPLAY_MAX_RESULTS 12

typedef struct {
    const char *path;
    const char *backend; /* "cuda" or "sim" */
    uint64_t limit;      /* 0: none */
    uint64_t cold;       /* --cold: bytes written between two timed operations (0: none) */
    size_t ops, allocs, skipped;
    int nstreams;
    int npids, ndevices; /* replay_trace's */
    uint64_t peak_requested;
    int nresults;
    replay_result results[REPLAY_MAX_RESULTS];
} replay_report;

/* The share of reserved memory that held no requested byte at the peak of reserved. */
double replay_fragmentation(const replay_result *r);
int replay_print_table(FILE *out, const replay_report *r);
/* Writes the report as JSON. Returns 0, or -1 with a message in err. */
int replay_write_json(FILE *out, const replay_report *r, char *err, size_t errn);

/* What a replay is asked for (gpumem bench's options). */
typedef struct {
    uint64_t limit;        /* --limit: 0 none */
    uint64_t cold;         /* --cold: 0 none */
    const char *json_path; /* --json, or NULL */
    const char *only;      /* --only: allocator keys separated by commas, or NULL for all */
    int device;
} replay_opts;

/* The key of allocator i, in the table's order (gpumem's and CUDA's, then PyTorch's); NULL
 * past the last. */
const char *replay_key(size_t i);
/* 0 when every comma-separated key of list names an allocator; else -1 with the first that
 * does not (or "" for an empty key) copied to bad. */
int replay_check_keys(const char *list, char *bad, size_t badn);
/* replay.c: runs the replay (the backend selected, or the real device) and prints the table;
 * returns the tool's exit status. */
int replay_main(const char *path, const replay_opts *o);
/* --write-log: path's allocations written to out_path as a replay log; the exit status. */
int replay_convert(const char *path, const char *out_path);

#endif

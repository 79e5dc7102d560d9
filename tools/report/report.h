/* gpumem report: a trace (GPUMEM_TRACE, gpumem check --trace) read into memory and the facts
 * both outputs show: live bytes over time by call site and by memory kind and device, the peak
 * and what was live then, and what was still live at the end. */
#ifndef GPUMEM_REPORT_H
#define GPUMEM_REPORT_H

#include <stdint.h>
#include <stdio.h>

/* Processes one --perfetto run may show side by side (a job's ranks). */
#define REPORT_MAX_TRACES 1024

typedef struct {
    char *name;        /* "app.cu:31 (load_batch)", or the CUDA call's name */
    int kind;          /* gpumem kind of its first allocation */
    uint64_t stack;    /* stack id of its first allocation with one, else 0 */
    uint64_t count, total;      /* allocations made, bytes allocated */
    int64_t live, peak;         /* bytes live now (while reading), the most ever */
    int64_t at_peak;            /* bytes live at the trace's peak */
    uint64_t count_at_peak;
    int64_t leaked;             /* bytes live at the end */
    uint64_t leaked_count;
} report_site;

typedef struct {
    int kind, device;
    int64_t live, peak, peak_t;
} report_track;

/* One allocation or release, in time order. */
typedef struct {
    int64_t t;      /* ns since the trace began */
    int64_t bytes;  /* + allocation, - release */
    uint32_t site, track;
    uint32_t alloc; /* index into allocs */
} report_event;

typedef struct {
    uint32_t site, track;
    int64_t bytes;
    int64_t t_alloc, t_release; /* t_release -1: live at the end */
    uint64_t address, stream;   /* as the trace gives them (0 when it does not) */
    uint32_t stack;             /* the allocation's stack id, 0: none */
    uint32_t thread, release_thread; /* the trace's small thread numbers (tid) */
    uint32_t released_at;       /* index into release_names, or UINT32_MAX: not known */
} report_alloc;

typedef struct {
    int64_t t;
    int64_t bytes;
    int kind, device;
    char *site;
    char *what; /* "out of memory" or "failed allocation" */
    char *cuda_error;
} report_failure;

/* A pool's reserved bytes and the bytes of its blocks in use when its reserved memory changed
 * (the trace's "KIND pool 0xADDR reserved, device N" counters; report_pools.c). */
typedef struct {
    int64_t t;
    uint64_t reserved, in_use;
    uint32_t pool; /* index into pool_names */
} report_pool_sample;

typedef struct {
    char *process;       /* the process_name metadata */
    long pid;            /* the traced process's id (its events' "pid") */
    int64_t t0;          /* the trace's own time (ns of CLOCK_MONOTONIC) of time 0 below */
    char **release_names; /* where allocations were released ("released_at"), each once */
    size_t nrelease_names;
    char *tool;
    int complete;        /* the gpumem_end marker was read */
    int frames_cut;      /* the file ends inside the stackFrames table after the events */
    int64_t duration;    /* ns from the first to the last timestamp */
    report_site *sites;
    size_t nsites;
    report_track *tracks;
    size_t ntracks;
    report_event *events;
    size_t nevents;
    report_alloc *allocs;
    size_t nallocs;
    report_failure *failures;
    size_t nfailures;
    int64_t *checkpoints;
    size_t ncheckpoints;
    /* The stacks table: ids and their frames. */
    uint64_t *stack_ids;
    char ***stack_frames; /* NULL-terminated arrays */
    size_t nstacks;
    /* The peak of all live bytes (every kind and device together). */
    int64_t peak_bytes, peak_t;
    uint64_t peak_index; /* events up to and including this one make the peak */
    int64_t leaked_bytes;
    uint64_t leaked_count, leaked_sites;
    uint64_t unmatched_releases; /* releases of allocations the trace does not have */
    uint64_t dropped;            /* events the tracer could not record (gpumem_end says) */
    uint64_t bad_times;          /* events left out: their timestamp is no time */
    report_pool_sample *pool_samples; /* in time order once loaded */
    size_t npool_samples, pool_samples_cap;
    char **pool_names; /* "device pool 0x55d0c0 reserved, device 0" */
    size_t npools;
} report_trace;

/* Reads path into *t. Returns 0; or -1 with a sentence (what is wrong and what to do) in err,
 * and *t holding nothing (report_free not needed). A trace without its end (the program crashed or was killed) is read up to where it stops;
 * t->complete is 0 then. */
int report_load(const char *path, report_trace *t, char *err, size_t errn);
void report_free(report_trace *t);
/* Frames of a stack id; NULL when unknown. */
char **report_stack(const report_trace *t, uint64_t id);
/* Where stack id is in stack_ids and stack_frames; -1 when unknown. */
long report_stack_index(const report_trace *t, uint64_t id);
/* "memory-kind memory, device N" */
const char *report_track_name(const report_trace *t, size_t i, char *buf, size_t n);
/* Site indexes ordered by bytes at the peak, then by their own peak (largest first). */
uint32_t *report_sites_ranked(const report_trace *t);

void report_summary(const report_trace *t, FILE *out, int top);

/* report_pools.c: pools' reserved memory against what their blocks use, over time. A counter
 * line of the trace: 1 when it was a pool's (taken), 0 when not, -1 out of memory. */
int report_take_pool_counter(report_trace *t, const char *line);
/* After loading: times from t0, samples in time order. */
void report_pools_rebase(report_trace *t, int64_t t0);
/* The summary's section: each pool's peak reserved, the bytes in use then, and reserved
 * against in use at up to 8 moments. Nothing when the trace has no pool counter. */
void report_pools_summary(const report_trace *t, FILE *out);
void report_pools_free(report_trace *t);
/* Returns 0, or -1 with why in err. */
int report_html(const report_trace *t, const char *out_path, char *err, size_t errn);

/* PyTorch's memory snapshot of the trace (memviz.c): the last max_entries trace entries of
 * each device (0: all). Returns 0, or -1 with why in err. */
int report_memory_viz(const report_trace *t, const char *out_path, uint64_t max_entries,
                      char *err, size_t errn);
/* Perfetto's protobuf trace of n traces (perfetto.c), one process each; names are their
 * files. Returns 0, or -1 with why in err. */
int report_perfetto(const report_trace *traces, const char *const *names, size_t n,
                    const char *out_path, char *err, size_t errn);

/* a + b, stopping at the ends of int64 instead of overflowing: the sums of a hostile trace's
 * or report's sizes. */
int64_t report_add_sat(int64_t a, int64_t b);

/* "1.5 MiB" */
const char *report_bytes(int64_t v, char *buf, size_t n);

/* `gpumem report --merge ...` (merge.c). */
int report_merge_main(int argc, char **argv);

#endif

/* gpumem internals shared between the library's source files (gpumem__ prefix).
 *
 * The options, errors, formatting, NVTX and backend files call nothing above them. Fourteen
 * others (the allocating entry points alloc.c, pool.c and copy.c among them) call each other in
 * one circle, through two hubs. init.c starts gpumem: it reads the options, picks the backend
 * and sets up the registry, the trace, the exit report and the fork handlers; and the first call
 * of any kind may start gpumem, so registry.c, report.c and checkpoint.c call gpumem__init_once
 * back, and every user of the backend reads gpumem__be, which init.c owns. fork.c calls every
 * module's at-fork handler, in the order their locks nest (fork.c says it), and init.c and
 * trace.c set it up (tests/house/call_circles.py lists the circle and what ties it, from a
 * build's object files). Breaking it would take the entry points starting gpumem before any lower
 * call, and modules handing fork.c their handlers. Inside the circle the pool's files
 * (pool.c, pool_arena.c, pool_pages.c, tcache.c) also call each other: one allocator. */
#ifndef GPUMEM_INTERNAL_H
#define GPUMEM_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>

#include "gpumem.h"
#include "cuda/backend.h"

#if defined(__GNUC__)
#define GPUMEM__LIKELY(x) __builtin_expect(!!(x), 1)
#define GPUMEM__UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GPUMEM__FORMAT(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define GPUMEM__LIKELY(x) (x)
#define GPUMEM__UNLIKELY(x) (x)
#define GPUMEM__FORMAT(fmt, args)
#endif

/* ---- options.c: one table, read once from the environment ---- */
/* X(NAME, TYPE, CHOICES, DEFAULT, HELP): TYPE is BOOL (1/0, on/off, ...), SIZE (a number with
 * an optional unit), COUNT (a whole number in the range CHOICES, "LOW-HIGH"), CHOICE (one of
 * CHOICES, separated by '|'), PATH (non-empty) or TEXT. A SIZE that is an amount of memory
 * has its bounds in CHOICES ("LOW-HIGH"): at most 1024TiB, more than any machine has, so that
 * the code may add a few pages to it without wrapping (18446744073709551615 for
 * GPUMEM_REGCACHE wrapped its limit to nothing). FAIL_ALLOC, QUARANTINE and LEAK_EXITCODE are
 * counts and a status: any value is safe (QUARANTINE is clamped by registry.c, and
 * LEAK_EXITCODE refused above 255 by report.c, each with a warning of its own). */
#define GPUMEM__OPTION_MAP(X)                                                                    \
    X(BACKEND, CHOICE, "cuda|sim", "cuda",                                                       \
      "backend: cuda (the real driver) or sim (the simulated device, for tests)")                \
    X(LIBCUDA, PATH, "", "libcuda.so.1", "CUDA driver library the cuda backend loads")            \
    X(SIM_DEVICE_BYTES, SIZE, "0-1024TiB", "16GiB", "memory of each simulated device")                    \
    X(SIM_DEVICES, COUNT, "1-64", "1", "number of simulated devices, 1 to 64")                   \
    X(SIM_PEER_ACCESS, BOOL, "", "1",                                                            \
      "simulated devices can reach each other's memory (0: peer copies are refused)")            \
    X(FAIL_ALLOC, SIZE, "", "0",                                                                 \
      "make the Nth gpumem allocation fail with out of memory (0: never)")                       \
    X(QUARANTINE, SIZE, "", "65536",                                                             \
      "released allocations remembered to tell a double free from a foreign pointer")            \
    X(SYNC_LAUNCH, BOOL, "", "0",                                                                \
      "GPUMEM_CHECK_LAUNCH also synchronizes, to pin kernel faults to launches")                 \
    X(ABORT_ON_ERROR, BOOL, "", "0",                                                             \
      "the default error handler aborts on every failure, not only checks")                     \
    X(LEAK_REPORT, CHOICE, "off|summary|full", "summary",                                        \
      "at exit, report allocations still live: off, a summary line, or full (by call site)")     \
    X(LEAK_EXITCODE, SIZE, "", "0",                                                              \
      "exit status of a process that leaks, 1 to 255 (0: leave the status alone), for CI")       \
    X(REPORT_FILE, TEXT, "", "",                                                                 \
      "write reports to this file instead of stderr; %p is the process id")                     \
    X(REPORT_FORMAT, CHOICE, "text|json", "text", "format of reports: text or json")         \
    X(BACKTRACE, BOOL, "", "0",                                                                  \
      "keep each allocation's stack, shown in reports and release errors (costs time)")          \
    X(POOL_THREAD_CACHE, BOOL, "", "1",                                                          \
      "pools keep released blocks in a cache per thread, in front of the pool's lock")           \
    X(POOL_DESIGN, CHOICE, "auto|vmm|segments|classes", "auto",                                  \
      "how pools hold memory: auto and vmm (device pools map pages where the device can), "    \
      "segments (carved from pieces CUDA gives), classes (a piece per block, never split)")     \
    X(COPY_STAGE_MIN, SIZE, "0-1024TiB", "16MiB",                                                \
      "copies between pageable host and device memory this large go through pinned staging "    \
      "slots (0: never)")                                                                        \
    X(COPY_SLOT_BYTES, SIZE, "4KiB-16GiB", "4MiB",                                               \
      "bytes of each pinned staging slot of gpumem_copy, 4KiB to 16GiB (rounded down to 4 KiB)") \
    X(COPY_SLOTS, COUNT, "2-64", "16", "pinned staging slots per device and direction (2 to 64)") \
    X(COPY_THREADS, COUNT, "0-64", "0",                                                          \
      "threads that fill and drain staging slots, the caller included, up to 64 (0: one a "     \
      "core, up to 16)")                                                                         \
    X(COPY_STREAM_STORES, BOOL, "", "1",                                                       \
      "staged copies to the device fill the pinned slots with streaming (non-temporal) stores, " \
      "on x86-64")                                                                               \
    X(REGCACHE, SIZE, "0-1024TiB", "1GiB",                                                               \
      "gpumem_copy keeps large pageable buffers registered with the driver, up to this many "     \
      "bytes, for later copies at pinned speed (0: off)")                                        \
    X(TRACE, TEXT, "", "",                                                                       \
      "record every allocation, release, checkpoint and failed allocation to this file (Chrome " \
      "trace JSON for Perfetto and gpumem report); %p is the process id")                     \
    X(NVTX, CHOICE, "auto|on|off|1|0", "auto",                                                   \
      "pools describe their blocks to compute-sanitizer through NVTX, so memcheck sees "         \
      "accesses past a block or into a released one (auto: when compute-sanitizer runs)")

enum {
#define GPUMEM__OPTION_ENUM(name, type, choices, def, help) GPUMEM__OPT_##name,
    GPUMEM__OPTION_MAP(GPUMEM__OPTION_ENUM)
#undef GPUMEM__OPTION_ENUM
    GPUMEM__OPT_COUNT
};

/* Flags that every allocation and release reads and that change rarely (a trace started or
 * stopped, a fork, a checkpoint, initialization), on one cache line: a cold operation then
 * misses once for all of them instead of once in each module that owns one. Written only by
 * their owners, named at each. */
typedef struct {
    _Alignas(64) atomic_int trace_on; /* trace.c: a trace is being recorded */
    atomic_int forking;               /* registry.c: a fork is under way */
    atomic_int asymmetric;            /* tcache.c: visitors fence with membarrier */
    atomic_uint seq_epoch;            /* alloc.c: the sequence numbers' checkpoint epoch */
    int nvtx_on;                      /* nvtx.c: pools register their memory with NVTX */
    int backtrace;                    /* options.c: GPUMEM_BACKTRACE */
    uint64_t fail_alloc;              /* options.c: GPUMEM_FAIL_ALLOC */
} gpumem__hot_flags;
extern gpumem__hot_flags gpumem__hot;

/* Reads every option from the environment and warns about unknown GPUMEM_* variables. */
void gpumem__options_load(void);
const char *gpumem__opt_str(int id);
uint64_t gpumem__opt_u64(int id);
int gpumem__opt_bool(int id);
/* The option's GPUMEM_* name, its default value and its help line. */
void gpumem__opt_describe(int id, const char **name, const char **default_value,
                          const char **help);
/* Parsers, exposed for tests: return 0 on success, -1 on malformed text. */
int gpumem__parse_size(const char *text, uint64_t *out);
int gpumem__parse_bool(const char *text, int *out);
/* The process's command line (/proc/self/cmdline), its words separated by spaces, at most
 * n - 1 bytes; empty when it cannot be read (trace_text.c). */
void gpumem__command_line(char *buf, size_t n);
/* The candidate closest to NAME (its first NAME_LEN characters), ignoring case, if at most
 * MAX_DISTANCE edits away, else NULL: the "did you mean" of options, commands and keys. */
const char *gpumem__suggest(const char *name, size_t name_len, const char *const *candidates,
                            size_t count, size_t max_distance);

/* ---- init.c: lazy initialization and the backend in use ---- */
/* Valid once gpumem__ready() returned 0. Atomic: a program may choose another backend (after
 * the first failed to start) while other threads make their first calls. */
extern const gpumem__backend *_Atomic gpumem__be;
/* Initializes on first use; returns GPUMEM_OK or GPUMEM_ENODEV (record filled). */
int gpumem__ready(const char *expr, gpumem_site site);
/* Runs the once-only part of initialization: options and the registry. */
void gpumem__init_once(void);
/* 1 when the backend initialized successfully (its entries may be called). */
int gpumem__backend_up(void);
/* As gpumem__backend_up, but initializes the backend first if nothing was tried yet;
 * reports nothing on failure. */
int gpumem__backend_try(void);
/* Small per-thread number, 1 for the first thread seen. */
unsigned gpumem__thread_id(void);

/* CLOCK_MONOTONIC in nanoseconds (the trace's timestamps, the pools' CUDA time). */
uint64_t gpumem__now_ns(void);

/* ---- fork.c: fork() while other threads are inside gpumem (docs/reliability.md) ---- */
enum { GPUMEM__FORK_PREPARE, GPUMEM__FORK_PARENT, GPUMEM__FORK_CHILD };
/* Registers the fork handlers; called once, by initialization. */
void gpumem__fork_setup(void);
/* In a process made by fork, the first sequence number it handed out itself: allocations
 * numbered below it were inherited from the parent. 0 in a process not made by fork. */
uint64_t gpumem__fork_inherited_seq(void);
/* Each file's part of the handlers, called by fork.c in the library's lock order: PREPARE
 * takes the file's locks, PARENT releases them, CHILD releases them and forgets what belonged
 * to threads the child does not have. */
void gpumem__trace_at_fork(int phase); /* trace.c */
void gpumem__init_at_fork(int phase);
void gpumem__be_at_fork(int phase); /* both backends' locks (init.c) */
void gpumem__backtrace_at_fork(int phase);
void gpumem__tc_at_fork(int phase);
void gpumem__pool_at_fork(int phase);
void gpumem__copy_at_fork(int phase);
void gpumem__reg_at_fork(int phase);
void gpumem__err_at_fork(int phase);
void gpumem__regcache_at_fork(int phase);

/* ---- registry.c: every live allocation, plus a quarantine of released ones ---- */
typedef struct gpumem__rec {
    uintptr_t base;
    size_t bytes;
    cudaStream_t stream;
    gpumem_site site;
    gpumem_site freed_site;
    uint64_t seq;
    unsigned short flags; /* the allocation's flags (GPUMEM_HOST_*, GPUMEM_ATTACH_*) */
    unsigned char kind;
    unsigned thread;
    unsigned freed_thread;
    int device;
    uint32_t stack; /* allocation stack (backtrace.h) with GPUMEM_BACKTRACE=1, else 0 */
    uint32_t freed_stack; /* release stack, kept by gpumem check (quarantined records) */
    struct gpumem_pool *pool; /* the pool a block belongs to, else NULL (released by CUDA) */
} gpumem__rec;

/* Outcome of taking a pointer out of the registry for release. */
typedef enum {
    GPUMEM__TAKEN = 0,   /* live and exact: moved to quarantine; *out is its record */
    GPUMEM__INTERIOR,    /* inside a live allocation; *out describes it, nothing changed */
    GPUMEM__DOUBLE,      /* in quarantine; *out is the released record */
    GPUMEM__UNKNOWN      /* neither */
} gpumem__take_result;

/* Sets up the shards; called once by initialization, after the options are read. */
void gpumem__reg_setup(void);
/* Makes a copy of r live. r->base must be set and not already live. Returns 0, or -1 when
 * the registry cannot grow (out of host memory): then nothing changed. */
int gpumem__reg_insert(const gpumem__rec *r);
/* Takes p out for release. With a kind filter (non-zero mask of 1u << kind), a live record of
 * another kind is left in place and GPUMEM__TAKEN is not returned: *kind_mismatch is set. */
gpumem__take_result gpumem__reg_take(const void *p, gpumem_site site, unsigned kind_mask,
                                     int *kind_mismatch, gpumem__rec *out);
/* Records the release stack of a quarantined (taken) record, for double-free reports. */
void gpumem__reg_set_freed_stack(const void *p, uint32_t stack);
/* Undoes a take whose CUDA release did not happen (the memory is still allocated). */
void gpumem__reg_untake(const void *p);
/* A pool block at base is made (add) or goes. While it exists, the block has a record of its
 * own, kept while the block is free or cached, which its allocations (gpumem__reg_insert)
 * and releases (gpumem__reg_take) flip between live and released without the shards' locks.
 * Removal puts the block's last release into the quarantine. */
void gpumem__reg_pool_record(uintptr_t base, int add);
/* A pool block of bytes at base, in use to its pool, joins (add) or leaves the table of large
 * spans that interior lookups search (blocks over 64 KiB; smaller ones are found by walking
 * down from the address). */
void gpumem__reg_pool_span(uintptr_t base, size_t bytes, int add);
/* Finds the live allocation containing p; copies it into *out. Returns 1 if found. */
int gpumem__reg_find(const void *p, gpumem__rec *out);
/* Finds a remembered release (quarantine) containing p, when no live allocation does; copies
 * it into *out (freed_site set). Returns 1 if found. Error paths only: probes up to 256
 * addresses. */
int gpumem__reg_find_released(const void *p, gpumem__rec *out);
/* The live allocation with the highest base at or below p, at most 64 KiB below, whether or
 * not it contains p (error paths: a pointer past a pool block's bytes, in its rounding). */
int gpumem__reg_find_below(const void *p, gpumem__rec *out);
void gpumem__reg_live(gpumem_live *out);
/* Counts and totals by kind (index 0: all) and device, summed over the shards. */
typedef struct gpumem__counts {
    gpumem_count_t count[GPUMEM_KIND_COUNT_];
    uint64_t bytes[GPUMEM_KIND_COUNT_], total_bytes[GPUMEM_KIND_COUNT_];
    gpumem_count_t device_count[GPUMEM_STATS_DEVICES];
    uint64_t device_bytes[GPUMEM_STATS_DEVICES], device_total_bytes[GPUMEM_STATS_DEVICES];
} gpumem__counts;
void gpumem__reg_counts(gpumem__counts *out);
/* Statistics slot of a device ordinal: ordinals past the last share it. */
static inline int gpumem__dev_slot(int device)
{
    return device < 0 ? 0 : device >= GPUMEM_STATS_DEVICES ? GPUMEM_STATS_DEVICES - 1 : device;
}
/* Visits every live record, one shard locked at a time; stops when fn returns non-zero. With
 * try_only, a shard whose lock another thread holds is skipped rather than waited for (the
 * exit-time report must not hang on a thread stopped inside gpumem); returns the number of
 * shards skipped. */
int gpumem__reg_foreach(int (*fn)(const gpumem__rec *r, void *arg), void *arg, int try_only);
/* Calls fn for each block of the registry's own memory (tables, rings, the sorted array of
 * large allocations): gpumem check's leak scan must not take the registry's copies of the
 * addresses for pointers the program holds. At exit: each shard is read under its lock, with
 * the exit report's bounded wait (a shard that stays busy is left out). */
void gpumem__reg_storage(void (*fn)(const void *p, size_t bytes, void *arg), void *arg);

/* ---- pool.c ---- */
/* Gives a pool block back to its pool: called by gpumem_free / gpumem_free_async after the
 * record r left the registry. stream is the release's stream for gpumem_free_async (async
 * set), else r->stream. Returns a cudaError_t value (0 on success); on failure the caller
 * reports it and puts the record back. */
int gpumem__pool_release(struct gpumem_pool *pool, const gpumem__rec *r, int async,
                         cudaStream_t stream);
/* Whether the pool's blocks belong to a runtime (GPUMEM_POOL_RUNTIME_OWNED): the exit report
 * leaves them out. Lock-free and signal-safe (a field set at creation). */
int gpumem__pool_runtime_owned(const struct gpumem_pool *pool);
/* The size-class bytes of the pool's block at base (0 when there is none). */
size_t gpumem__pool_block_size(struct gpumem_pool *pool, uintptr_t base);
/* Whether p lies in memory a pool holds to carve blocks from (not in a live block): its kind
 * and where the pool was made. Error paths only: walks every pool's chunks under its lock. */
int gpumem__pool_chunk_holding(const void *p, int *kind, gpumem_site *made);

/* Pool side of the thread caches (tcache.c), each taking the pool's mutex. Returns n cached
 * blocks of class cls from a thread cache to the pool's cache of stream. */
void gpumem__pool_tc_return(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls,
                            const uintptr_t *bases, unsigned n);
size_t gpumem__pool_class_size(unsigned cls);
/* Blocks cached by every thread cache of pool, by class (between gpumem__tc_sum_begin and
 * gpumem__tc_sum_end). */
void gpumem__tc_sum_classes(struct gpumem_pool *pool, uint64_t *per_class);

/* ---- nvtx.c: pools described to compute-sanitizer through NVTX (docs/pools.md) ---- */
/* gpumem__hot.nvtx_on: 1 when pools register their memory with NVTX. Set once, by
 * gpumem__nvtx_start, before the first pool exists; the pools' paths test it as one
 * predictable branch. Decides it from GPUMEM_NVTX (and, for auto, the environment); once. */
void gpumem__nvtx_start(void);
/* 1 when the environment shows that compute-sanitizer started the process. */
int gpumem__nvtx_sanitizer_seen(void);
/* Memory a pool got from CUDA in one piece (a chunk, a block of its own) becomes (add) or
 * stops being a heap; call before giving it back to CUDA. */
void gpumem__nvtx_heap(uintptr_t base, size_t bytes, int add);
/* A block of bytes requested at base, inside a heap, is handed out (add) or released. */
void gpumem__nvtx_region(uintptr_t base, size_t bytes, int add);
/* fork(): takes (PREPARE) and releases the heaps' lock, after the pools' locks. */
void gpumem__nvtx_at_fork(int phase);

/* ---- tcache.c: per-thread caches of pool blocks ---- */
/* Classes a thread cache serves: those up to 4 MiB (pool.c checks the figure). */
#define GPUMEM__TC_CLASSES 96u
/* What one thread's bin of a pool holds and did; gpumem_pool_stats adds them to the pool's. */
typedef struct gpumem__tc_counts {
    int64_t cached_bytes, cached_blocks; /* released blocks held by the thread cache */
    int64_t requested;                   /* requested bytes: + at a pop, - at a push */
    int64_t hits;                        /* pops */
} gpumem__tc_counts;
/* Adds a bin's requested bytes and hits to the pool's own figures (the bin is going). */
void gpumem__pool_tc_fold(struct gpumem_pool *pool, const gpumem__tc_counts *c);
/* A cached block of class cls (of size bytes) for a request of bytes on stream, from the
 * calling thread's cache; 0 when it has none. */
uintptr_t gpumem__tc_pop(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls,
                         size_t size, size_t bytes);
/* Keeps a released block (requested bytes) in the calling thread's cache; 0 when it cannot
 * (too large, no room, no host memory): the pool takes it. undo_hit: the block never reached
 * the caller after a pop. */
int gpumem__tc_push(struct gpumem_pool *pool, cudaStream_t stream, unsigned cls, size_t size,
                    uintptr_t base, size_t bytes, int undo_hit);
/* Gives every thread's cached blocks of pool back to it; forget: the pool is going away. Never
 * call with the pool's mutex held. */
void gpumem__tc_drain(struct gpumem_pool *pool, int forget);
/* Sums every thread's bins of pool and keeps them locked until gpumem__tc_sum_end. */
void gpumem__tc_sum_begin(struct gpumem_pool *pool, gpumem__tc_counts *out);
void gpumem__tc_sum_end(void);
/* For tests: the calling thread's cache, and in *stack the first stack of its bin of (pool,
 * stream) (NULL if none); NULL when the thread has no cache. */
const void *gpumem__tc_probe(struct gpumem_pool *pool, cudaStream_t stream, const void **stack);

/* ---- copy.c ---- */
/* What gpumem_copy did since the process started (for tests and benchmarks). */
typedef struct gpumem__copy_counts {
    uint64_t direct;      /* copies handed to one cuMemcpyAsync */
    uint64_t staged;      /* copies through a staging ring */
    uint64_t chunks;      /* slot fills (to the device) and drains (from it) */
    uint64_t slot_waits;  /* times a slot's previous transfer had to be waited for */
    uint64_t fallbacks;   /* copies that would have been staged but went direct (no ring) */
    uint64_t peer;        /* copies between two devices' memory by cuMemcpyPeerAsync */
    uint64_t peer_staged; /* copies between two devices that cannot reach each other, staged */
    uint64_t registered;  /* copies from or to a range the registration cache holds */
} gpumem__copy_counts;
void gpumem__copy_counts_get(gpumem__copy_counts *out);

/* ---- regcache.c: pageable buffers registered with the driver, kept for later copies ---- */
/* A copy of [p, p + bytes) between pageable and device memory may go straight to CUDA when
 * the range is registered: 1 and *entry held (the range stays registered until put). 0 when
 * it is not (stage the copy then): when the cache is on and the range fits, it is queued for
 * registration, which gpumem__regcache_kick starts once the copy is done. */
int gpumem__regcache_get(const void *p, size_t bytes, void **entry);
void gpumem__regcache_put(void *entry);
/* Starts the registration of the queued ranges: on the cache's own thread, or on the calling
 * thread in a process made by fork. */
void gpumem__regcache_kick(void);
/* For tests and benchmarks: waits until no range is queued or being registered. */
void gpumem__regcache_settle(void);
/* Whether p lies in a range the cache registered: the program's memory is still pageable
 * to it, whatever the driver now says of the address. */
int gpumem__regcache_owns(const void *p);
/* Called by the release hooks (reghooks.c) before [p, p + bytes) goes back: unregisters
 * every cached range it overlaps, after copies from them finished. block: a heap block (free,
 * realloc), matched against the bytes copies used; else pages (munmap, madvise, mremap). */
void gpumem__regcache_release(const void *p, size_t bytes, int block);
/* Called by the exit hook (reghooks.c) when exit() starts: from then on a release forgets the
 * ranges it drops without calling into the driver, as after the cache's own exit handler. */
void gpumem__regcache_exiting(void);
/* For tests and benchmarks: turn the cache on or off at run time (returns whether it can be
 * on: the option, the hooks), and unregister everything not in use. */
int gpumem__regcache_set_enabled(int on);
/* For the hooks: entries held, and the span of their ranges (read without a lock). */
extern atomic_uint gpumem__regcache_live;
extern atomic_uintptr_t gpumem__regcache_lo, gpumem__regcache_hi;
/* Whether the calling thread is inside the cache (its own CUDA calls): hooks pass through. */
int gpumem__regcache_inside(void);
/* reghooks.c: the first of the release functions the process does not call in gpumem (a
 * definition comes before gpumem's), NULL when it calls gpumem's for all. Weak: a program
 * linked statically with its own free does not get the hooks, and the cache stays off. */
const char *gpumem__reghooks_missing(void) __attribute__((weak));
void gpumem__regcache_reset(void);
typedef struct gpumem__regcache_counts {
    uint64_t hits, misses, registered, evicted, released, refused;
    uint64_t entries, bytes; /* now */
    const char *off_reason;  /* why the cache is off, NULL when on */
} gpumem__regcache_counts;
void gpumem__regcache_counts_get(gpumem__regcache_counts *out);

/* ---- query.c ---- */
/* One sentence on what CUDA says an address gpumem does not own is, with the release call
 * that matches it: a hint at where a foreign pointer came from. May start the backend. */
const char *gpumem__cuda_says(const void *p);

/* ---- alloc.c ---- */
/* 1 when GPUMEM_FAIL_ALLOC says this allocation is the one to fail (counts every call). */
int gpumem__fail_injected(void);
/* Starts a checkpoint epoch: every allocation ordered after this call gets a sequence number
 * at least the value returned (numbers are taken in blocks per thread, alloc.c). */
uint64_t gpumem__seq_checkpoint(void);
/* Takes the next sequence number, for an allocation made outside alloc.c (pool blocks). */
uint64_t gpumem__seq_take(void);

/* ---- checkpoint.c ---- */
/* gpumem's live device-resident bytes (device and device-async kinds, pool blocks included)
 * on each device, by statistics slot (gpumem__dev_slot). Walks the registry: not for hot
 * paths. */
void gpumem__device_resident(uint64_t bytes[GPUMEM_STATS_DEVICES]);
/* Adds to e's message the free/total of device (-1: the caller's current device), gpumem's live
 * bytes by kind and by device, and the largest holders (out-of-memory context). */
void gpumem__err_oom(gpumem_error *e, int device);

/* ---- stats.c: byte peaks (counts and totals are the registry's) ---- */
void gpumem__stats_alloc(int kind, int device, uint64_t bytes);
void gpumem__stats_release(int kind, int device, uint64_t bytes);
/* Peak bytes of a kind (0: every kind): one atomic load, safe in a signal handler. */
uint64_t gpumem__stats_peak(int kind);
/* The same with the calling thread's bytes not yet added to the shared counters added first,
 * and never below the shared current total: for a report at the end, when no flush may come
 * again. Atomics only: safe in a signal handler. */
uint64_t gpumem__stats_peak_now(int kind);

/* ---- report.c: live allocations grouped by call site ---- */
typedef struct gpumem__group {
    gpumem_site site;
    int kind;
    int device;     /* the device of the allocations (pinned: current at allocation) */
    uint32_t stack; /* groups differ by stack too when stacks are kept */
    uint64_t count;
    uint64_t bytes;
    uint64_t first_seq[5]; /* the smallest sequence numbers, ascending */
} gpumem__group;
/* Groups the live allocations with seq > min_seq by call site, kind and device, sorted by bytes
 * (largest first). Returns the number of groups and sets *groups (free() it), or -1 when out
 * of host memory. *skipped counts registry shards that could not be read (try_only). */
long gpumem__group_live(uint64_t min_seq, int try_only, gpumem__group **groups, int *skipped);
/* As gpumem__group_live with try_only, async-signal-safe: the groups are in memory from mmap,
 * of *map_bytes bytes, given back with gpumem__group_unmap. */
long gpumem__group_live_mapped(gpumem__group **groups, size_t *map_bytes, int *skipped);
void gpumem__group_unmap(gpumem__group *groups, size_t map_bytes);
/* Registers the exit-time report (called once, at initialization). */
void gpumem__report_at_exit_setup(void);
/* Turns the library's own exit-time report off: `gpumem check` writes its own. */
void gpumem__report_at_exit_disable(void);

/* ---- errors.c: the per-thread record and the handler ---- */
gpumem_error *gpumem__err_begin(int code, const char *expr, gpumem_site site);
/* The calling thread's record, as it stands (gpumem_last_error's, writable). */
gpumem_error *gpumem__err_record(void);
void gpumem__err_cuda(gpumem_error *e, int cuda_error);
void gpumem__err_alloc(gpumem_error *e, const gpumem__rec *r);
/* Appends to e->message (printf-style); truncates safely. */
void gpumem__err_append(gpumem_error *e, const char *fmt, ...) GPUMEM__FORMAT(2, 3);
/* When e->code is GPUMEM_ESTICKY, appends what that means for the process and returns 1;
 * else returns 0. */
int gpumem__err_sticky_hint(gpumem_error *e);
/* Appends the "allocated at FILE:LINE (FUNC), thread T, #SEQ" line of r. */
void gpumem__err_alloc_site(gpumem_error *e, const gpumem__rec *r);
/* Calls the handler; returns e->code. */
int gpumem__err_raise(gpumem_error *e);
/* The end of a public function that wrote to the caller's stream out: flushes it and, when
 * that or an earlier write failed (write_error: an errno already seen, else 0), raises
 * GPUMEM_EIO for fn with the reason. Returns GPUMEM_OK or GPUMEM_EIO. */
int gpumem__err_stream(FILE *out, int write_error, const char *fn);
/* Resets the record's code to GPUMEM_OK (a call that returned without failing). */
void gpumem__err_clear(void);
/* Maps a cudaError_t from an allocation to a gpumem status. */
int gpumem__status_from_cuda(int cuda_error);
/* "main.c:42 (solve)" into buf. */
const char *gpumem__site_str(gpumem_site s, char *buf, size_t n);

#endif

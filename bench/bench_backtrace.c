/* bench_backtrace: what a backtrace costs an allocation.
 *
 * Capture (gpumem__stack_capture, what GPUMEM_BACKTRACE=1 adds to each allocation) for stacks
 * of depth 5, 20 and 50 below the benchmark's own frames: a stack seen for the first time (one
 * malloc and an insert) and a stack already seen (the common case: allocations repeat their
 * call sites). For comparison, the bare unwinders on the same stacks: libunwind's
 * unw_backtrace (when gpumem was built with it) and glibc's backtrace().
 *
 * Symbolization (gpumem__stack_frames, what a report pays, once per stack): the very first
 * call in the process (libdw reads the process's objects and their debug info), a new stack
 * with one address never looked up (libdw), the first use of a new stack whose addresses
 * were all seen in other stacks (the per-address cache), and a stack already symbolized.
 *
 * Distinct stacks come from walk(): at each level one of four call sites, chosen by two bits
 * of a key, so key k gives stack k. Distinct addresses for the per-address cost come from
 * top(), whose 64 call sites are 64 return addresses.
 *
 * Usage: bench_backtrace [--quick]. Prints markdown tables and `RESULT ...` lines. Exits 1 if
 * the stack table ever answers wrongly (equal keys, different ids or the reverse). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "bench_util.h"

#if defined(GPUMEM_HAVE_LIBUNWIND)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define NOINLINE __attribute__((noinline))

enum { MODE_CAPTURE, MODE_UNWIND_LIBUNWIND, MODE_UNWIND_GLIBC };

static int mode;
static int (*glibc_backtrace)(void **, int);
static volatile uint32_t sink[4 + 64];
static int failures;

static uint32_t leaf(void)
{
    void *raw[GPUMEM__STACK_MAX_FRAMES + 1];
    switch (mode) {
    case MODE_CAPTURE:
        return gpumem__stack_capture(0);
#if defined(GPUMEM_HAVE_LIBUNWIND)
    case MODE_UNWIND_LIBUNWIND:
        return (uint32_t)unw_backtrace(raw, GPUMEM__STACK_MAX_FRAMES + 1);
#endif
    default:
        return (uint32_t)glibc_backtrace(raw, GPUMEM__STACK_MAX_FRAMES + 1);
    }
}

/* Each case stores to its own sink after the call, so the compiler cannot merge the four
 * calls into one (which would make every key the same stack). */
NOINLINE static uint32_t walk(int depth, uint64_t key)
{
    uint32_t r;
    if (depth == 0)
        return leaf();
    switch (key & 3) {
    case 0:
        r = walk(depth - 1, key >> 2);
        sink[0] = r;
        break;
    case 1:
        r = walk(depth - 1, key >> 2);
        sink[1] = r;
        break;
    case 2:
        r = walk(depth - 1, key >> 2);
        sink[2] = r;
        break;
    default:
        r = walk(depth - 1, key >> 2);
        sink[3] = r;
        break;
    }
    return r;
}

#define CASE(k)                                                                                  \
    case k:                                                                                      \
        r = walk(depth, 0);                                                                      \
        sink[4 + k] = r;                                                                         \
        break;
#define CASE8(k) CASE(k) CASE(k + 1) CASE(k + 2) CASE(k + 3) CASE(k + 4) CASE(k + 5) CASE(k + 6) CASE(k + 7)

/* 64 call sites: site s adds one return address no other stack has. */
NOINLINE static uint32_t top(int site, int depth)
{
    uint32_t r = 0;
    switch (site) {
        CASE8(0) CASE8(8) CASE8(16) CASE8(24) CASE8(32) CASE8(40) CASE8(48) CASE8(56)
    }
    return r;
}

/* ns per call of walk(depth, key) for `n` keys: key0 + i (new stacks) or key0 always. */
static double time_walk(int depth, uint64_t key0, long n, int fresh, uint32_t *ids)
{
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        uint32_t id = walk(depth, fresh ? key0 + (uint64_t)i : key0);
        if (ids)
            ids[i] = id;
    }
    return (double)(bench_now_ns() - t0) / (double)n;
}

/* ids[i] = the stack of walk(depth, keys[i]), all from one call site (so that equal keys
 * are equal stacks: another call site in main would be another stack). */
NOINLINE static void capture_keys(int depth, const uint64_t *keys, long n, uint32_t *ids)
{
    for (long i = 0; i < n; i++)
        ids[i] = walk(depth, keys[i]);
}

static double median_of(double *v, int n)
{
    return bench_median(v, (size_t)n);
}

typedef struct {
    int depth;
    uint64_t key;
    long n;
    pthread_barrier_t *start;
    uint64_t t0, t1;
} worker;

static void *seen_worker(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    w->t0 = bench_now_ns();
    time_walk(w->depth, w->key, w->n, 0, NULL);
    w->t1 = bench_now_ns();
    return NULL;
}

/* Aggregate ns per capture of an already-seen stack on `threads` threads at once. */
static double seen_threads(int depth, long n, int threads)
{
    pthread_t t[64];
    worker w[64];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int i = 0; i < threads; i++) {
        w[i] = (worker){.depth = depth, .key = 7, .n = n, .start = &start};
        pthread_create(&t[i], NULL, seen_worker, &w[i]);
    }
    uint64_t t0 = UINT64_MAX, t1 = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        t0 = w[i].t0 < t0 ? w[i].t0 : t0;
        t1 = w[i].t1 > t1 ? w[i].t1 : t1;
    }
    pthread_barrier_destroy(&start);
    return (double)(t1 - t0) / (double)(n * threads);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    int reps = quick ? 3 : 7;
    long seen_n = quick ? 20000 : 200000;
    long fresh_n = quick ? 1000 : 10000;
    static const int depths[] = {5, 20, 50};
    char cpu[256];

    /* glibc's own backtrace(): with libunwind linked in, the name `backtrace` may bind to
     * libunwind's copy, so ask libc for it by name. */
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    void *sym = libc ? dlsym(libc, "backtrace") : NULL;
    if (sym) /* POSIX's way to turn dlsym's answer into a function pointer */
        memcpy(&glibc_backtrace, &sym, sizeof sym);

    /* Before anything else: the first symbolization in the process. */
    mode = MODE_CAPTURE;
    uint32_t id0 = top(0, 20);
    gpumem__frame f0[GPUMEM__STACK_MAX_FRAMES];
    uint64_t t_first = bench_now_ns();
    int frames0 = gpumem__stack_frames(id0, f0, GPUMEM__STACK_MAX_FRAMES);
    double first_call_us = (double)(bench_now_ns() - t_first) / 1000.0;

    printf("# bench_backtrace\n\nbacktraces: %s; CPU: %s, %ld cores; %s mode\n\n",
           gpumem__stack_backend(), bench_cpu_model(cpu, sizeof cpu), bench_cores(),
           quick ? "quick" : "full");

    /* ---- capture ---- */
    printf("## Capture, ns per allocation (median of %d runs)\n\n", reps);
    printf("| depth | frames kept | first capture (new stack) | already-seen stack | "
           "already seen, 2 threads (aggregate) | bare unw_backtrace | bare glibc backtrace() |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    uint64_t next_key = 1u << 20; /* keys below are the already-seen ones */
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
        int depth = depths[d];
        /* Depth 5 has only 4^5 = 1024 distinct stacks. */
        long n_new = depth == 5 ? 1000 : fresh_n;
        double v_new[16], v_seen[16], v_thr[16], v_lu[16], v_gl[16];
        uint32_t *ids = malloc((size_t)n_new * sizeof *ids);
        for (int r = 0; r < reps; r++) {
            mode = MODE_CAPTURE;
            /* depth 5: keys must stay below 4^5; each run new keys in a fresh subtree is not
             * possible, so runs after the first re-use the table: skip them. */
            uint64_t key0 = depth == 5 ? 0 : next_key;
            if (depth != 5 || r == 0) {
                v_new[r] = time_walk(depth, key0, n_new, 1, ids);
                next_key += (uint64_t)n_new;
                for (long i = 1; i < n_new; i++)
                    if (ids[i] == 0 || ids[i] == ids[i - 1]) {
                        failures++;
                        break;
                    }
            } else {
                v_new[r] = v_new[0];
            }
            uint64_t same[2] = {7, 7};
            uint32_t same_ids[2];
            capture_keys(depth, same, 2, same_ids);
            if (same_ids[0] != same_ids[1] || same_ids[0] == 0)
                failures++;
            v_seen[r] = time_walk(depth, 7, seen_n, 0, NULL);
            v_thr[r] = seen_threads(depth, seen_n / 2, 2);
#if defined(GPUMEM_HAVE_LIBUNWIND)
            mode = MODE_UNWIND_LIBUNWIND;
            v_lu[r] = time_walk(depth, 7, seen_n, 0, NULL);
#else
            v_lu[r] = 0;
#endif
            mode = MODE_UNWIND_GLIBC;
            v_gl[r] = glibc_backtrace ? time_walk(depth, 7, seen_n / 10, 0, NULL) : 0;
        }
        free(ids);
        mode = MODE_CAPTURE;
        gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
        uint64_t key7 = 7;
        uint32_t id7;
        capture_keys(depth, &key7, 1, &id7);
        int kept = gpumem__stack_frames(id7, f, GPUMEM__STACK_MAX_FRAMES);
        double m_new = median_of(v_new, reps), m_seen = median_of(v_seen, reps),
               m_thr = median_of(v_thr, reps), m_lu = median_of(v_lu, reps),
               m_gl = median_of(v_gl, reps);
        printf("| %d | %d | %.0f | %.0f | %.0f | %.0f | %.0f |\n", depth, kept, m_new, m_seen,
               m_thr, m_lu, m_gl);
        printf("RESULT bench=backtrace op=capture depth=%d frames=%d new_ns=%.1f seen_ns=%.1f "
               "seen_2threads_ns=%.1f unw_backtrace_ns=%.1f glibc_backtrace_ns=%.1f\n",
               depth, kept, m_new, m_seen, m_thr, m_lu, m_gl);
    }

    /* ---- symbolization ---- */
    mode = MODE_CAPTURE;
    gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
    /* New addresses: top(s, 20) for s = 1..63 differ from stacks already symbolized in
     * exactly one return address (top's call site). */
    double new_pc[64];
    int n_new_pc = 0;
    for (int s = 1; s < 64; s++) {
        uint32_t id = top(s, 20);
        uint64_t t1 = bench_now_ns();
        int n = gpumem__stack_frames(id, f, GPUMEM__STACK_MAX_FRAMES);
        new_pc[n_new_pc++] = (double)(bench_now_ns() - t1);
        if (n != frames0)
            failures++;
    }
    double m_new_pc_stack = median_of(new_pc, n_new_pc);

    /* New stacks of known addresses: the first four keys use one case of walk at every
     * level (all 0, 1, 2, 3), so after them every return address of walk and of
     * capture_keys is cached, and the other keys make new stacks of those addresses. */
    long n_known = quick ? 200 : 2000;
    uint64_t *keys = malloc((size_t)(n_known + 4) * sizeof *keys);
    uint32_t *kid = malloc((size_t)(n_known + 4) * sizeof *kid);
    keys[0] = 0;
    keys[1] = 0x5555555555u;
    keys[2] = 0xaaaaaaaaaau;
    keys[3] = 0xffffffffffu;
    for (long i = 0; i < n_known; i++)
        keys[4 + i] = (uint64_t)(1u << 30) + (uint64_t)i * 7919u;
    capture_keys(20, keys, n_known + 4, kid);
    for (int i = 0; i < 4; i++)
        gpumem__stack_frames(kid[i], f, GPUMEM__STACK_MAX_FRAMES);
    kid += 4;
    uint64_t t0 = bench_now_ns();
    long frames_known = 0;
    for (long i = 0; i < n_known; i++)
        frames_known += gpumem__stack_frames(kid[i], f, GPUMEM__STACK_MAX_FRAMES);
    double known_ns_frame = (double)(bench_now_ns() - t0) / (double)frames_known;

    /* Cached: the same stacks again. */
    double cached[16];
    for (int r = 0; r < reps; r++) {
        t0 = bench_now_ns();
        long fr = 0;
        for (long i = 0; i < n_known; i++)
            fr += gpumem__stack_frames(kid[i], f, GPUMEM__STACK_MAX_FRAMES);
        cached[r] = (double)(bench_now_ns() - t0) / (double)fr;
    }
    double cached_ns_frame = median_of(cached, reps);
    free(kid - 4);
    free(keys);

    printf("\n## Symbolization (gpumem__stack_frames; depth-20 stacks, %d frames kept)\n\n",
           frames0);
    printf("| what | cost |\n|---|---:|\n");
    printf("| first call in the process (opens every object's debug info) | %.0f us |\n",
           first_call_us);
    printf("| a new stack with one address never looked up (libdw), %d frames | %.1f us per "
           "stack |\n", frames0, m_new_pc_stack / 1000.0);
    printf("| a new stack whose addresses were all looked up before | %.0f ns per frame |\n",
           known_ns_frame);
    printf("| a stack already symbolized (cached) | %.1f ns per frame |\n", cached_ns_frame);
    printf("RESULT bench=backtrace op=symbolize first_call_us=%.1f one_new_address_stack_ns=%.1f "
           "known_addresses_ns_per_frame=%.1f cached_ns_per_frame=%.2f\n",
           first_call_us, m_new_pc_stack, known_ns_frame, cached_ns_frame);
    if (failures)
        fprintf(stderr, "bench_backtrace: the stack table answered wrongly %d times\n", failures);
    return failures ? 1 : 0;
}

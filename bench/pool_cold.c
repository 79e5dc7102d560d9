/* pool_cold: a recorded allocation stream replayed into one device pool with the CPU's caches
 * made cold before each operation, for a cache simulator to count what one pool operation reads
 * (valgrind --tool=cachegrind; docs/perf/pools-2026-12-06f-h200.md) and for a timer to see what
 * it costs cold. `gpumem bench --replay --cold` times the same, but also reads each pool's
 * statistics after every operation in a pass of its own, which a cache count would include.
 *
 * Linked to the shared library, as the Python package loads it, so that the library's
 * thread-local variables are reached as they are there (through __tls_get_addr).
 *
 * The stream (a replay log or a trace, as --replay reads) is replayed --passes times (default 2)
 * on one thread, each time released in full at its end; before each operation, --cold BYTES of a
 * buffer are written (a byte a cache line; default 1 MiB, 0: none). Prints the operations and
 * the mean ns an operation over the passes after the first (which makes the pool's memory and
 * records). What one operation reads, without the start and the end of the program: a count
 * with N + 1 passes less one with N, over the operations of one pass.
 *
 * Usage: pool_cold FILE [--cold BYTES] [--passes N] [--design vmm|segments|classes]
 * Exit status: 0; 1 when the file cannot be read or an operation failed; 2 for a usage error. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpumem.h"
#include "replay.h"

static unsigned char *cold_buf;
static size_t cold_bytes = (size_t)1 << 20;

/* Not inlined: a cache count then shows the writes under this function's name alone. */
__attribute__((noinline)) static void make_cold(void)
{
    for (size_t k = 0; k < cold_bytes; k += 64)
        cold_buf[k]++;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int usage(const char *why)
{
    fprintf(stderr, "pool_cold: error: %s\nusage: pool_cold FILE [--cold BYTES] [--passes N] "
                    "[--design vmm|segments|classes]\n", why);
    return 2;
}

/* The recording's stream i: on the simulated device a handle of its own (handles are only
 * compared there); on a GPU the default stream, for every stream: this program counts, it does
 * not reproduce the recording's stream order. */
static cudaStream_t stream_of(int i)
{
    static int sim = -1;
    if (sim < 0)
        sim = strcmp(gpumem_backend(), "sim") == 0;
    return sim ? (cudaStream_t)(uintptr_t)(0x1000 * (i + 1)) : NULL;
}

/* One replay of t into pool; the ns its operations took, or 0 with *failed set. */
static uint64_t replay_once(gpumem_pool *pool, const replay_trace *t, void **slot, int *failed)
{
    uint64_t in_ops = 0;
    for (size_t i = 0; i < t->n && !*failed; i++) {
        const replay_op *op = &t->ops[i];
        if (cold_bytes)
            make_cold();
        cudaStream_t stream = stream_of(op->stream);
        uint64_t t0 = now_ns();
        if (op->alloc)
            *failed = !(slot[op->slot] = gpumem_pool_alloc(pool, 1, op->bytes, stream));
        else if (slot[op->slot])
            *failed = gpumem_free_async(slot[op->slot], stream) != GPUMEM_OK;
        in_ops += now_ns() - t0;
        if (!op->alloc)
            slot[op->slot] = NULL;
    }
    for (size_t s = 1; s <= t->nslots; s++) /* what the recording never released */
        if (slot[s]) {
            gpumem_free_async(slot[s], stream_of(0));
            slot[s] = NULL;
        }
    return in_ops;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argv[1][0] == '-')
        return usage("a replay log or trace first");
    uint32_t design = GPUMEM_POOL_DESIGN_VMM;
    long passes = 2;
    for (int i = 2; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--cold") == 0 && i + 1 < argc) {
            cold_bytes = (size_t)strtoull(argv[++i], &end, 10);
            if (!*argv[i] || *end)
                return usage("--cold takes a number of bytes");
        } else if (strcmp(argv[i], "--passes") == 0 && i + 1 < argc) {
            passes = strtol(argv[++i], &end, 10);
            if (!*argv[i] || *end || passes < 2)
                return usage("--passes takes a number, 2 or more");
        } else if (strcmp(argv[i], "--design") == 0 && i + 1 < argc) {
            const char *d = argv[++i];
            design = strcmp(d, "vmm") == 0        ? GPUMEM_POOL_DESIGN_VMM
                     : strcmp(d, "segments") == 0 ? GPUMEM_POOL_DESIGN_SEGMENTS
                     : strcmp(d, "classes") == 0  ? GPUMEM_POOL_DESIGN_CLASSES
                                                  : 0;
            if (!design)
                return usage("--design is vmm, segments or classes");
        } else {
            return usage("unknown option, or an option without its value");
        }
    }
    replay_trace t;
    char err[300];
    if (replay_load(argv[1], &t, err, sizeof err) != 0) {
        fprintf(stderr, "pool_cold: error: %s\n", err);
        return 1;
    }
    cold_buf = calloc(1, cold_bytes + 64);
    void **slot = calloc(t.nslots + 1, sizeof *slot);
    gpumem_pool_options_t o = {.design = design};
    gpumem_pool *pool = cold_buf && slot ? gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, &o) : NULL;
    int failed = !pool;
    replay_once(pool, &t, slot, &failed); /* the first: the pool's memory and records made */
    uint64_t ns = 0;
    for (long p = 1; p < passes && !failed; p++)
        ns += replay_once(pool, &t, slot, &failed);
    if (failed)
        fprintf(stderr, "pool_cold: error: %s\n", gpumem_last_error()->message);
    else
        printf("%zu operations, %ld passes, %.0f ns an operation after the first (caches made "
               "cold: %zu bytes written before each)\n", t.n, passes,
               (double)ns / (double)(t.n ? t.n : 1) / (double)(passes - 1), cold_bytes);
    gpumem_pool_destroy(pool);
    free(slot);
    free(cold_buf);
    replay_free(&t);
    return failed ? 1 : 0;
}

/* bench_reach: what gpumem check's leak scan (tools/check/reach.c) costs at exit, by how much
 * writable memory the process has mapped.
 *
 *   bench_reach [GIB...]      (default 1 2 4)
 *
 * For each size, maps that much anonymous memory and fills every page (so that all of it is
 * resident and read: the scan skips pages never touched), with words that look like data
 * (small integers, heap-like pointers) and, at a few places, pointers into the targets. The
 * targets stand for the live CUDA allocations at exit: 10 000 ranges of 64 KiB to 4 MiB at
 * addresses where nothing is mapped (16 TiB up). Host memory stands in for a program's heap; no GPU is needed (the
 * scan never reads device memory). Prints the seconds per scan (best of 3), per 4 GiB, and
 * for scale the best of 3 plain sums of the same memory (how fast this machine reads it now). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "reach.h"

#define TARGETS 10000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double sizes[16] = {1, 2, 4};
    int nsizes = 3;
    if (argc > 1) {
        nsizes = 0;
        for (int i = 1; i < argc && nsizes < 16; i++)
            sizes[nsizes++] = atof(argv[i]);
    }
    static check_span targets[TARGETS];
    static unsigned char reached[TARGETS];
    uint64_t x = 88172645463325252ull;
    uintptr_t at = 0x100000000000ull; /* where nothing of this process is mapped */
    for (int i = 0; i < TARGETS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t bytes = (size_t)64 << 10 << (x % 7); /* 64 KiB .. 4 MiB */
        targets[i] = (check_span){at, at + bytes};
        at += bytes + ((size_t)2 << 20);
    }
    printf("%-5s %-5s %-10s %-10s %-10s %-14s %s\n", "GiB", "data", "scanned", "seconds",
           "s/4GiB", "sum alone, s", "reached");
    for (int run = 0; run < 2 * nsizes; run++) {
        int s = run / 2, near = run % 2;
        size_t bytes = (size_t)(sizes[s] * (double)(1ull << 30));
        uintptr_t *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
            fprintf(stderr, "bench_reach: cannot map %.1f GiB\n", sizes[s]);
            return 1;
        }
        size_t words = bytes / sizeof *mem;
        for (size_t i = 0; i < words; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* far: heap-like pointers and small integers, outside the ranges' span (as most
             * words of a program are); near: every fourth word inside that span, in the gaps
             * between the ranges (the worst case: each costs the bitmap and a bisection, and
             * nothing is reached, so the scan cannot stop early). */
            uintptr_t ptr = near ? targets[x % TARGETS].hi + ((x >> 20) % (2u << 20))
                                 : 0x555555554000ull + (x & 0xffffff8);
            mem[i] = (i & 3) == 0 ? ptr : (x & 0xffff);
        }
        for (int i = 0; i < TARGETS; i += 2) /* half of them are pointed at */
            mem[((size_t)i * 7919) % words] = targets[i].lo + 8;
        double best = 1e9;
        long long scanned = 0;
        int got = 0;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            /* The targets themselves are not the program's pointers (gpumem check skips its
             * own records the same way). */
            check_span skip = {(uintptr_t)targets, (uintptr_t)(targets + TARGETS)};
            scanned = check_reach_scan(targets, TARGETS, reached, &skip, 1, 0);
            double t = now() - t0;
            best = t < best ? t : best;
        }
        for (int i = 0; i < TARGETS; i++)
            got += reached[i];
        /* For scale: only reading the same memory (a sum of its words), as busy as the machine
         * is at the moment. */
        double sum_best = 1e9;
        volatile uintptr_t sink = 0;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            uintptr_t sum = 0;
            for (size_t i = 0; i < words; i++)
                sum += mem[i];
            sink = sum;
            double t = now() - t0;
            sum_best = t < sum_best ? t : sum_best;
        }
        (void)sink;
        printf("%-5.1f %-5s %-10.2f %-10.3f %-10.3f %-14.3f %d of %d%s\n", sizes[s], near ? "near" : "far",
               (double)scanned / (double)(1ull << 30), best,
               best / ((double)scanned / (double)(4ull << 30)), sum_best, got, TARGETS,
               got == TARGETS / 2 ? "" : "  (expected half)");
        munmap(mem, bytes);
    }
    return 0;
}

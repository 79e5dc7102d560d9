/* bench_reach: what gpumem check's leak scan (tools/check/reach.c) costs at exit, by how much
 * writable memory the process has mapped.
 *
 *   bench_reach [GIB...]      (default 1 2 4)
 *
 * For each size, starts a thread with a stack that large (the scan reads data, bss and stacks,
 * not the heap), which waits while the bench fills every page of it but its own top frames
 * (so that all of it is resident and read: the scan skips pages never touched), with words
 * that look like data
 * (small integers, heap-like pointers) and, at a few places, pointers into the targets. The
 * targets stand for the live CUDA allocations at exit: 10 000 ranges of 64 KiB to 4 MiB at
 * addresses where nothing is mapped (16 TiB up). Host memory stands in for a program's heap; no GPU is needed (the
 * scan never reads device memory). Prints the seconds per scan (best of 3), per 4 GiB, and
 * for scale the best of 3 plain sums of the same memory (how fast this machine reads it now). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reach.h"

#define TARGETS 10000

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!done)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
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
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, bytes + ((size_t)1 << 20));
        pthread_t th;
        done = 0;
        if (pthread_create(&th, &attr, waiter, NULL) != 0) {
            fprintf(stderr, "bench_reach: cannot start a thread with a %.1f GiB stack\n", sizes[s]);
            return 1;
        }
        pthread_attr_destroy(&attr);
        void *stack_lo;
        size_t stack_size;
        pthread_getattr_np(th, &attr);
        pthread_attr_getstack(&attr, &stack_lo, &stack_size);
        pthread_attr_destroy(&attr);
        uintptr_t *mem = stack_lo; /* the lowest GiBs; the thread's frames are at the top */
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
            scanned = check_reach_scan(targets, TARGETS, reached, NULL, &skip, 1, 0, 0);
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
        pthread_mutex_lock(&lock);
        done = 1;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        pthread_join(th, NULL);
    }
    return 0;
}

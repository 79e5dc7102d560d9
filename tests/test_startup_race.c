/* Start-up under threads: the CUDA backend fails to start (no driver), and while other threads
 * make their first gpumem calls the program chooses the simulated device. Every call either
 * fails with GPUMEM_ENODEV (and CUDA's reason) or succeeds; once the choice is made, every
 * thread's allocations succeed. Run under ThreadSanitizer (scripts/torture) this also holds
 * the start-up to being free of data races. Each round is a fresh process.
 *
 * Measured 2026-12-01 on the 2-core development machine, 100 rounds under ThreadSanitizer:
 * with the backend pointer a plain one and the start-up error read without the lock, 94 and
 * 86 of 100 children (two runs) ended with a data race report (backend_start's write of the
 * pointer against gpumem_backend's and the first calls' reads); now 0 of 100. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpumem.h"
#include "harness.h"

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Until the simulated device is chosen, or 30 s: a bound in time, not in tries, since on a
 * loaded machine (tests run two a core) the main thread that chooses it may wait long for a
 * core while these spin (100 000 tries, about 0.1 s, once ran out so). */
static void *first_calls(void *arg)
{
    (void)arg;
    for (double end = now_s() + 30.0; now_s() < end;) {
        void *p = gpumem_device_alloc(1, 4096);
        if (p) {
            return gpumem_free(p) == GPUMEM_OK ? (void *)1 : NULL;
        }
        int code = gpumem_last_error()->code;
        if (code != GPUMEM_ENODEV || !strstr(gpumem_last_error()->message, "no usable CUDA"))
            return NULL;
        (void)gpumem_backend();
    }
    return NULL; /* never saw the simulated device */
}

static int child(void)
{
    gpumem_set_error_handler(quiet, NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, first_calls, NULL) != 0)
            return 11;
    if (gpumem_init() != GPUMEM_ENODEV)
        return 12;
    if (gpumem_backend_select("sim") != GPUMEM_OK)
        return 13;
    int bad = 0;
    for (int i = 0; i < 4; i++) {
        void *ok = NULL;
        pthread_join(t[i], &ok);
        bad += ok == NULL;
    }
    return bad ? 14 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    setenv("GPUMEM_BACKEND", "cuda", 1);
    setenv("GPUMEM_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    setenv("GPUMEM_LEAK_REPORT", "off", 1);
    int failed = 0;
    for (int r = 0; r < rounds; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            execl(argv[0], argv[0], "child", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && ++failed <= 3)
            fprintf(stderr, "round %d: child status 0x%x\n", r, st);
    }
    fprintf(stderr, "%d rounds, %d failed\n", rounds, failed);
    EXPECT_EQ(failed, 0);
    return harness_exit();
}

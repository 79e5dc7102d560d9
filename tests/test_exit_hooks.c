/* exit() from a signal handler at a random point of every call gpumem hooks: a child's three
 * threads copy large pageable buffers to and from the device (the registration cache registers
 * them, evicts them at its limit, and its own thread registers what copies queued), release
 * them with free, realloc and reallocarray, copy mapped memory and release it with madvise,
 * mremap and munmap, and allocate and free device memory; the parent signals the child at a
 * random moment, and the handler calls exit(). The exit then runs wherever the signal landed:
 * inside a release hook holding the cache's lock, inside the cache's registration, inside the
 * simulated device holding its lock. The child's own exit handlers release cached buffers (as
 * a C++ destructor would), one registered before the cache's exit handler and one after. Every
 * child must be gone within a bound. Before: a release at exit, or the cache's exit handler,
 * waited for ever on the cache's lock, which the interrupted thread held (5 of 100 children
 * hung; small buffers and a small cache make the cache's work, and its lock, frequent).
 *
 * First, without a signal, exit()'s order (child_exit_order, below).
 *
 * `test_exit_hooks [ROUNDS]` (default 200); `test_exit_hooks child` and `order` are the
 * children. Exits 77 where the cache is off (sanitizer builds have no release hooks). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child_rounds.h"
#include "gpumem.h"
#include "harness.h"
#include "internal.h"

#define BUF (256 * 1024) /* cached (GPUMEM_COPY_STAGE_MIN=256KiB), four fit in the 1 MiB limit */

static void on_signal(int sig)
{
    (void)sig;
    exit(3);
}

static unsigned char *at_exit_early, *at_exit_late;

static void release_early(void)
{
    free(at_exit_early); /* runs after the cache's exit handler */
}

static void release_late(void)
{
    free(at_exit_late); /* runs before it */
}

/* A page-aligned buffer copied to the device and back: the cache queues it, then hits it. */
static unsigned char *cached(void *dev)
{
    unsigned char *p = aligned_alloc(4096, BUF);
    if (!p)
        return NULL;
    memset(p, 0x5a, BUF);
    gpumem_copy(dev, p, BUF);
    gpumem_copy(p, dev, BUF);
    return p;
}

/* One round of every hooked call. */
static void hooked_calls(void *dev, unsigned i)
{
    unsigned char *p = cached(dev);
    if (p) {
        if (i % 3 == 0) {
            free(p);
        } else if (i % 3 == 1) {
            unsigned char *q = realloc(p, BUF + 4096);
            free(q ? q : p);
        } else {
            unsigned char *q = reallocarray(p, 2, BUF);
            free(q ? q : p);
        }
    }
    void *m = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return;
    gpumem_copy(dev, m, BUF);
    gpumem_copy(m, dev, BUF);
    if (i % 3 == 0) {
        madvise(m, BUF, MADV_DONTNEED);
    } else if (i % 3 == 1) {
        void *bigger = mremap(m, BUF, 2 * BUF, MREMAP_MAYMOVE);
        if (bigger != MAP_FAILED) {
            munmap(bigger, 2 * BUF);
            m = NULL;
        }
    }
    if (m)
        munmap(m, BUF);
    void *d = gpumem_device_alloc(1, 4096);
    gpumem_free(d);
}

static void *worker(void *dev)
{
    for (unsigned i = 0;; i++)
        hooked_calls(dev, i);
    return NULL;
}

static int child(void)
{
    void *dev[3];
    for (int i = 0; i < 3; i++)
        if ((dev[i] = gpumem_device_alloc(1, BUF)) == NULL)
            return 10;
    at_exit_early = aligned_alloc(4096, BUF);
    atexit(release_early);
    gpumem_copy(dev[0], at_exit_early, BUF); /* the cache's exit handler comes with this */
    gpumem_copy(at_exit_early, dev[0], BUF);
    gpumem__regcache_settle();
    at_exit_late = cached(dev[0]);
    atexit(release_late);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    for (int i = 1; i < 3; i++)
        if (pthread_create(&t, NULL, worker, dev[i]) != 0)
            return 11;
    if (write(STDOUT_FILENO, "r", 1) != 1)
        return 12;
    worker(dev[0]);
    return 0;
}

/* exit() tells the cache the process is ending before any exit handler runs: a release from
 * a handler registered after the cache's own (which runs before it) leaves its range
 * registered for the driver's teardown instead of calling the driver, which a thread the
 * signal interrupted may be inside. Before: the range was unregistered through the driver. */
static unsigned char *at_exit_range;

static void release_and_look(void)
{
    volatile uintptr_t range = (uintptr_t)at_exit_range; /* only the address is asked after */
    free(at_exit_range);
    _exit(gpumem__sim_registered((const void *)range) ? 0 : 20);
}

static int child_exit_order(void)
{
    void *dev = gpumem_device_alloc(1, BUF);
    if (!dev)
        return 10;
    at_exit_range = cached(dev); /* registered by the cache's thread after the first copy */
    gpumem__regcache_settle();
    gpumem_copy(dev, at_exit_range, BUF);
    if (!at_exit_range || !gpumem__sim_registered(at_exit_range))
        return 11;
    atexit(release_and_look); /* after the cache's exit handler: runs before it */
    exit(3);
}

/* The child of child_exit_order ends with 0 when its range was left registered. */
static int exit_order_status(const char *self)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "order", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int cache_on(void)
{
    gpumem__init_once(); /* the options */
    gpumem__regcache_counts c;
    gpumem__regcache_counts_get(&c);
    if (c.off_reason)
        printf("the registration cache is off here (%s): skipped\n", c.off_reason);
    return c.off_reason == NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    if (argc > 1 && strcmp(argv[1], "order") == 0)
        return child_exit_order();
    if (!cache_on())
        return 77;
    EXPECT_EQ(exit_order_status(argv[0]), 0);
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    putenv("GPUMEM_LEAK_REPORT=off");
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int hung = 0, odd = 0;
    double worst = 0;
    for (int round = 0; round < rounds; round++) {
        int ready;
        pid_t pid = rounds_start(argv[0], &ready);
        if (pid < 0) {
            perror("pipe");
            return 1;
        }
        if (ready)
            kill(pid, SIGUSR1);
        int status;
        double took;
        int ended = rounds_wait(pid, 5.0, &status, &took);
        worst = took > worst ? took : worst;
        if (!ended) {
            if (hung == 0)
                rounds_show_stacks(pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            if (++hung <= 3)
                fprintf(stderr, "round %d: child %ld hung in its exit\n", round, (long)pid);
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 3) && ++odd <= 3) {
            fprintf(stderr, "round %d: child ended with status 0x%x\n", round, status);
        }
    }
    fprintf(stderr, "%d rounds: %d hung, %d odd exits; slowest exit %.3f s\n", rounds, hung, odd,
            worst);
    EXPECT_EQ(hung, 0);
    EXPECT_EQ(odd, 0);
    EXPECT_LE(worst * 1000, 4000); /* seconds on a loaded 2-core machine */
    return harness_exit();
}

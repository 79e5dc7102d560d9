/* What the signal tests share: a round starts the test program again as its "child", which
 * says on its standard output when it is ready to be signalled; the parent then waits for it,
 * with a time limit. Header-only, for tests that define _GNU_SOURCE (or _POSIX_C_SOURCE). */
#ifndef GPUMEM_TESTS_CHILD_ROUNDS_H
#define GPUMEM_TESTS_CHILD_ROUNDS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double rounds_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The file's first 64 KiB, NUL-terminated, in a static buffer; NULL if it cannot be opened. */
static inline char *rounds_slurp(const char *path)
{
    static char buf[1 << 16];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return buf;
}

/* Starts `self child` with its standard output on a pipe and waits for the byte it writes
 * when ready; then sleeps a random 0 to 2 ms, so that the signal that follows lands anywhere
 * in the child's work. Returns the child's pid (with *ready 1 if it said so), or -1 when no
 * pipe could be made. */
static inline pid_t rounds_start(const char *self, int *ready)
{
    int fds[2];
    *ready = 0;
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execl(self, self, "child", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char c;
    *ready = read(fds[0], &c, 1) == 1;
    close(fds[0]);
    if (*ready) {
        struct timespec d = {0, (long)(rand() % 2000) * 1000};
        nanosleep(&d, NULL);
    }
    return pid;
}

/* Waits up to limit_s seconds for pid to end. Returns 1 with its status in *status, or 0 when
 * it has not ended (the caller kills it); *took is the time waited. */
static inline int rounds_wait(pid_t pid, double limit_s, int *status, double *took)
{
    double start = rounds_now_s();
    pid_t w;
    *status = 0;
    while ((w = waitpid(pid, status, WNOHANG)) == 0 && rounds_now_s() - start < limit_s) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    *took = rounds_now_s() - start;
    return w != 0;
}

/* Where a child that did not end is stuck: every thread's stack, by gdb where it is installed
 * (a hang that a loaded machine shows once in thousands of rounds is then explained in the
 * test's output). Call before killing the child. */
static inline void rounds_show_stacks(pid_t pid)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd,
             "command -v gdb >/dev/null && timeout 60 gdb -p %ld -batch -ex 'thread apply all bt' "
             "</dev/null 2>&1 | grep -E '^(#|Thread)' >&2",
             (long)pid);
    if (system(cmd) != 0)
        fprintf(stderr, "(no stacks: gdb is not installed or could not attach)\n");
}

#endif

/* Fault injection: runs the demo with GPUMEM_FAIL_ALLOC=N for every N until the demo no longer
 * allocates that many times. Each run must end normally (no signal), with nothing left
 * allocated (the demo exits 3 on a leak) and, while N hits an allocation, with the failure
 * reported as out of memory. argv[1] is the demo. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static int run_demo(const char *demo, int n, char *out, size_t cap)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        char value[16];
        snprintf(value, sizeof value, "%d", n);
        setenv("GPUMEM_FAIL_ALLOC", value, 1);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        execl(demo, demo, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(fd[0], out + len, cap - 1 - len)) > 0 && len + 1 < cap)
        len += (size_t)got;
    out[len] = '\0';
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return status;
}

static const char *demo;

static void test_every_allocation_fails_in_turn(void)
{
    static char out[1 << 16];
    int failures_seen = 0;
    for (int n = 1; n <= 50; n++) {
        int status = run_demo(demo, n, out, sizeof out);
        EXPECT_TRUE(WIFEXITED(status));
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (code != 0 && code != 1)
            fprintf(stderr, "GPUMEM_FAIL_ALLOC=%d: exit %d\n%s\n", n, code, out);
        EXPECT_TRUE(code == 0 || code == 1);
        EXPECT_CONTAINS(out, "leak check: 0 allocations live");
        if (code == 0)
            break; /* n is past the demo's last allocation */
        EXPECT_CONTAINS(out, "gpumem: error: out of memory: ");
        EXPECT_CONTAINS(out, "injected by GPUMEM_FAIL_ALLOC=");
        failures_seen++;
    }
    EXPECT_EQ(failures_seen, 7); /* the demo makes seven allocations */
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 2;
    demo = argv[1];
    RUN(test_every_allocation_fails_in_turn);
    return harness_exit();
}

/* Host malloc failing: runs PROGRAM with its Nth host allocation failing, for N = 1, 2, ...
 * until the program makes fewer than N (or up to MAX). Each run must end on its own within 20 s
 * and not by a crash (SIGSEGV, SIGBUS, SIGFPE, SIGILL); an abort from a failed check is an
 * answer, a crash is a bug.
 *
 * test_host_oom LIBFAIL_MALLOC PROGRAM [MAX] */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s LIBFAIL_MALLOC PROGRAM [MAX]\n", argv[0]);
        return 2;
    }
    int max = argc > 3 ? atoi(argv[3]) : 1000;
    int crashed = 0, hung = 0, tried = 0, never = 0;
    for (int n = 1; n <= max; n++) {
        int fd[2];
        if (pipe(fd) != 0)
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            char value[16];
            snprintf(value, sizeof value, "%d", n);
            setenv("FAIL_MALLOC_AT", value, 1);
            char self[24];
            snprintf(self, sizeof self, "%ld", (long)getpid());
            setenv("FAIL_MALLOC_PID", self, 1);
            setenv("LD_PRELOAD", argv[1], 1);
            dup2(fd[1], 1);
            dup2(fd[1], 2);
            close(fd[0]);
            alarm(20);
            execl(argv[2], argv[2], (char *)NULL);
            _exit(127);
        }
        close(fd[1]);
        static char out[1 << 16];
        size_t len = 0;
        ssize_t got;
        while ((got = read(fd[0], out + len, sizeof out - 1 - len)) > 0)
            len += (size_t)got;
        out[len] = '\0';
        close(fd[0]);
        int st = 0;
        waitpid(pid, &st, 0);
        tried++;
        if (WIFSIGNALED(st)) {
            int sig = WTERMSIG(st);
            if (sig == SIGALRM) {
                if (++hung <= 3)
                    fprintf(stderr, "N=%d: hung\n", n);
            } else if (sig != SIGABRT) {
                if (++crashed <= 3)
                    fprintf(stderr, "N=%d: killed by signal %d:\n%s\n", n, sig, out);
            }
        }
        /* The count of calls varies a little from run to run (threads): stop after three
         * runs in a row that made fewer than N. */
        never = strstr(out, "fail_malloc: never reached") ? never + 1 : 0;
        if (never == 3)
            break;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && n == 1) {
            fprintf(stderr, "cannot run %s:\n%s\n", argv[2], out);
            return 1;
        }
    }
    fprintf(stderr, "host malloc failed at each of the first %d calls: %d crashes, %d hangs\n",
            tried, crashed, hung);
    EXPECT_EQ(crashed, 0);
    EXPECT_EQ(hung, 0);
    return harness_exit();
}

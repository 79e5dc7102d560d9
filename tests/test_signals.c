/* The exit-time report under signals: a child allocates, frees, reads statistics and prints
 * in a loop (and a second thread does the same), the parent signals it at a random moment,
 * and the child's handler calls exit(), so the report runs wherever the signal landed: inside
 * gpumem holding a registry shard, inside printf holding stdio's locks, anywhere. Every child
 * must be gone within a bound, and its report must be whole, or say it is incomplete. With
 * `trace`, the child records a trace too (GPUMEM_TRACE), whose exit-time finish must not hang
 * either: each trace must end whole, or with an event that says it is incomplete.
 *
 * `test_signals [ROUNDS] [trace]` (default 1000); `test_signals child` is the child. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpumem.h"
#include "child_rounds.h"
#include "harness.h"

static const char *self;

static void on_signal(int sig)
{
    (void)sig;
    exit(3);
}

static void churn(void)
{
    void *p = gpumem_device_alloc(1, 4096);
    void *q = gpumem_pinned_alloc(1, 512);
    gpumem_stats_t st;
    gpumem_stats(&st);
    gpumem_free(q);
    gpumem_free(p);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;)
        churn();
    return NULL;
}

static int child(void)
{
    /* Four allocations from two sites stay live: the report has something to say. */
    for (int i = 0; i < 3; i++)
        if (!gpumem_device_alloc(1, 1 << 20))
            return 10;
    if (!gpumem_managed_alloc(1, 4096, GPUMEM_ATTACH_GLOBAL))
        return 10;
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 11;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    /* Ready: the parent may signal from now on. */
    if (write(STDOUT_FILENO, "r", 1) != 1)
        return 12;
    FILE *noise = fopen("/dev/null", "w");
    for (unsigned long i = 0;; i++) {
        churn();
        fprintf(noise, "progress %lu: %s\n", i, "working");
        if (i % 16 == 0)
            fflush(noise);
    }
}

/* A whole report: the summary line, as many group lines as it names call sites (the two that
 * stay live among them), and its last line ends; or it says it is incomplete. */
static int report_whole(const char *r)
{
    if (!r || !*r || r[strlen(r) - 1] != '\n' || !strstr(r, "still live at exit"))
        return 0;
    if (strstr(r, "report incomplete:"))
        return 1;
    const char *from = strstr(r, " still live at exit, from ");
    long sites = from ? strtol(from + strlen(" still live at exit, from "), NULL, 10) : -1;
    long groups = 0;
    for (const char *c = strchr(r, '\n'); c && c[1]; c = strchr(c + 1, '\n'))
        groups += strncmp(c + 1, "  ", 2) == 0 && strstr(c + 1, " allocation") != NULL;
    return sites == groups && strstr(r, "3.0 MiB in 3 device allocations at ") &&
           strstr(r, "4.0 KiB in 1 managed allocation at ");
}

/* A trace ends whole (the end marker, then the closing brackets) or with the event that says
 * it is incomplete and the closing brackets; 1 for whole, 2 for incomplete, 0 for neither. */
static int trace_end(const char *path)
{
    char tail[8192];
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    struct stat st;
    off_t from = fstat(fd, &st) == 0 && st.st_size > (off_t)sizeof tail - 1
                     ? st.st_size - (off_t)sizeof tail + 1
                     : 0;
    ssize_t n = pread(fd, tail, sizeof tail - 1, from);
    close(fd);
    tail[n > 0 ? n : 0] = '\0';
    size_t len = strlen(tail);
    if (len < 4 || strcmp(tail + len - 4, "\n}}\n") != 0)
        return 0;
    return strstr(tail, "\"name\":\"gpumem_end\"")          ? 1
           : strstr(tail, "\"name\":\"gpumem_incomplete\"") ? 2
                                                             : 0;
}

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    int traced = argc > 2 && strcmp(argv[2], "trace") == 0;
    char dir[] = "/tmp/gpumem-signals-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char pattern[128];
    snprintf(pattern, sizeof pattern, "GPUMEM_REPORT_FILE=%s/r-%%p.txt", dir);
    putenv(pattern);
    putenv("GPUMEM_LEAK_REPORT=full");
    char trace_pattern[128];
    snprintf(trace_pattern, sizeof trace_pattern, "GPUMEM_TRACE=%s/t-%%p.json", dir);
    if (traced)
        putenv(trace_pattern);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int hung = 0, broken = 0, incomplete = 0, odd_status = 0, traces_broken = 0,
        traces_incomplete = 0;
    double worst = 0;
    for (int round = 0; round < rounds; round++) {
        int ready;
        pid_t pid = rounds_start(self, &ready);
        if (pid < 0) {
            perror("pipe");
            return 1;
        }
        if (ready)
            kill(pid, SIGUSR1);
        int status;
        double took;
        int ended = rounds_wait(pid, 5.0, &status, &took);
        if (took > worst)
            worst = took;
        char path[256];
        snprintf(path, sizeof path, "%s/r-%ld.txt", dir, (long)pid);
        if (!ended) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            if (hung <= 3)
                fprintf(stderr, "round %d: child %ld hung in its exit report\n", round,
                        (long)pid);
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 3)) {
            odd_status++;
            if (odd_status <= 3)
                fprintf(stderr, "round %d: child ended with status 0x%x\n", round, status);
        } else {
            const char *r = rounds_slurp(path);
            if (!report_whole(r)) {
                broken++;
                if (broken <= 3)
                    fprintf(stderr, "round %d: report not whole:\n---\n%s---\n", round,
                            r ? r : "(no file)\n");
            } else if (strstr(r, "report incomplete:")) {
                incomplete++;
            }
        }
        unlink(path);
        if (traced) {
            snprintf(path, sizeof path, "%s/t-%ld.json", dir, (long)pid);
            int end = ended ? trace_end(path) : 1; /* a hung child is counted above */
            traces_incomplete += end == 2;
            if (!end && ++traces_broken <= 3)
                fprintf(stderr, "round %d: the trace %s neither ends whole nor says it is "
                                "incomplete\n", round, path);
            if (end)
                unlink(path);
        }
    }
    if (!traces_broken)
        rmdir(dir);
    fprintf(stderr,
            "%d rounds: %d hung, %d reports not whole, %d said incomplete, %d odd exits; "
            "slowest exit %.3f s\n",
            rounds, hung, broken, incomplete, odd_status, worst);
    if (traced)
        fprintf(stderr, "traces: %d broken, %d said incomplete\n", traces_broken,
                traces_incomplete);
    EXPECT_EQ(hung, 0);
    EXPECT_EQ(broken, 0);
    EXPECT_EQ(odd_status, 0);
    EXPECT_EQ(traces_broken, 0);
    EXPECT_LE(worst * 1000, 4000); /* seconds on a loaded 2-core machine */
    return harness_exit();
}

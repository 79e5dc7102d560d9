/* GPUMEM_TRACE's file when things are not simple: a FIFO without a reader and one with a
 * reader, children made by fork() that end with exit(), a second process tracing to the same
 * file, names at the length a path may have, and command lines and file names that are not
 * UTF-8. Every trace must be one JSON document with all of its own process's events, and no
 * program may hang. Each traced program is this executable run again (`test_trace_files child
 * MODE ...`), because a trace is finished by its process's exit. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_rounds.h"
#include "gpumem.h"
#include "harness.h"
#include "trace_read.h"

static const char *self;
static char dir[] = "/tmp/gpumem-trace-files-XXXXXX";

/* ---- the traced programs ---- */

static int churn(int n)
{
    for (int i = 0; i < n; i++)
        gpumem_free(gpumem_device_alloc(1, 512));
    return 0;
}

/* Children that end with exit(), made while the parent's trace has text not yet written. */
static int forks(void)
{
    void *a = gpumem_device_alloc(1, 1111);
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork(); /* no fflush(NULL) first: programs rarely do */
        if (pid == 0) {
            gpumem_free(gpumem_device_alloc(1, 2222));
            exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    gpumem_free(a);
    gpumem_free(gpumem_device_alloc(1, 3333));
    return 0;
}

/* A second traced process at the same time: this program runs itself again, with the same
 * GPUMEM_TRACE, while its own trace is open. */
static int spawn(void)
{
    void *a = gpumem_device_alloc(1, 1111);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "child", "churn", "100", (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    gpumem_free(a);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 9;
}

static int finish(pid_t pid);

/* fork() while the trace's writer is stuck on a FIFO nobody reads: it waits 2 s for the writer,
 * no longer. The child, which has no writer, forks again at once. Exit status 0, or 3 when
 * the parent's fork took less than 1.5 s or more than 8 s (it did not wait, or waited too
 * long), 4 when the child's took 1 s or more, 5 when the child did not end. */
static int stuck_fork(void)
{
    churn(5000);     /* far more text than the pipe holds: the writer blocks in write() */
    usleep(300000);  /* and has taken every batch by now */
    double t0 = rounds_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        double c0 = rounds_now_s();
        pid_t g = fork();
        if (g == 0)
            _exit(0);
        double took = rounds_now_s() - c0;
        waitpid(g, NULL, 0);
        _exit(took < 1.0 ? 0 : 4);
    }
    double took = rounds_now_s() - t0;
    int rc = finish(pid);
    if (rc < 0 || rc >= 128)
        return 5;
    if (rc == 0 && (took < 1.5 || took > 8.0))
        return 3;
    return rc;
}

/* An allocation whose call site's file and function names are not UTF-8. */
static int latin1(void)
{
    gpumem_site site = {"caf\xe9.c", "r\xe9sum\xe9", 7};
    gpumem_free(gpumem_device_alloc_at(1, 64, site));
    return 0;
}

static int child(int argc, char **argv)
{
    const char *mode = argv[2];
    if (strcmp(mode, "churn") == 0)
        return churn(argc > 3 ? atoi(argv[3]) : 10);
    if (strcmp(mode, "forks") == 0)
        return forks();
    if (strcmp(mode, "spawn") == 0)
        return spawn();
    if (strcmp(mode, "latin1") == 0)
        return latin1();
    if (strcmp(mode, "stuckfork") == 0)
        return stuck_fork();
    return 2;
}

/* ---- running them ---- */

/* Starts `self child ARGV...` with GPUMEM_TRACE=trace and its stderr in err. */
static pid_t start(const char *trace, const char *err, char *const argv[])
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (err && !freopen(err, "w", stderr))
            _exit(126);
        setenv("GPUMEM_TRACE", trace, 1);
        setenv("GPUMEM_LEAK_REPORT", "off", 1);
        execv(self, argv);
        _exit(127);
    }
    return pid;
}

/* Waits up to limit_s; its exit status, or -1 when it hung (it is killed then). */
static int finish_within(pid_t pid, double limit_s)
{
    int status;
    double took;
    if (!rounds_wait(pid, limit_s, &status, &took)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int finish(pid_t pid)
{
    return finish_within(pid, 10.0);
}

static int run(const char *trace, const char *err, char *const argv[])
{
    return finish(start(trace, err, argv));
}

static char *in_dir(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static const char *slurp(const char *path)
{
    const char *text = rounds_slurp(path);
    return text ? text : "(no file)";
}

/* The process_name event's name: the tool and the command line. */
static const char *process_name(const trace_read_t *t)
{
    for (size_t i = 0; i < json_array_size(t->events); i++) {
        json_t *e = json_array_get(t->events, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        if (name && strcmp(name, "process_name") == 0)
            return json_string_value(json_object_get(json_object_get(e, "args"), "name"));
    }
    return "";
}

/* ---- the tests ---- */

/* A FIFO that no process reads: the program is not blocked, and says why nothing is recorded.
 * Before: blocked for ever in its first gpumem call. */
static void test_fifo_without_reader(void)
{
    char fifo[512], err[512];
    snprintf(fifo, sizeof fifo, "%s", in_dir("fifo"));
    snprintf(err, sizeof err, "%s", in_dir("fifo.err"));
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    char *argv[] = {(char *)self, "child", "churn", "10", NULL};
    EXPECT_EQ(run(fifo, err, argv), 0);
    EXPECT_CONTAINS(slurp(err), "is a FIFO that no process reads; nothing will be recorded");
}

/* A FIFO with a reader is written as a file is: the reader gets the whole trace. */
static void test_fifo_with_reader(void)
{
    char fifo[512], copy[512];
    snprintf(fifo, sizeof fifo, "%s", in_dir("fifo-read"));
    snprintf(copy, sizeof copy, "%s", in_dir("fifo-read.json"));
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    int r = open(fifo, O_RDONLY | O_NONBLOCK);
    ASSERT_NE(r, -1);
    char *argv[] = {(char *)self, "child", "churn", "10", NULL};
    pid_t pid = start(fifo, NULL, argv);
    FILE *out = fopen(copy, "w");
    ASSERT_NOT_NULL(out);
    char buf[4096];
    double until = rounds_now_s() + 10;
    for (;;) { /* until the writer closes it, which a FIFO's reader sees as its end */
        struct pollfd p = {r, POLLIN, 0};
        if (poll(&p, 1, 100) < 0 && errno != EINTR)
            break;
        ssize_t n = read(r, buf, sizeof buf);
        if (n > 0)
            fwrite(buf, 1, (size_t)n, out);
        else if ((n == 0 && (p.revents & POLLHUP)) || rounds_now_s() > until)
            break;
    }
    fclose(out);
    close(r);
    EXPECT_EQ(finish(pid), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(copy, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 10);
    json_decref(t.root);
}

/* Makes the FIFO name in dir, its stderr file's path (name.err), and opens the FIFO for
 * reading, never to read it: the descriptor, or -1 (the failed step is reported). */
static int unread_fifo(const char *name, char fifo[512], char err[512])
{
    snprintf(fifo, 512, "%s", in_dir(name));
    snprintf(err, 512, "%s.err", fifo);
    int made = mkfifo(fifo, 0600);
    EXPECT_EQ(made, 0);
    return made == 0 ? open(fifo, O_RDONLY | O_NONBLOCK) : -1;
}

/* A FIFO whose reader stops reading: the writer blocks once the pipe is full, and the exit
 * waits for it only while it makes progress (2 s), and for the pipe itself 2 s at most, then
 * says the trace is incomplete. Before: the program never ended. */
static void test_fifo_reader_stops(void)
{
    char fifo[512], err[512];
    int r = unread_fifo("fifo-stuck", fifo, err);
    ASSERT_NE(r, -1);
    char *argv[] = {(char *)self, "child", "churn", "5000", NULL};
    EXPECT_EQ(run(fifo, err, argv), 0);
    close(r);
    const char *said = slurp(err); /* the writer was stuck, or the exit path's own write */
    EXPECT_TRUE(strstr(said, "is incomplete: its writer made no progress for 2 s at exit") ||
                strstr(said, "failed (its reader took nothing for 2 s); the trace is incomplete"));
}

/* fork() waits for a trace writer that is busy (it may be inside malloc, which an allocator
 * without fork handlers would leave locked in the child), but 2 s at most: a writer stuck on a
 * FIFO nobody reads does not stop fork(), and the child, which has no writer, waits for none
 * (stuck_fork says which failed). The run takes about 6 s: the fork's 2 s and the exit's. */
static void test_fork_while_writer_stuck(void)
{
    char fifo[512], err[512];
    int r = unread_fifo("fifo-fork", fifo, err);
    ASSERT_NE(r, -1);
    char *argv[] = {(char *)self, "child", "stuckfork", NULL};
    EXPECT_EQ(finish_within(start(fifo, err, argv), 30.0), 0); /* -1: it hung */
    close(r);
}

/* Children made by fork() that end with exit() write nothing into the parent's trace. Before:
 * each wrote the parent's buffered text again (3 of 3 traces damaged). */
static void test_fork_children_exit(void)
{
    char *trace = in_dir("forks.json");
    char *argv[] = {(char *)self, "child", "forks", NULL};
    ASSERT_EQ(run(trace, NULL, argv), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(trace, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 2);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_DEVICE], 1111 + 3333);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 2);
    json_decref(t.root);
}

/* The name of the one file in dir that begins with prefix and is not exactly it, or NULL. */
static const char *other_file(const char *prefix)
{
    static char found[512];
    const char *base = strrchr(prefix, '/') + 1;
    DIR *d = opendir(dir);
    found[0] = '\0';
    for (struct dirent *e; d && (e = readdir(d));)
        if (strncmp(e->d_name, base, strlen(base)) == 0 && strcmp(e->d_name, base) != 0)
            snprintf(found, sizeof found, "%s/%s", dir, e->d_name);
    if (d)
        closedir(d);
    return found[0] ? found : NULL;
}

/* Two processes with one GPUMEM_TRACE: the second writes FILE.PID and says so; both traces are
 * whole. Before: both wrote one file, and half the events were lost without a word. */
static void test_two_processes(void)
{
    char trace[512], err[512];
    snprintf(trace, sizeof trace, "%s", in_dir("two.json"));
    snprintf(err, sizeof err, "%s", in_dir("two.err"));
    char *argv[] = {(char *)self, "child", "spawn", NULL};
    ASSERT_EQ(run(trace, err, argv), 0);
    EXPECT_CONTAINS(slurp(err), "gpumem: warning: another process is writing its trace to ");
    EXPECT_CONTAINS(slurp(err), "hint: put %p in GPUMEM_TRACE");
    trace_read_t t;
    ASSERT_EQ(trace_read(trace, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 1);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_DEVICE], 1111);
    json_decref(t.root);
    const char *second = other_file(trace);
    ASSERT_NOT_NULL(second);
    ASSERT_EQ(trace_read(second, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 100);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 100);
    json_decref(t.root);
}

/* A folder under dir deep enough that a name of len bytes fits in it with a last part of at
 * most 100 bytes; returns the folder. */
static char *deep_folder(size_t len)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/deep", dir);
    mkdir(path, 0700);
    while (strlen(path) + 1 + 100 < len) {
        size_t room = len - strlen(path) - 1 - 100, part = room - 1 < 200 ? room - 1 : 200;
        size_t o = strlen(path);
        path[o++] = '/';
        memset(path + o, 'd', part ? part : 1);
        path[o + (part ? part : 1)] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return NULL;
    }
    return path;
}

/* Whether folder holds a file whose name begins with c. */
static int holds_file_of(const char *folder, char c)
{
    DIR *d = opendir(folder);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        found |= e->d_name[0] == c;
    if (d)
        closedir(d);
    return found;
}

/* A name of 4 090 bytes is written as it is; one that %p makes longer than 4 095 bytes is
 * refused, and no file with a shorter name appears. Before: both were cut at 4 072 bytes. */
static void test_long_names(void)
{
    char *folder = deep_folder(4090);
    ASSERT_NOT_NULL(folder);
    char name[4200], err[512];
    snprintf(err, sizeof err, "%s", in_dir("long.err"));
    size_t n = strlen(folder);
    memcpy(name, folder, n);
    name[n] = '/';
    memset(name + n + 1, 'x', 4090 - n - 1);
    name[4090] = '\0';
    char *argv[] = {(char *)self, "child", "churn", "5", NULL};
    ASSERT_EQ(run(name, err, argv), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(name, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 5);
    json_decref(t.root);

    memset(name + n + 1, 'y', 4095 - n - 1 - 2);
    memcpy(name + 4093, "%p", 3); /* 4 095 bytes; with the pid in place of %p, more */
    ASSERT_EQ(run(name, err, argv), 0);
    EXPECT_CONTAINS(slurp(err), "gpumem: error: the trace's file name is ");
    EXPECT_CONTAINS(slurp(err), "longer than a path may be (4095); nothing will be recorded");
    EXPECT_TRUE(!holds_file_of(folder, 'y'));
}

/* Arguments that are not UTF-8, a command line cut mid-character at 1 023 bytes, and a call
 * site whose file name is Latin-1: the trace is still JSON, with U+FFFD in their place. Before:
 * not JSON at all. */
static void test_not_utf8(void)
{
    char long_arg[1400];
    for (int pad = 0; pad < 2; pad++) { /* one of the two cuts a 2-byte character in half */
        size_t o = 0;
        if (pad)
            long_arg[o++] = 'a';
        for (int i = 0; i < 600; i++) {
            long_arg[o++] = (char)0xc3; /* é */
            long_arg[o++] = (char)0xa9;
        }
        long_arg[o] = '\0';
        char *trace = in_dir(pad ? "utf8-1.json" : "utf8-0.json");
        char *argv[] = {(char *)self, "child", "latin1", "\xff\xfe", long_arg, NULL};
        ASSERT_EQ(run(trace, NULL, argv), 0);
        trace_read_t t;
        ASSERT_EQ(trace_read(trace, &t), 0);
        const char *cmd = process_name(&t);
        EXPECT_CONTAINS(cmd, "latin1 \xef\xbf\xbd\xef\xbf\xbd ");
        size_t len = strlen(cmd); /* cut after a whole character, not into U+FFFD */
        EXPECT_TRUE(len > 2 && strcmp(cmd + len - 2, "\xc3\xa9") == 0);
        int found = 0;
        for (size_t i = 0; i < json_array_size(t.events); i++) {
            const char *name =
                json_string_value(json_object_get(json_array_get(t.events, i), "name"));
            found |= name && strstr(name, "caf\xef\xbf\xbd.c:7 (r\xef\xbf\xbdsum\xef\xbf\xbd)");
        }
        EXPECT_TRUE(found);
        json_decref(t.root);
    }
}

int main(int argc, char **argv)
{
    self = argv[0];
    (void)trace_stack_top;
    if (argc > 2 && strcmp(argv[1], "child") == 0)
        return child(argc, argv);
    if (!mkdtemp(dir))
        return 1;
    RUN(test_fifo_without_reader);
    RUN(test_fifo_with_reader);
    RUN(test_fifo_reader_stops);
    RUN(test_fork_while_writer_stuck);
    RUN(test_fork_children_exit);
    RUN(test_two_processes);
    RUN(test_long_names);
    RUN(test_not_utf8);
    int rc = harness_exit();
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return rc;
}

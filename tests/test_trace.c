/* GPUMEM_TRACE: a scripted program on the simulated device writes its trace at exit, and the
 * trace is checked event by event: counts and bytes per kind, every release after its
 * allocation, the counters, the stacks, the checkpoint and the out-of-memory failure. Also the
 * errors: a file that cannot be opened, and a full disk. Each program runs in a child, because
 * the trace is finished by the process's exit. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child_rounds.h"
#include "gpumem.h"
#include "harness.h"
#include "trace_read.h"

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static void *thread_work(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++) {
        void *p = gpumem_device_alloc(1, 4096);
        gpumem_free(p);
    }
    return NULL;
}

/* The scripted program: what it does is what the test expects to find. */
static void scripted(void)
{
    gpumem_set_error_handler(quiet, NULL);
    void *d1 = gpumem_device_alloc(1000, 1);       /* 1000 B device, released */
    void *d2 = gpumem_device_alloc(256, 8);        /* 2048 B device, leaked */
    void *pin = gpumem_pinned_alloc(1, 512);       /* 512 B pinned, released */
    void *man = gpumem_managed_alloc(4, 1024, 0);  /* 4096 B managed, released */
    void *host = gpumem_host_alloc(1, 300, GPUMEM_HOST_MAPPED); /* 300 B host, leaked */
    gpumem_checkpoint_t cp = gpumem_checkpoint();
    (void)cp;
    void *big = gpumem_device_alloc(1, (size_t)1 << 50); /* 1 PiB: out of memory */
    if (big || !d1 || !d2 || !pin || !man || !host)
        _exit(3);
    pthread_t t;
    pthread_create(&t, NULL, thread_work, NULL);  /* 3 x 4096 B device, on another thread */
    pthread_join(t, NULL);
    gpumem_free(d1);
    gpumem_free(pin);
    gpumem_free(man);
    exit(0);
}

static int run_child(void (*body)(void), const char *trace, const char *err_file)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (err_file && !freopen(err_file, "w", stderr))
            _exit(4);
        setenv("GPUMEM_TRACE", trace, 1);
        setenv("GPUMEM_BACKTRACE", "1", 1);
        setenv("GPUMEM_LEAK_REPORT", "off", 1);
        body();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Waits 20 s at most for a grandchild: one that has not exited by then has its stacks shown,
 * is killed, and the caller's child exits with 5, so that a hang fails by name instead of
 * holding the test. */
static void reap_or_fail(pid_t pid)
{
    int status;
    double took;
    if (rounds_wait(pid, 20.0, &status, &took))
        return;
    rounds_show_stacks(pid);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    _exit(5);
}

static char dir[] = "/tmp/gpumem-trace-test-XXXXXX";

static void test_scripted_program(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/lib.json", dir);
    ASSERT_EQ(run_child(scripted, path, NULL), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 5);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_DEVICE], 1000 + 2048 + 3 * 4096);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 4);
    EXPECT_EQ(t.release_bytes[GPUMEM_KIND_DEVICE], 1000 + 3 * 4096);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_PINNED], 1);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_PINNED], 512);
    EXPECT_EQ(t.releases[GPUMEM_KIND_PINNED], 1);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_MANAGED], 1);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_MANAGED], 4096);
    EXPECT_EQ(t.releases[GPUMEM_KIND_MANAGED], 1);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_HOST], 1);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_HOST], 300);
    EXPECT_EQ(t.releases[GPUMEM_KIND_HOST], 0);
    /* One counter per allocation and release; the last of each kind is what stayed live. */
    EXPECT_EQ(t.counters, 8 + 6);
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_DEVICE], 2048);
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_PINNED], 0);
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_HOST], 300);
    EXPECT_EQ(t.checkpoints, 1);
    EXPECT_EQ(t.failed, 1);
    EXPECT_EQ(json_integer_value(json_object_get(t.end, "events")), 8 + 6 + 2);
    EXPECT_EQ(json_integer_value(json_object_get(t.end, "dropped")), 0);

    /* Each allocation's fields, its site and its stack, resolved to this file. */
    size_t n = json_array_size(t.events);
    int found_d2 = 0, found_oom = 0, other_thread = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(t.events, i), *args = json_object_get(e, "args");
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (strcmp(ph, "b") == 0) {
            EXPECT_CONTAINS(name, "test_trace.c:");
            EXPECT_EQ(json_integer_value(json_object_get(args, "device")), 0);
            EXPECT_TRUE(json_string_value(json_object_get(args, "address")) != NULL);
            EXPECT_TRUE(json_string_value(json_object_get(args, "stream")) != NULL);
            long long stack = json_integer_value(json_object_get(args, "stack"));
            EXPECT_NE(stack, 0);
            EXPECT_CONTAINS(trace_stack_top(&t, stack), "test_trace.c:");
            if (json_integer_value(json_object_get(args, "bytes")) == 2048) {
                found_d2 = 1;
                EXPECT_CONTAINS(name, "(scripted)");
                EXPECT_CONTAINS(trace_stack_top(&t, stack), "scripted");
            }
            if (json_integer_value(json_object_get(e, "tid")) != 1)
                other_thread++;
        } else if (strcmp(ph, "e") == 0) {
            EXPECT_CONTAINS(json_string_value(json_object_get(args, "released_at")),
                            "test_trace.c:");
        } else if (strcmp(ph, "i") == 0 && strcmp(name, "out of memory") == 0) {
            found_oom = 1;
            EXPECT_EQ(json_integer_value(json_object_get(args, "bytes")), 1ll << 50);
            EXPECT_STR_EQ(json_string_value(json_object_get(args, "kind")), "device");
            EXPECT_CONTAINS(json_string_value(json_object_get(args, "site")), "test_trace.c:");
            EXPECT_EQ(json_integer_value(json_object_get(args, "live")), 1000 + 2048);
        }
    }
    EXPECT_TRUE(found_d2);
    EXPECT_TRUE(found_oom);
    EXPECT_EQ(other_thread, 3);
    json_decref(t.root);
}

/* Many events: buffers are handed to the writer as they fill, and nothing is lost. */
static void many(void)
{
    for (int i = 0; i < 5000; i++)
        gpumem_free(gpumem_device_alloc(1, 256 + (size_t)i % 7 * 256));
    exit(0);
}

static void test_many_batches(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/many.json", dir);
    ASSERT_EQ(run_child(many, path, NULL), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 5000);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 5000);
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_DEVICE], 0);
    EXPECT_EQ(json_integer_value(json_object_get(t.end, "events")), 10000);
    json_decref(t.root);
}

/* Threads that record at once, fill several buffers each and end before the process does: every
 * event arrives, in order per allocation, and the counter ends at zero. */
static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3000; i++)
        gpumem_free(gpumem_device_alloc(1, 512));
    return NULL;
}

static void threads(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    exit(0);
}

static void test_threads(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/threads.json", dir);
    ASSERT_EQ(run_child(threads, path, NULL), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 12000);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 12000);
    EXPECT_EQ(json_integer_value(json_object_get(t.end, "events")), 24000);
    EXPECT_EQ(json_integer_value(json_object_get(t.end, "dropped")), 0);
    json_decref(t.root);
}

static void read_file(const char *path, char *buf, size_t n)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
}

static void test_unwritable_file(void)
{
    char err[256], text[4096];
    snprintf(err, sizeof err, "%s/err1.txt", dir);
    EXPECT_EQ(run_child(scripted, "/nonexistent-dir/t.json", err), 0);
    read_file(err, text, sizeof text);
    EXPECT_CONTAINS(text, "gpumem: error: cannot write the trace to /nonexistent-dir/t.json "
                          "(No such file or directory)");
}

static void test_full_disk(void)
{
    char err[256], text[4096];
    snprintf(err, sizeof err, "%s/err2.txt", dir);
    EXPECT_EQ(run_child(many, "/dev/full", err), 0);
    read_file(err, text, sizeof text);
    EXPECT_CONTAINS(text, "gpumem: error: writing the trace to /dev/full failed (No space left "
                          "on device); the trace is incomplete");
    /* Once, not once per batch. */
    const char *first = strstr(text, "writing the trace");
    EXPECT_TRUE(first && !strstr(first + 1, "writing the trace"));
}

/* A child forked without exec records nothing, and its exit leaves the parent's trace alone. */
static void forks(void)
{
    void *a = gpumem_device_alloc(1, 1111);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        gpumem_free(gpumem_device_alloc(1, 2222));
        exit(0);
    }
    reap_or_fail(pid);
    gpumem_free(a);
    gpumem_free(gpumem_device_alloc(1, 3333));
    exit(0);
}

static void test_fork_without_exec(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/fork.json", dir);
    ASSERT_EQ(run_child(forks, path, NULL), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 2);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_DEVICE], 1111 + 3333);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 2);
    json_decref(t.root);
}

/* A process forked while the trace's writer thread allocates (it is starting, or writing a
 * batch) must not inherit an allocator lock that thread held: with an allocator that takes no
 * lock around fork() (AddressSanitizer's in GCC 12's runtime), the child's exit then waits for
 * ever on it in the leak check, in about 3 % of runs of fork right after the trace opened, on 2
 * busy cores. The fork waits for the writer to be idle instead. Each round forks right after
 * the first allocation started the writer; a grandchild that has not exited after 20 s fails
 * the round (reap_or_fail). Under ThreadSanitizer every exit sleeps a second (its
 * atexit_sleep_ms), so fewer rounds run there. */
static void fork_at_start(void)
{
    gpumem_free(gpumem_device_alloc(1, 64)); /* opens the trace: its writer starts */
    pid_t pid = fork();
    if (pid == 0)
        exit(0); /* the exit path: atexit handlers and, under a sanitizer, its leak check */
    reap_or_fail(pid);
    exit(0);
}

#ifdef __SANITIZE_THREAD__
#define FORK_ROUNDS 4
#else
#define FORK_ROUNDS 40
#endif

static void test_fork_while_writer_starts(void)
{
    char path[256];
    for (int round = 0; round < FORK_ROUNDS; round++) {
        snprintf(path, sizeof path, "%s/start-%d.json", dir, round);
        ASSERT_EQ(run_child(fork_at_start, path, NULL), 0);
    }
}

/* Pool blocks are allocations like the others, released through gpumem_free; a request the
 * pool cannot serve is a failed allocation. */
static void pooled(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    void *a = gpumem_pool_alloc(pool, 1, 1000, NULL);
    void *b = gpumem_pool_alloc(pool, 1, 3000, NULL);
    if (!pool || !a || !b)
        _exit(3);
    gpumem_free(a);
    gpumem_free(b);
    gpumem_set_error_handler(quiet, NULL);
    if (gpumem_pool_alloc(pool, 1, (size_t)1 << 50, NULL)) /* more than the device has */
        _exit(3);
    gpumem_pool_destroy(pool);
    exit(0);
}

static void test_pool_blocks(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/pool.json", dir);
    ASSERT_EQ(run_child(pooled, path, NULL), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 2);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_DEVICE], 4000);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 2);
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_DEVICE], 0);
    EXPECT_EQ(t.failed, 1);
    json_decref(t.root);
}

/* %p in the path is the process id. */
static void test_pid_in_path(void)
{
    char pattern[256], path[256];
    snprintf(pattern, sizeof pattern, "%s/pid-%%p.json", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("GPUMEM_TRACE", pattern, 1);
        gpumem_free(gpumem_device_alloc(1, 64));
        exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    snprintf(path, sizeof path, "%s/pid-%ld.json", dir, (long)pid);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 1);
    json_decref(t.root);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    RUN(test_scripted_program);
    RUN(test_many_batches);
    RUN(test_threads);
    RUN(test_unwritable_file);
    RUN(test_full_disk);
    RUN(test_pid_in_path);
    RUN(test_fork_without_exec);
    RUN(test_fork_while_writer_starts);
    RUN(test_pool_blocks);
    int rc = harness_exit();
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return rc;
}

/* gpumem check's model of CUDA graph memory (tools/check/graphs.h), driven by the events its
 * CUPTI front end makes for graph calls, as a program makes them: nodes added, graphs
 * instantiated, launched and destroyed, stream captures, and cudaFree / cudaFreeAsync outside
 * the graph (the engine's release entry points).
 *
 * Each scenario runs in a child process of its own (the engine's state is the process's, one
 * report per process); the child checks what is live after each step, and the parent checks
 * the error count and the report. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "gpumem.h"
#include "graphs.h"
#include "harness.h"
#include "internal.h"

static char dir[] = "/tmp/gpumem-test-check-graph.XXXXXX";
static uintptr_t main_frame;

/* Fake handles and addresses, as CUDA's would look. */
#define GRAPH_A 0x5550000100ull
#define GRAPH_B 0x5550000200ull
#define EXEC_A 0x5550001100ull
#define EXEC_B 0x5550001200ull
#define X 0x7f0000000000ull
#define Y 0x7f0004000000ull
#define MiB (1u << 20)

#define BIT(k) (1u << GPUMEM_KIND_##k)
/* What the front end releases with cudaFree / cudaFreeAsync (tools/check/cupti.c). */
static const unsigned free_mask = BIT(DEVICE) | BIT(DEVICE_ASYNC) | BIT(MANAGED) | BIT(GRAPH);
static const unsigned free_async_mask = BIT(DEVICE) | BIT(DEVICE_ASYNC) | BIT(GRAPH);

/* Runs fn in a child with the engine's variables set; returns its exit status (the engine's
 * error count, capped; 200 when a check inside failed) and leaves its report in dir/NAME.log. */
static int run_scenario(const char *name, void (*fn)(void), int stacks)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        harness_failures = 0;
        char path[256];
        snprintf(path, sizeof path, "%s/%s.err", dir, name);
        if (!freopen(path, "w", stderr))
            _exit(201);
        snprintf(path, sizeof path, "%s/%s.log", dir, name);
        setenv("GPUMEM_CHECK_LOG", path, 1);
        setenv("GPUMEM_CHECK_STACKS", stacks ? "1" : "0", 1);
        check_main_entered(main_frame); /* as in test_check.c's run_scenario */
        check_main_returned(main_frame);
        check_setup();
        fn();
        check_finish("exited", 0);
        if (harness_failures)
            _exit(200);
        _exit((int)(check_error_count() > 100 ? 100 : check_error_count()));
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *log_of(const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.log", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    if (getdelim(&buf, &cap, '\0', f) < 0) {
        free(buf);
        buf = strdup("");
    }
    fclose(f);
    return buf;
}

/* The live allocation at p: its call, or NULL when nothing is live there. */
static const char *live(uintptr_t p)
{
    gpumem__rec r;
    return gpumem__reg_find((const void *)p, &r) && r.base == p ? r.site.func : NULL;
}

/* cudaFree / cudaFreeAsync of p outside any graph, which CUDA accepts. */
static int release(const char *call, unsigned mask, uintptr_t p)
{
    int state = check_release_begin(call, mask, p, 0);
    if (state == CHECK_GO)
        check_release_end(p, 1);
    else if (state == CHECK_UNKNOWN)
        check_release_unknown_end(call, p, 0, 1);
    return state;
}

/* A graph with one allocation node (and no free node), instantiated with flags. */
static void alloc_graph(uintptr_t graph, uintptr_t exec, uintptr_t p, unsigned long long flags)
{
    check_graph_alloc_node(graph, "cudaGraphAddMemAllocNode", p, 64 * MiB, 0, 0);
    check_graph_instantiated(graph, exec, flags);
}

/* NVIDIA's graphMemoryNodes sample: one launch's memory freed with cudaFree, the next one's
 * (at the same address) with cudaFreeAsync, the next one's by another graph's free node. A
 * correct program: no finding. Before the model, the node's memory was live from its creation
 * only once, and the second and third releases were double releases. */
static void freed_outside(void)
{
    alloc_graph(GRAPH_A, EXEC_A, X, 0);
    check_graph_destroyed(GRAPH_A); /* the sample destroys the graph once instantiated */
    EXPECT_NULL(live(X));           /* a node allocates nothing until a launch runs it */
    check_graph_launched(EXEC_A);
    EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
    EXPECT_EQ(release("cudaFree", free_mask, X), CHECK_GO);
    EXPECT_NULL(live(X));
    check_graph_launched(EXEC_A); /* allocates again, at the same address */
    EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
    EXPECT_EQ(release("cudaFreeAsync", free_async_mask, X), CHECK_GO);
    EXPECT_NULL(live(X));
    /* A graph that frees X: made while X is not allocated, launched after the graph that
     * allocates it. */
    check_graph_free_node(GRAPH_B, "cudaGraphAddMemFreeNode", X, 0);
    check_graph_instantiated(GRAPH_B, EXEC_B, 0);
    check_graph_destroyed(GRAPH_B);
    EXPECT_NULL(live(X));
    check_graph_launched(EXEC_A);
    EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
    check_graph_launched(EXEC_B);
    EXPECT_NULL(live(X));
    check_graph_exec_destroyed(EXEC_A);
    check_graph_exec_destroyed(EXEC_B);
}

static void test_freed_outside(void)
{
    EXPECT_EQ(run_scenario("freed_outside", freed_outside, 0), 0);
    char *log = log_of("freed_outside");
    EXPECT_EQ(log && strstr(log, "Double release") == NULL, 1);
    free(log);
}

/* A free node in the graph of the allocation: each launch allocates and frees. A release
 * after it is a double release, reported with the free node as the first release. */
static void freed_in_graph(void)
{
    check_graph_alloc_node(GRAPH_A, "cudaGraphAddMemAllocNode", X, MiB, 0, 0);
    check_graph_free_node(GRAPH_A, "cudaGraphAddMemFreeNode", X, 0);
    check_graph_instantiated(GRAPH_A, EXEC_A, 0);
    for (int i = 0; i < 3; i++) {
        check_graph_launched(EXEC_A);
        EXPECT_NULL(live(X));
    }
    EXPECT_EQ(release("cudaFree", free_mask, X), CHECK_REPORTED);
}

static void test_freed_in_graph(void)
{
    EXPECT_EQ(run_scenario("freed_in_graph", freed_in_graph, 0), 1);
    char *log = log_of("freed_in_graph");
    EXPECT_CONTAINS(log, "Double release: cudaFree() of 1,048,576 bytes of graph memory at "
                         "0x7f0000000000, already released by cudaGraphAddMemFreeNode");
    free(log);
}

/* Graphs never launched allocate nothing: no leak, whatever their nodes. */
static void never_launched(void)
{
    alloc_graph(GRAPH_A, EXEC_A, X, 0);
    check_graph_alloc_node(GRAPH_B, "cuGraphAddMemAllocNode", Y, MiB, 0, 0);
    EXPECT_NULL(live(X));
    EXPECT_NULL(live(Y));
    check_graph_exec_destroyed(EXEC_A);
    check_graph_destroyed(GRAPH_A);
    check_graph_launched(EXEC_A); /* destroyed: nothing to run (CUDA refuses it) */
    EXPECT_NULL(live(X));
}

static void test_never_launched(void)
{
    EXPECT_EQ(run_scenario("never_launched", never_launched, 0), 0);
    char *log = log_of("never_launched");
    EXPECT_EQ(log && strstr(log, "definitely lost") == NULL, 1);
    free(log);
}

/* The node is made here: a leak of its memory is reported with this function's stack, not
 * with the launch's. */
__attribute__((noinline)) static void add_node_that_leaks(void)
{
    check_graph_alloc_node(GRAPH_A, "cudaGraphAddMemAllocNode", X, 3 * MiB, 0,
                           gpumem__stack_capture(0));
    check_graph_instantiated(GRAPH_A, EXEC_A, 0);
}

__attribute__((noinline)) static void launch_graph_a(void)
{
    check_graph_launched(EXEC_A);
}

static void launched_never_freed(void)
{
    add_node_that_leaks();
    launch_graph_a();
    check_graph_exec_destroyed(EXEC_A);
    check_graph_destroyed(GRAPH_A);
}

static void test_launched_never_freed(void)
{
    EXPECT_EQ(run_scenario("never_freed", launched_never_freed, 1), 1);
    char *log = log_of("never_freed");
    EXPECT_CONTAINS(log, "3,145,728 bytes in 1 graph allocation by cudaGraphAddMemAllocNode() "
                         "is definitely lost");
    EXPECT_CONTAINS(log, "add_node_that_leaks");
    EXPECT_EQ(log && strstr(log, "launch_graph_a") == NULL, 1);
    free(log);
}

/* cudaGraphInstantiateFlagAutoFreeOnLaunch: each relaunch frees what the last launch
 * allocated and nobody released, so one allocation is live at a time, and the last one's is a
 * leak. A release outside between launches leaves nothing for the relaunch to free. */
static void auto_free(void)
{
    alloc_graph(GRAPH_A, EXEC_A, X, CHECK_GRAPH_AUTO_FREE_ON_LAUNCH);
    for (int i = 0; i < 3; i++) {
        check_graph_launched(EXEC_A);
        EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
    }
    EXPECT_EQ(release("cudaFree", free_mask, X), CHECK_GO);
    check_graph_launched(EXEC_A);
    EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
    check_graph_launched(EXEC_A);
    EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
}

static void test_auto_free(void)
{
    EXPECT_EQ(run_scenario("auto_free", auto_free, 0), 1);
    char *log = log_of("auto_free");
    EXPECT_CONTAINS(log, "67,108,864 bytes in 1 graph allocation by cudaGraphAddMemAllocNode() "
                         "is definitely lost");
    free(log);
}

/* Destroying the executable graph and the graph leaves their launches' memory allocated, until
 * the program releases it (X) or for good (Y: a leak). */
static void destroyed_outstanding(void)
{
    check_graph_alloc_node(GRAPH_A, "cudaGraphAddMemAllocNode", X, MiB, 0, 0);
    check_graph_alloc_node(GRAPH_A, "cudaGraphAddMemAllocNode", Y, 2 * MiB, 0, 0);
    check_graph_instantiated(GRAPH_A, EXEC_A, 0);
    check_graph_launched(EXEC_A);
    check_graph_exec_destroyed(EXEC_A);
    check_graph_destroyed(GRAPH_A);
    EXPECT_STR_EQ(live(X), "cudaGraphAddMemAllocNode");
    EXPECT_STR_EQ(live(Y), "cudaGraphAddMemAllocNode");
    EXPECT_EQ(release("cudaFreeAsync", free_async_mask, X), CHECK_GO);
}

static void test_destroyed_outstanding(void)
{
    EXPECT_EQ(run_scenario("destroyed", destroyed_outstanding, 0), 1);
    char *log = log_of("destroyed");
    EXPECT_CONTAINS(log, "2,097,152 bytes in 1 graph allocation by cudaGraphAddMemAllocNode() "
                         "is definitely lost");
    EXPECT_EQ(log && strstr(log, "1,048,576 bytes in") == NULL, 1);
    free(log);
}

/* Stream capture: cudaMallocAsync and cudaFreeAsync on a capturing stream add nodes to the
 * capture, which become the graph's when the capture ends. X is freed in the graph, Y is not
 * (a leak, named by the call that made its node). A capture that failed leaves nothing. */
static void captured(void)
{
    const uintptr_t capture = check_capture_key(7), failed = check_capture_key(8);
    check_graph_alloc_node(capture, "cudaMallocAsync", X, MiB, 0, 0);
    check_graph_alloc_node(failed, "cudaMallocAsync", X + 4 * MiB, MiB, 0, 0);
    check_graph_alloc_node(capture, "cudaMallocAsync", Y, 4 * MiB, 0, 0);
    check_graph_free_node(capture, "cudaFreeAsync", X, 0);
    EXPECT_NULL(live(X));
    check_graph_destroyed(failed);
    check_graph_merge(GRAPH_A, capture);
    check_graph_instantiated(GRAPH_A, EXEC_A, 0);
    check_graph_instantiated(capture, EXEC_B, 0); /* the capture is gone: nothing */
    check_graph_launched(EXEC_B);
    EXPECT_NULL(live(Y));
    check_graph_launched(EXEC_A);
    EXPECT_NULL(live(X));
    EXPECT_STR_EQ(live(Y), "cudaMallocAsync");
}

static void test_captured(void)
{
    EXPECT_EQ(run_scenario("captured", captured, 0), 1);
    char *log = log_of("captured");
    EXPECT_CONTAINS(log, "4,194,304 bytes in 1 graph allocation by cudaMallocAsync() is "
                         "definitely lost");
    free(log);
}

/* A child graph moved into its parent (cudaGraphAddNode with ownership moved) runs with it;
 * one address given to two allocations of a graph, the first freed before the second is
 * allocated, ends live as the second (made by cuGraphAddMemAllocNode). */
static void child_and_reuse(void)
{
    check_graph_alloc_node(GRAPH_B, "cudaGraphAddNode", X, MiB, 0, 0);
    check_graph_free_node(GRAPH_B, "cudaGraphAddNode", X, 0);
    check_graph_merge(GRAPH_A, GRAPH_B);
    check_graph_alloc_node(GRAPH_A, "cuGraphAddMemAllocNode", X, 2 * MiB, 0, 0);
    check_graph_instantiated(GRAPH_A, EXEC_A, 0);
    check_graph_launched(EXEC_A);
    EXPECT_STR_EQ(live(X), "cuGraphAddMemAllocNode");
    EXPECT_EQ(release("cuMemFree", free_mask, X), CHECK_GO);
}

static void test_child_and_reuse(void)
{
    EXPECT_EQ(run_scenario("child", child_and_reuse, 0), 0);
}

int main(void)
{
    main_frame = (uintptr_t)__builtin_frame_address(0);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_freed_outside);
    RUN(test_freed_in_graph);
    RUN(test_never_launched);
    RUN(test_launched_never_freed);
    RUN(test_auto_free);
    RUN(test_destroyed_outstanding);
    RUN(test_captured);
    RUN(test_child_and_reuse);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (!harness_failures && system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return harness_exit();
}

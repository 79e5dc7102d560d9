/* gpumem check --trace: the engine's trace from synthetic event streams (the entry points the
 * CUPTI and host front ends call), checked event by event: what went live and what was
 * released, by kind; a release CUDA refused puts the allocation back; wrong releases (which
 * change nothing) are not in the trace; a failed allocation is; a device reset releases what
 * the device held; allocations are named by the innermost frame of their stack. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "gpumem.h"
#include "harness.h"
#include "trace_read.h"

#define DEV ((uintptr_t)0x7f0000000000)
#define PIN ((uintptr_t)0x7e0000000000)
#define MAN ((uintptr_t)0x7d0000000000)

static char dir[] = "/tmp/gpumem-check-trace-XXXXXX";

__attribute__((noinline)) static uint32_t stack_here(void)
{
    return gpumem__stack_capture(0);
}

static void stream(void)
{
    uint32_t st = stack_here();
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV, 4096, 0, 0, st);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 0x10000, 1000, 0, 0, st);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, PIN, 8192, 0, 0, 0);
    check_alloc("cudaMallocManaged", GPUMEM_KIND_MANAGED, MAN, 1 << 20, 0, 0, 0);
    /* Right release. */
    if (check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV, 0) == CHECK_GO)
        check_release_end(DEV, 1);
    /* Refused by CUDA: live again, then released for real. */
    if (check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, PIN, 0) == CHECK_GO)
        check_release_end(PIN, 0);
    if (check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, PIN, 0) == CHECK_GO)
        check_release_end(PIN, 1);
    /* Mismatched (cudaFreeHost of managed memory) and double: findings, the trace unchanged. */
    check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, MAN, 0);
    check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, DEV, 0);
    /* Out of memory. */
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, 0, (size_t)1 << 50, 0, 2, st);
    /* The device's context goes: what it held is released with it. */
    check_device_reset("cudaDeviceReset", 0, 0);
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, DEV + 0x20000, 512, 0, 0, st); /* leaked */
}

static int run(const char *trace)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        char path[300];
        snprintf(path, sizeof path, "%s/check.err", dir);
        if (!freopen(path, "w", stderr))
            _exit(201);
        snprintf(path, sizeof path, "%s/check.log", dir);
        setenv("GPUMEM_CHECK_LOG", path, 1);
        setenv("GPUMEM_CHECK_TRACE", trace, 1);
        stream();
        check_finish("exited", 0);
        exit(0); /* the trace is finished at exit */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_engine_trace(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/check.json", dir);
    ASSERT_EQ(run(path), 0);
    trace_read_t t;
    ASSERT_EQ(trace_read(path, &t), 0);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_DEVICE], 3);
    EXPECT_EQ(t.alloc_bytes[GPUMEM_KIND_DEVICE], 4096 + 1000 + 512);
    EXPECT_EQ(t.releases[GPUMEM_KIND_DEVICE], 2); /* cudaFree, then the reset */
    EXPECT_EQ(t.release_bytes[GPUMEM_KIND_DEVICE], 4096 + 1000);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_PINNED], 2); /* made, and live again after the refusal */
    EXPECT_EQ(t.releases[GPUMEM_KIND_PINNED], 2);
    EXPECT_EQ(t.allocs[GPUMEM_KIND_MANAGED], 1);
    EXPECT_EQ(t.releases[GPUMEM_KIND_MANAGED], 1); /* by the reset */
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_DEVICE], 512);
    EXPECT_EQ(t.last_counter[GPUMEM_KIND_MANAGED], 0);
    EXPECT_EQ(t.failed, 1);

    int named = 0, by_call = 0, reset = 0, oom = 0;
    for (size_t i = 0; i < json_array_size(t.events); i++) {
        json_t *e = json_array_get(t.events, i), *args = json_object_get(e, "args");
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (strcmp(ph, "b") == 0 && json_integer_value(json_object_get(args, "stack"))) {
            named++;
            /* Named by the stack's innermost frame (the caller's, here). */
            EXPECT_CONTAINS(name, "test_check_trace.c:");
            EXPECT_STR_EQ(name, trace_stack_top(&t, json_integer_value(json_object_get(args, "stack"))));
            EXPECT_STR_EQ(json_string_value(json_object_get(args, "call")), "cudaMalloc");
        } else if (strcmp(ph, "b") == 0) {
            by_call++;
            EXPECT_TRUE(strcmp(name, "cudaMallocHost") == 0 ||
                        strcmp(name, "cudaMallocManaged") == 0);
        } else if (strcmp(ph, "e") == 0 &&
                   strcmp(json_string_value(json_object_get(args, "released_at")),
                          "cudaDeviceReset") == 0) {
            reset++;
        } else if (strcmp(ph, "i") == 0 && strcmp(name, "out of memory") == 0) {
            oom++;
            EXPECT_EQ(json_integer_value(json_object_get(args, "bytes")), 1ll << 50);
            EXPECT_STR_EQ(json_string_value(json_object_get(args, "cuda_error")),
                          "cudaErrorMemoryAllocation");
        }
    }
    EXPECT_EQ(named, 3);
    EXPECT_EQ(by_call, 3);
    EXPECT_EQ(reset, 2);
    EXPECT_EQ(oom, 1);
    json_decref(t.root);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    RUN(test_engine_trace);
    int rc = harness_exit();
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return rc;
}

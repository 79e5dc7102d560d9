/* The hooks of libgpumem_python.so, called with the signatures PyTorch and CuPy call them
 * with: every block is a gpumem pool allocation (statistics exact, the record names the hook
 * or, in Python, the caller), a failure returns NULL with the words available, and memory
 * released on one stream is not handed to another stream's request while it sits in the
 * first stream's cache.
 *
 * `test_python_hooks leak` is the child of the leak test: it allocates through the PyTorch
 * hook from leak_through_torch() and exits without releasing (ctest checks the report). */
#include <stdint.h>
#include <string.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "gpumem.h"
#include "gpumem_python.h"
#include "harness.h"

#define STREAM_A ((cudaStream_t)(uintptr_t)0x1000)
#define STREAM_B ((cudaStream_t)(uintptr_t)0x2000)

static void expect_live(uint64_t count, uint64_t bytes)
{
    gpumem_stats_t s;
    EXPECT_EQ(gpumem_stats(&s), GPUMEM_OK);
    EXPECT_EQ(s.count[GPUMEM_KIND_DEVICE].current, count);
    EXPECT_EQ(s.bytes[GPUMEM_KIND_DEVICE].current, bytes);
    EXPECT_EQ(s.device_bytes[0].current, bytes);
}

static void test_torch_signature(void)
{
    gpumem_stats_t before;
    gpumem_stats(&before);
    void *p = gpumem_torch_alloc(1000, 0, STREAM_A);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ((uintptr_t)p % GPUMEM_ALIGNMENT, 0);
    expect_live(1, 1000);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(p, &info), GPUMEM_OK);
    EXPECT_EQ(info.kind, GPUMEM_KIND_DEVICE);
    EXPECT_EQ(info.bytes, 1000);
    EXPECT_PTR_EQ(info.stream, STREAM_A);
    EXPECT_STR_EQ(info.func, "gpumem_torch_alloc"); /* no Python here: the hook's own site */
    gpumem_pool_stats_t ps;
    EXPECT_EQ(gpumem_python_pool_stats(0, &ps), GPUMEM_OK);
    EXPECT_EQ(ps.blocks_in_use, 1);
    EXPECT_EQ(ps.requested, 1000);
    gpumem_torch_free(p, 1000, 0, STREAM_A);
    expect_live(0, 0);
    gpumem_stats_t after;
    gpumem_stats(&after);
    EXPECT_EQ(after.count[GPUMEM_KIND_DEVICE].total, before.count[GPUMEM_KIND_DEVICE].total + 1);
    EXPECT_EQ(after.bytes[GPUMEM_KIND_DEVICE].total, before.bytes[GPUMEM_KIND_DEVICE].total + 1000);
    EXPECT_NULL(gpumem_torch_alloc(0, 0, STREAM_A)); /* zero bytes: nothing, as PyTorch asks */
    expect_live(0, 0);
}

static void test_cupy_signature(void)
{
    int param = 0;
    void *p = gpumem_cupy_malloc(&param, 3u << 20, 0);
    ASSERT_NOT_NULL(p);
    expect_live(1, 3u << 20);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(p, &info), GPUMEM_OK);
    EXPECT_STR_EQ(info.func, "gpumem_cupy_malloc");
    EXPECT_PTR_EQ(info.stream, NULL); /* CuPy's default stream: the legacy one */
    gpumem_cupy_free(&param, p, 0);
    expect_live(0, 0);
}

/* A block released on stream A stays in A's cache: B's request of the same size gets other
 * memory, A's next request gets the block back. */
static void test_stream_reuse(void)
{
    void *a = gpumem_torch_alloc(4096, 0, STREAM_A);
    ASSERT_NOT_NULL(a);
    gpumem_torch_free(a, 4096, 0, STREAM_A);
    void *b = gpumem_torch_alloc(4096, 0, STREAM_B);
    ASSERT_NOT_NULL(b);
    EXPECT_PTR_(!=, b, a);
    void *again = gpumem_torch_alloc(4096, 0, STREAM_A);
    EXPECT_PTR_EQ(again, a);
    gpumem_torch_free(b, 4096, 0, STREAM_B);
    gpumem_torch_free(again, 4096, 0, STREAM_A);
    /* Released on B although made on A (gpumem_python_free names the stream): B's cache. */
    void *c = gpumem_python_alloc(8192, 0, STREAM_A);
    ASSERT_NOT_NULL(c);
    EXPECT_EQ(gpumem_python_free(c, STREAM_B), GPUMEM_OK);
    void *d = gpumem_python_alloc(8192, 0, STREAM_A);
    EXPECT_PTR_(!=, d, c);
    void *e = gpumem_python_alloc(8192, 0, STREAM_B);
    EXPECT_PTR_EQ(e, c);
    EXPECT_EQ(gpumem_python_free(d, STREAM_A), GPUMEM_OK);
    EXPECT_EQ(gpumem_python_free(e, STREAM_B), GPUMEM_OK);
    expect_live(0, 0);
}

static void test_failures(void)
{
    reset_seen();
    EXPECT_NULL(gpumem_python_alloc((size_t)2 << 30, 0, STREAM_A)); /* the device has 1 GiB */
    EXPECT_EQ(gpumem_python_error_code(), GPUMEM_ENOMEM);
    EXPECT_CONTAINS(gpumem_python_error_message(), "gpumem: error: out of memory: 2.0 GiB");
    EXPECT_STR_EQ(gpumem_python_error_message(), seen.message); /* the handler's words */
    EXPECT_EQ(gpumem_python_oom_count(0), 1);
    EXPECT_NULL(gpumem_cupy_malloc(NULL, (size_t)2 << 30, 0));
    EXPECT_EQ(gpumem_python_oom_count(0), 2);
    EXPECT_NULL(gpumem_python_alloc(4096, 7, STREAM_A)); /* no device 7 */
    EXPECT_EQ(gpumem_python_error_code(), GPUMEM_ECUDA);
    EXPECT_CONTAINS(gpumem_python_error_message(), "device pool (device 7) failed");
    EXPECT_NULL(gpumem_cupy_malloc(NULL, 4096, -1));
    EXPECT_CONTAINS(gpumem_python_error_message(), "(device -1) failed");
    gpumem_pool_stats_t ps;
    EXPECT_EQ(gpumem_python_pool_stats(7, &ps), GPUMEM_EINVAL);
    EXPECT_EQ(ps.reserved, 0);
    EXPECT_EQ(gpumem_python_pool_stats(0, NULL), GPUMEM_EINVAL);
    /* A second release is gpumem's double free, reported by the handler. */
    void *p = gpumem_cupy_malloc(NULL, 256, 0);
    gpumem_cupy_free(NULL, p, 0);
    reset_seen();
    gpumem_cupy_free(NULL, p, 0);
    EXPECT_EQ(seen.code, GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(gpumem_python_error_code(), GPUMEM_EDOUBLEFREE);
    expect_live(0, 0);
}

/* The Python package's calls: the failure is the call's own, and it is not passed to the
 * handler (the package raises it); the frameworks' hooks still pass theirs on. */
static void test_package_calls(void)
{
    gpumem_python_failure why;
    reset_seen();
    EXPECT_NULL(gpumem_python_try_alloc((size_t)2 << 30, 0, STREAM_A, &why));
    EXPECT_EQ(why.code, GPUMEM_ENOMEM);
    EXPECT_CONTAINS(why.message, "gpumem: error: out of memory: 2.0 GiB");
    EXPECT_EQ(seen.code, GPUMEM_OK); /* not passed on */
    EXPECT_NULL(gpumem_python_alloc((size_t)2 << 30, 0, STREAM_A));
    EXPECT_EQ(seen.code, GPUMEM_ENOMEM); /* the framework's hook: passed on to the handler */
    reset_seen();
    EXPECT_EQ(gpumem_python_try_free((void *)(uintptr_t)0x12345600, STREAM_A, &why),
              GPUMEM_EFOREIGN);
    EXPECT_EQ(why.code, GPUMEM_EFOREIGN);
    EXPECT_CONTAINS(why.message, "which gpumem did not allocate");
    EXPECT_EQ(seen.code, GPUMEM_OK);
    void *p = gpumem_python_try_alloc(4096, 0, STREAM_A, &why);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(why.code, GPUMEM_OK);
    EXPECT_STR_EQ(why.message, "");
    EXPECT_EQ(gpumem_python_try_free(p, STREAM_A, &why), GPUMEM_OK);
    EXPECT_EQ(why.code, GPUMEM_OK);
    EXPECT_NULL(gpumem_python_try_alloc(0, 0, STREAM_A, &why)); /* nothing, and no failure */
    EXPECT_EQ(why.code, GPUMEM_OK);
    gpumem_error_handler fn;
    void *arg;
    gpumem_get_error_handler(&fn, &arg);
    EXPECT_TRUE(fn != capture); /* the hooks' handler in front of the test's */
    gpumem_cupy_free(NULL, (void *)(uintptr_t)0x12345600, 0);
    EXPECT_EQ(seen.code, GPUMEM_EFOREIGN);
    expect_live(0, 0);
}

/* PyTorch takes NULL for a tensor at address 0: a failed torch allocation stops the process
 * with gpumem's reason (SIGABRT) instead of returning. In a child, its stderr read back. */
static void test_torch_oom_stops(void)
{
    int fds[2];
    EXPECT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        gpumem_set_error_handler(NULL, NULL); /* the default handler prints the reason */
        gpumem_torch_alloc((ssize_t)2 << 30, 0, STREAM_A); /* the device has 1 GiB */
        _exit(0);
    }
    close(fds[1]);
    char err[8192];
    size_t n = 0;
    ssize_t k;
    while (n < sizeof err - 1 && (k = read(fds[0], err + n, sizeof err - 1 - n)) > 0)
        n += (size_t)k;
    err[n] = '\0';
    close(fds[0]);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    EXPECT_CONTAINS(err, "gpumem: error: out of memory: 2.0 GiB");
    EXPECT_CONTAINS(err, "PyTorch cannot be told that an allocation failed");
}

static void test_report(void)
{
    void *p = gpumem_torch_alloc(5000, 0, STREAM_A);
    char *text = gpumem_python_report(GPUMEM_REPORT_FULL);
    EXPECT_CONTAINS(text, "1 allocation (4.9 KiB) still live");
    EXPECT_CONTAINS(text, "(gpumem_torch_alloc)");
    gpumem_python_string_free(text);
    gpumem_torch_free(p, 5000, 0, STREAM_A);
    text = gpumem_python_report(GPUMEM_REPORT_SUMMARY);
    EXPECT_STR_EQ(text, ""); /* nothing live: nothing to say */
    gpumem_python_string_free(text);
}

/* Not a tail call (the frame would go at -O2): the pointer is kept in a global afterwards. */
static void *volatile leaked;
__attribute__((noinline)) static void *leak_through_torch(void)
{
    void *p = gpumem_torch_alloc(12345, 0, STREAM_A);
    leaked = p;
    return leaked;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "leak") == 0)
        return leak_through_torch() ? 0 : 1;
    gpumem_set_error_handler(capture, NULL);
    test_torch_signature();
    test_cupy_signature();
    test_stream_reuse();
    test_failures();
    test_torch_oom_stops();
    test_report();
    test_package_calls();
    return harness_exit();
}

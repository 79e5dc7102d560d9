/* Status codes, CUDA error names, GPUMEM_CHECK and the handler. Links the CUDA runtime only
 * to compare gpumem's generated table with cudaGetErrorName/String (no GPU needed). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpumem.h"
#include "capture.h"
#include "harness.h"

static void test_status_table(void)
{
    static const int codes[] = {GPUMEM_OK,        GPUMEM_ENOMEM,   GPUMEM_EOVERFLOW,
                                GPUMEM_EINVAL,    GPUMEM_ENODEV,   GPUMEM_EFOREIGN,
                                GPUMEM_EDOUBLEFREE, GPUMEM_EINTERIOR, GPUMEM_ECUDA,
                                GPUMEM_ESTICKY,   GPUMEM_EKIND,    GPUMEM_EBUSY,
                                GPUMEM_EMISALIGNED, GPUMEM_EIO};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        EXPECT_LE(codes[i], 0);
        EXPECT_TRUE(strncmp(gpumem_err_name(codes[i]), "GPUMEM_", 7) == 0);
        EXPECT_TRUE(strcmp(gpumem_strerror(codes[i]), "unknown status") != 0);
        for (size_t j = 0; j < i; j++)
            EXPECT_NE(codes[i], codes[j]);
    }
    EXPECT_STR_EQ(gpumem_err_name(GPUMEM_EDOUBLEFREE), "GPUMEM_EDOUBLEFREE");
    EXPECT_STR_EQ(gpumem_strerror(GPUMEM_EDOUBLEFREE), "double free");
    EXPECT_STR_EQ(gpumem_err_name(-999), "GPUMEM_EUNKNOWN");
    EXPECT_STR_EQ(gpumem_strerror(-999), "unknown status");
    EXPECT_STR_EQ(gpumem_kind_name(GPUMEM_KIND_PINNED), "pinned");
    EXPECT_STR_EQ(gpumem_kind_name(99), "unknown");
}

/* Every cudaError_t the runtime knows has the runtime's own name and message in gpumem. */
static void test_cuda_names_match_runtime(void)
{
    int known = 0;
    for (int code = 1; code < 12000; code++) {
        const char *name = cudaGetErrorName((cudaError_t)code);
        if (strncmp(name, "cudaError", 9) != 0)
            continue;
        known++;
        EXPECT_STR_EQ(gpumem_err_name(code), name);
        EXPECT_STR_EQ(gpumem_strerror(code), cudaGetErrorString((cudaError_t)code));
    }
    EXPECT_GE(known, 50);
    EXPECT_STR_EQ(gpumem_err_name(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
    EXPECT_STR_EQ(gpumem_err_name(11999), "cudaErrorUnknownCode");
}

static void test_check_cuda_error(void)
{
    memset(&seen, 0, sizeof seen);
    EXPECT_EQ(GPUMEM_CHECK(cudaSuccess), 0);
    EXPECT_EQ(seen.calls, 0);
    int line = __LINE__ + 1;
    int rc = GPUMEM_CHECK(cudaErrorMemoryAllocation);
    EXPECT_EQ(rc, cudaErrorMemoryAllocation);
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(seen.last.code, GPUMEM_ENOMEM);
    EXPECT_EQ(seen.last.checked, 1);
    EXPECT_EQ(seen.last.site.line, line);
    EXPECT_STR_EQ(seen.last.cuda_name, "cudaErrorMemoryAllocation");
    char want[256];
    snprintf(want, sizeof want,
             "gpumem: error: %s:%d: test_check_cuda_error: cudaErrorMemoryAllocation: "
             "cudaErrorMemoryAllocation: out of memory",
             __FILE__, line);
    EXPECT_CONTAINS(seen.last.message, want);
    EXPECT_CONTAINS(seen.last.message, "\n    live in gpumem: ");
    EXPECT_CONTAINS(seen.last.message, "\n    device 0: "); /* sim device */

    rc = GPUMEM_CHECK(cudaErrorMisalignedAddress);
    EXPECT_EQ(seen.last.code, GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.last.message, "misaligned address");
    EXPECT_CONTAINS(seen.last.message, "this error is sticky");
    GPUMEM_CHECK(cudaErrorInvalidValue);
    EXPECT_EQ(seen.last.code, GPUMEM_ECUDA);
    EXPECT_CONTAINS(seen.last.message, "cudaErrorInvalidValue: invalid argument");
}

static void test_check_gpumem_status(void)
{
    memset(&seen, 0, sizeof seen);
    int x;
    int rc = GPUMEM_CHECK(gpumem_free(&x));
    EXPECT_EQ(rc, GPUMEM_EFOREIGN);
    EXPECT_EQ(seen.calls, 2); /* the failing call, then the check */
    EXPECT_EQ(seen.last.checked, 1);
    EXPECT_CONTAINS(seen.last.message, "gpumem_free(&x): GPUMEM_EFOREIGN: pointer was not "
                                       "allocated by gpumem");
    /* A status not produced by a gpumem call just before. */
    rc = GPUMEM_CHECK(GPUMEM_EBUSY);
    EXPECT_EQ(seen.last.code, GPUMEM_EBUSY);
    EXPECT_CONTAINS(seen.last.message, "GPUMEM_EBUSY: resource still in use");
}

/* The default handler aborts on a failed check, and only prints otherwise. */
static void test_default_handler_aborts_on_check(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        gpumem_set_error_handler(NULL, NULL);
        int x;
        if (gpumem_free(&x) != GPUMEM_EFOREIGN) /* prints, returns */
            _exit(10);
        GPUMEM_CHECK(cudaErrorInvalidValue);   /* prints, aborts */
        _exit(11);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WIFSIGNALED(status) ? WTERMSIG(status) : -1, SIGABRT);
}

/* The handler in use can be read, to chain to it; NULL restores the default. */
static void test_get_handler(void)
{
    int mark;
    gpumem_error_handler fn = NULL;
    void *arg = NULL;
    gpumem_set_error_handler(capture, &mark);
    gpumem_get_error_handler(&fn, &arg);
    EXPECT_TRUE(fn == capture);
    EXPECT_PTR_EQ(arg, &mark);
    gpumem_set_error_handler(NULL, &mark);
    gpumem_get_error_handler(&fn, &arg);
    EXPECT_TRUE(fn == gpumem_default_error_handler);
    EXPECT_PTR_EQ(arg, NULL);
    gpumem_get_error_handler(NULL, NULL); /* either may be left out */
    gpumem_set_error_handler(capture, NULL);
}

int main(void)
{
    gpumem_set_error_handler(capture, NULL);
    RUN(test_status_table);
    RUN(test_cuda_names_match_runtime);
    RUN(test_check_cuda_error);
    RUN(test_check_gpumem_status);
    RUN(test_default_handler_aborts_on_check);
    RUN(test_get_handler);
    return harness_exit();
}

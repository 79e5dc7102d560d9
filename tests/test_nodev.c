/* No usable device: every call fails cleanly with GPUMEM_ENODEV and CUDA's (or the
 * loader's) reason; nothing crashes. argv[1] is the driver library to load, argv[2] the text
 * the reason must contain. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <unistd.h>

#include "gpumem.h"
#include "harness.h"

static int calls;
static char last[1024];

static void capture(const gpumem_error *e, void *arg)
{
    (void)arg;
    calls++;
    snprintf(last, sizeof last, "%s", e->message);
}

static const char *expected;

static void test_every_call_reports_enodev(void)
{
    EXPECT_EQ(gpumem_init(), GPUMEM_ENODEV);
    EXPECT_CONTAINS(last, "gpumem: error: gpumem_init: no usable CUDA device");
    EXPECT_CONTAINS(last, expected);
    EXPECT_CONTAINS(last, "GPUMEM_BACKEND=sim");
    EXPECT_STR_EQ(gpumem_backend(), "cuda");
    EXPECT_NULL(gpumem_device_alloc(1, 1));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ENODEV);
    EXPECT_CONTAINS(last, "gpumem_device_alloc at ");
    EXPECT_NULL(gpumem_pinned_alloc(1, 1));
    EXPECT_NULL(gpumem_managed_alloc(1, 1, 0));
    EXPECT_NULL(gpumem_host_alloc(1, 1, 0));
    EXPECT_NULL(gpumem_device_alloc_async(1, 1, NULL));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ENODEV);
    EXPECT_EQ(gpumem_device_count(), 0);
    gpumem_device_info d;
    EXPECT_EQ(gpumem_device_get(0, &d), GPUMEM_ENODEV);
    int x;
    EXPECT_EQ(gpumem_free(&x), GPUMEM_EFOREIGN);
    EXPECT_CONTAINS(last, "CUDA could not say what it is");
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

/* The default handler says why and what to do once; later calls that meet no device say their
 * own first line and point up. */
static void test_default_handler_says_why_once(void)
{
    FILE *out = tmpfile();
    ASSERT_NOT_NULL(out);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(out), 2);
    gpumem_set_error_handler(NULL, NULL);
    for (int i = 0; i < 3; i++)
        EXPECT_NULL(gpumem_device_alloc(1, 1));
    gpumem_set_error_handler(capture, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[8192] = {0};
    rewind(out);
    size_t n = fread(text, 1, sizeof text - 1, out);
    fclose(out);
    text[n] = '\0';
    EXPECT_EQ(count_of(text, "no usable CUDA device"), 3);
    EXPECT_EQ(count_of(text, "hint: "), 1);
    EXPECT_EQ(count_of(text, expected), 1);
    EXPECT_EQ(count_of(text, "(why: the first such error above)"), 2);
}

/* After a failed backend, the simulated device may be chosen explicitly; then it is fixed. */
static void test_fallback_to_sim(void)
{
    EXPECT_EQ(gpumem_backend_select("sim"), GPUMEM_OK);
    EXPECT_EQ(gpumem_init(), GPUMEM_OK);
    EXPECT_STR_EQ(gpumem_backend(), "sim");
    void *p = gpumem_device_alloc(1, 1);
    EXPECT_NE((uintptr_t)p, 0);
    EXPECT_EQ(gpumem_backend_select("cuda"), GPUMEM_EBUSY);
    EXPECT_EQ(gpumem_backend_select("sim"), GPUMEM_OK);
    EXPECT_EQ(gpumem_backend_select("vulkan"), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s (set GPUMEM_LIBCUDA) EXPECTED-REASON\n", argv[0]);
        return 2;
    }
    (void)argv[1];
    expected = argv[2];
    gpumem_set_error_handler(capture, NULL);
    RUN(test_every_call_reports_enodev);
    RUN(test_default_handler_says_why_once);
    RUN(test_fallback_to_sim);
    return harness_exit();
}

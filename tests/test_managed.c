/* Managed memory: gpumem_prefetch and gpumem_advise, every error path and its
 * message, and the backend entries beneath them answering as CUDA does. Runs on the simulated
 * device (`test_managed sim`, label host) and on a GPU (`test_managed cuda`, label gpu). */
#define _POSIX_C_SOURCE 200809L

#include "gpumem.h"
#include "capture.h"
#include "backend_arg.h"
#include "harness.h"
#include "internal.h"

static int use_cuda;

static void test_prefetch_ok(void)
{
    reset_seen();
    char *m = gpumem_managed_alloc(1 << 20, 1, GPUMEM_ATTACH_GLOBAL);
    ASSERT_NOT_NULL(m);
    memset(m, 1, 1 << 20); /* host first touch */
    EXPECT_EQ(gpumem_prefetch(m, 1 << 20, 0, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_EQ(gpumem_prefetch(m + 4096, 8192, 0, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_prefetch(m, 1 << 20, GPUMEM_HOST, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_prefetch(m + (1 << 20) - 1, 1, GPUMEM_HOST, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_prefetch(m, 0, 0, NULL), GPUMEM_OK); /* nothing to do */
    EXPECT_EQ(m[12345], 1);                              /* back on the host */
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(gpumem_free(m), GPUMEM_OK);
}

static void test_prefetch_errors(void)
{
    reset_seen();
    char *m = gpumem_managed_alloc(8192, 1, GPUMEM_ATTACH_GLOBAL);
    int alloc_line = __LINE__ - 1;
    char *d = gpumem_device_alloc(4096, 1);
    char *h = gpumem_pinned_alloc(4096, 1);
    ASSERT_NOT_NULL(m);
    ASSERT_NOT_NULL(d);
    ASSERT_NOT_NULL(h);
    char want[512];

    /* Past the end. */
    EXPECT_EQ(gpumem_prefetch(m + 4096, 8192, 0, NULL), GPUMEM_EINVAL);
    int line = __LINE__ - 1;
    snprintf(want, sizeof want, "gpumem: error: gpumem_prefetch: prefetch of 8.0 KiB at %p, 4096 "
                                "bytes into the 8.0 KiB managed allocation: the range runs 4096 "
                                "bytes past its end", (void *)(m + 4096));
    EXPECT_CONTAINS(seen.message, want);
    snprintf(want, sizeof want, "called at          %s:%d (test_prefetch_errors)", __FILE__, line);
    EXPECT_CONTAINS(seen.message, want);
    snprintf(want, sizeof want, "allocated at       %s:%d (test_prefetch_errors), thread ",
             __FILE__, alloc_line);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "at most 4096 bytes remain from there; nothing was done");
    EXPECT_EQ(gpumem_last_error()->alloc_kind, GPUMEM_KIND_MANAGED);
    EXPECT_EQ(gpumem_last_error()->alloc_offset, 4096);
    EXPECT_EQ(gpumem_prefetch(m, SIZE_MAX, 0, NULL), GPUMEM_EINVAL);

    /* Other kinds. */
    EXPECT_EQ(gpumem_prefetch(d, 4096, 0, NULL), GPUMEM_EKIND);
    snprintf(want, sizeof want, "gpumem_prefetch: prefetch of %p: it is in 4.0 KiB device "
                                "memory, not managed memory; only managed memory migrates",
             (void *)d);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "hint: device memory is already on its device");
    EXPECT_EQ(gpumem_prefetch(h + 8, 16, GPUMEM_HOST, NULL), GPUMEM_EKIND);
    EXPECT_CONTAINS(seen.message, "it is in 4.0 KiB pinned memory, not managed memory");
    EXPECT_CONTAINS(seen.message, "pinned host memory stays on the host");
    EXPECT_EQ(gpumem_last_error()->alloc_offset, 8);

    /* Foreign and NULL. */
    int x;
    EXPECT_EQ(gpumem_prefetch(&x, sizeof x, 0, NULL), GPUMEM_EFOREIGN);
    snprintf(want, sizeof want, "gpumem_prefetch: prefetch of %p, which is not inside memory "
                                "gpumem allocated\n    CUDA does not know it", (void *)&x);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "hint: allocate managed memory with gpumem_managed_alloc");
    EXPECT_EQ(gpumem_prefetch(NULL, 16, 0, NULL), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_prefetch: prefetch of NULL: NULL is not managed memory");

    /* No such device. */
    int n = gpumem_device_count();
    EXPECT_EQ(gpumem_prefetch(m, 64, n, NULL), GPUMEM_EINVAL);
    snprintf(want, sizeof want, "gpumem_prefetch: device %d does not exist (%d device%s): use 0 "
                                "to %d, or GPUMEM_HOST (-1) for the host",
             n, n, n == 1 ? "" : "s", n - 1);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_EQ(gpumem_prefetch(m, 64, -2, NULL), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "device -2 does not exist");

    EXPECT_EQ(gpumem_free(m), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(h), GPUMEM_OK);
    reset_seen();
}

static void test_advise(void)
{
    reset_seen();
    char *m = gpumem_managed_alloc(1 << 20, 1, GPUMEM_ATTACH_GLOBAL);
    char *d = gpumem_device_alloc(4096, 1);
    ASSERT_NOT_NULL(m);
    ASSERT_NOT_NULL(d);
    EXPECT_EQ(gpumem_advise(m, 1 << 20, cudaMemAdviseSetReadMostly, 0), GPUMEM_OK);
    EXPECT_EQ(gpumem_advise(m, 1 << 20, cudaMemAdviseUnsetReadMostly, 99), GPUMEM_OK); /* unused */
    EXPECT_EQ(gpumem_advise(m, 1 << 20, cudaMemAdviseSetPreferredLocation, 0), GPUMEM_OK);
    EXPECT_EQ(gpumem_advise(m, 1 << 20, cudaMemAdviseSetPreferredLocation, GPUMEM_HOST),
              GPUMEM_OK);
    EXPECT_EQ(gpumem_advise(m, 1 << 20, cudaMemAdviseUnsetPreferredLocation, 0), GPUMEM_OK);
    EXPECT_EQ(gpumem_advise(m + 4096, 4096, cudaMemAdviseSetAccessedBy, 0), GPUMEM_OK);
    EXPECT_EQ(gpumem_advise(m + 4096, 4096, cudaMemAdviseUnsetAccessedBy, 0), GPUMEM_OK);
    EXPECT_EQ(gpumem_advise(m, 0, cudaMemAdviseSetReadMostly, 0), GPUMEM_OK);
    EXPECT_EQ(seen.calls, 0);

    EXPECT_EQ(gpumem_advise(m, 16, 9, 0), GPUMEM_EINVAL);
    int line = __LINE__ - 1;
    EXPECT_CONTAINS(seen.message, "gpumem: error: gpumem_advise: advice 9 is not a "
                                  "cudaMemoryAdvise value (1 cudaMemAdviseSetReadMostly to 6 "
                                  "cudaMemAdviseUnsetAccessedBy)");
    char want[512];
    snprintf(want, sizeof want, "called at          %s:%d", __FILE__, line);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_EQ(gpumem_advise(m, 16, 0, 0), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_advise(m, (1 << 20) + 1, cudaMemAdviseSetReadMostly, 0), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_advise: advice for 1.0 MiB at ");
    EXPECT_CONTAINS(seen.message, "the range runs 1 bytes past its end");
    EXPECT_EQ(gpumem_advise(d, 16, cudaMemAdviseSetReadMostly, 0), GPUMEM_EKIND);
    EXPECT_CONTAINS(seen.message, "gpumem_advise: advice for ");
    EXPECT_CONTAINS(seen.message, "4.0 KiB device memory, not managed memory");
    int x;
    EXPECT_EQ(gpumem_advise(&x, 4, cudaMemAdviseSetReadMostly, 0), GPUMEM_EFOREIGN);
    EXPECT_EQ(gpumem_advise(NULL, 4, cudaMemAdviseSetReadMostly, 0), GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_advise(m, 16, cudaMemAdviseSetAccessedBy, 64), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_advise: device 64 does not exist");
    EXPECT_EQ(gpumem_free(m), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    reset_seen();
}

/* The backend entries, called directly as gpumem never would, answer as CUDA does. These
 * are the answers measured on an H200 (docs/memory-kinds.md); the simulated device must give
 * the same. */
static void test_backend_answers(void)
{
    void *m = NULL, *d = NULL;
    ASSERT_EQ(gpumem__be->malloc_managed(&m, 8192, cudaMemAttachGlobal), 0);
    ASSERT_EQ(gpumem__be->malloc_device(&d, 8192), 0);
    EXPECT_EQ(gpumem__be->prefetch(m, 8192, 0, NULL), 0);
    EXPECT_EQ(gpumem__be->prefetch(m, 8192, -1, NULL), 0);
    EXPECT_EQ(gpumem__be->advise(m, 8192, cudaMemAdviseSetReadMostly, 0), 0);
    EXPECT_EQ(gpumem__be->advise(m, 8192, cudaMemAdviseSetPreferredLocation, -1), 0);
    EXPECT_EQ(gpumem__be->prefetch(m, 8192, 64, NULL), cudaErrorInvalidDevice);
    EXPECT_EQ(gpumem__be->advise(m, 8192, 99, 0), cudaErrorInvalidValue);
    EXPECT_EQ(gpumem__be->prefetch(d, 8192, 0, NULL), cudaErrorInvalidValue);
    EXPECT_EQ(gpumem__be->advise(d, 8192, cudaMemAdviseSetReadMostly, 0), cudaErrorInvalidValue);
    EXPECT_EQ(gpumem__be->prefetch(m, 0, 0, NULL), cudaErrorInvalidValue);
    EXPECT_EQ(gpumem__be->free(m), 0);
    EXPECT_EQ(gpumem__be->free(d), 0);
}

/* A sticky error (simulated device only): reported as such, nothing crashes. */
static void test_sticky(void)
{
    reset_seen();
    char *m = gpumem_managed_alloc(4096, 1, GPUMEM_ATTACH_GLOBAL);
    ASSERT_NOT_NULL(m);
    gpumem__sim_poison(cudaErrorMisalignedAddress);
    EXPECT_EQ(gpumem_prefetch(m, 4096, 0, NULL), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "gpumem_prefetch: prefetch of 4.0 KiB at ");
    EXPECT_CONTAINS(seen.message, "CUDA failed with cudaErrorMisalignedAddress: misaligned address");
    EXPECT_CONTAINS(seen.message, "this error is sticky");
    EXPECT_EQ(gpumem_advise(m, 4096, cudaMemAdviseSetReadMostly, 0), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "gpumem_advise: advice for 4.0 KiB at ");
    EXPECT_EQ(gpumem_prefetch(m, 4096, GPUMEM_HOST, NULL), GPUMEM_ESTICKY);
    /* The devices cannot be counted either: the prefetch itself reports the error. */
    EXPECT_EQ(gpumem_prefetch(m, 4096, 1, NULL), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "CUDA failed with cudaErrorMisalignedAddress");
    /* A CUDA error that is not sticky is GPUMEM_ECUDA. */
    gpumem__sim_poison(cudaErrorInvalidValue);
    EXPECT_EQ(gpumem_prefetch(m, 4096, 0, NULL), GPUMEM_ECUDA);
    EXPECT_CONTAINS(seen.message, "CUDA failed with cudaErrorInvalidValue");
    EXPECT_TRUE(strstr(seen.message, "this error is sticky") == NULL);
    gpumem__sim_poison(0);
    EXPECT_EQ(gpumem_free(m), GPUMEM_OK);
    reset_seen();
}

int main(int argc, char **argv)
{
    use_cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    RUN(test_prefetch_ok);
    RUN(test_prefetch_errors);
    RUN(test_advise);
    RUN(test_backend_answers);
    if (!use_cuda)
        RUN(test_sticky);
    gpumem_live live;
    gpumem_live_get(&live);
    EXPECT_EQ(live.count[0], 0);
    return harness_exit();
}

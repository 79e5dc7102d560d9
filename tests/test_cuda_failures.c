/* When CUDA itself fails: the simulated device is made to answer every call with an error,
 * as a dead context does. A sticky error (the context is lost) takes the record out of the
 * registry for good and says the process must restart; a non-sticky refusal of a release
 * leaves the allocation live and owned by the caller; allocations and device queries report
 * the sticky state too. */
#include "capture.h"
#include "harness.h"
#include "internal.h"

static void test_release_refused_not_sticky(void)
{
    reset_seen();
    void *q = gpumem_device_alloc(1, 4096);
    ASSERT_NOT_NULL(q);
    uint64_t before = live_total();
    gpumem__sim_poison(cudaErrorInvalidValue);
    EXPECT_EQ(gpumem_free(q), GPUMEM_ECUDA);
    gpumem__sim_poison(0);
    EXPECT_EQ(seen.last.cuda_error, cudaErrorInvalidValue);
    EXPECT_CONTAINS(seen.message, "gpumem_free of 4.0 KiB device memory at");
    EXPECT_CONTAINS(seen.message, "CUDA failed with cudaErrorInvalidValue: invalid argument");
    EXPECT_CONTAINS(seen.message, "the allocation is still live and owned by the caller");
    EXPECT_EQ(live_total(), before); /* put back: still live, still gpumem's */
    gpumem_info info;
    EXPECT_EQ(gpumem_query(q, &info), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(q), GPUMEM_OK); /* and it can be released once CUDA agrees */
    EXPECT_EQ(live_total(), before - 1);
}

static void test_sticky(void)
{
    reset_seen();
    void *p = gpumem_pinned_alloc(1, 8192);
    ASSERT_NOT_NULL(p);
    uint64_t before = live_total();
    gpumem__sim_poison(cudaErrorMisalignedAddress);

    EXPECT_EQ(gpumem_free(p), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "CUDA failed with cudaErrorMisalignedAddress: misaligned address");
    EXPECT_CONTAINS(seen.message, "this error is sticky");
    EXPECT_EQ(live_total(), before - 1); /* the memory's fate is unknown: not gpumem's anymore */

    EXPECT_NULL(gpumem_device_alloc(1, 4096));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "gpumem_device_alloc of 4.0 KiB failed at");
    EXPECT_CONTAINS(seen.message, "restart the process");

    EXPECT_EQ(gpumem_device_count(), 0);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "gpumem_device_count: CUDA failed with cudaErrorMisalignedAddress");
    gpumem_device_info d;
    EXPECT_EQ(gpumem_device_get(0, &d), GPUMEM_ESTICKY);
    EXPECT_CONTAINS(seen.message, "gpumem_device_get(0): CUDA failed with");

    gpumem__sim_poison(0);
    EXPECT_EQ(gpumem__be->free_host(p), cudaSuccess); /* the simulated driver still held it */
    EXPECT_EQ(gpumem__sim_live_count(), 0);
}

int main(void)
{
    gpumem_set_error_handler(capture, NULL);
    gpumem_backend_select("sim");
    if (gpumem_init() != GPUMEM_OK)
        return 1;
    RUN(test_release_refused_not_sticky);
    RUN(test_sticky);
    return harness_exit();
}

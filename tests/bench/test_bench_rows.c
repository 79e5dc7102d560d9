/* The allocation rows of `gpumem bench`, in table order, without a GPU: the device pool's
 * first peers are the stream-ordered allocator at both release thresholds, then CUB, every
 * CUB row (and only those) marked deprecated, and each 16-thread row compared with the
 * 16-thread gpumem row. */
#include "bench.h"
#include "harness.h"

/* The position of row @key, or -1. */
static int position(const char *key)
{
    const char *k, *vs, *dep;
    for (int i = 0; bench_alloc_row_info(i, &k, &vs, &dep); i++)
        if (strcmp(k, key) == 0)
            return i;
    return -1;
}

static void first_peers(void)
{
    int pool = position("pool_device");
    ASSERT_NE(pool, -1);
    const char *want[] = {"cuda_malloc_async", "cuda_malloc_async_keep", "cub_caching_allocator"};
    const char *k, *vs, *dep;
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(bench_alloc_row_info(pool + 1 + i, &k, &vs, &dep), 1);
        EXPECT_STR_EQ(k, want[i]);
        EXPECT_STR_EQ(vs, "pool_device");
    }
    int pool16 = position("pool_device_16t");
    ASSERT_NE(pool16, -1);
    const char *want16[] = {"cuda_malloc_async_16t", "cuda_malloc_async_keep_16t",
                            "cub_caching_allocator_16t"};
    for (int i = 0; i < 3; i++) {
        ASSERT_EQ(bench_alloc_row_info(pool16 + 1 + i, &k, &vs, &dep), 1);
        EXPECT_STR_EQ(k, want16[i]);
        EXPECT_STR_EQ(vs, "pool_device_16t");
    }
}

static void deprecated_rows(void)
{
    const char *k, *vs, *dep;
    int n = 0;
    for (int i = 0; bench_alloc_row_info(i, &k, &vs, &dep); i++) {
        int cub = strncmp(k, "cub_", 4) == 0;
        EXPECT_EQ(dep != NULL, cub);
        if (dep)
            EXPECT_CONTAINS(dep, "cudaMallocAsync");
        n++;
    }
    EXPECT_EQ(n, 19);
    EXPECT_EQ(bench_alloc_row_info(n, &k, &vs, &dep), 0);
    EXPECT_EQ(bench_alloc_row_info(-1, &k, &vs, &dep), 0);
}

int main(void)
{
    RUN(first_peers);
    RUN(deprecated_rows);
    return harness_exit();
}

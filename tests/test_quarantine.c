/* The quarantine is bounded (GPUMEM_QUARANTINE, set to 64 here): a double free is recognised
 * while the first release is remembered, and reported as a foreign pointer once forgotten.
 * Also: interior lookups of large allocations, and an address CUDA hands out again. */
#include "gpumem.h"
#include "harness.h"

static int last_code;
static void capture(const gpumem_error *e, void *arg)
{
    (void)arg;
    last_code = e->code;
}

static void test_bounded_memory_of_releases(void)
{
    void *first = gpumem_device_alloc(1, 256);
    ASSERT_NOT_NULL(first);
    EXPECT_EQ(gpumem_free(first), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(first), GPUMEM_EDOUBLEFREE);
    /* Hold many blocks live so the allocator cannot reuse `first`, and release them all. */
    enum { N = 20000 };
    static void *p[N];
    for (int i = 0; i < N; i++)
        p[i] = gpumem_device_alloc(1, 256);
    for (int i = 0; i < N; i++)
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    int reused = 0;
    for (int i = 0; i < N; i++)
        reused |= p[i] == first;
    if (!reused)
        EXPECT_EQ(gpumem_free(first), GPUMEM_EFOREIGN); /* forgotten: 20000 releases since */
    EXPECT_EQ(gpumem_free(p[N - 1]), GPUMEM_EDOUBLEFREE); /* the latest are remembered */
}

static void test_same_address_again(void)
{
    for (int i = 0; i < 100; i++) {
        void *p = gpumem_device_alloc(1, 512);
        ASSERT_NOT_NULL(p);
        EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    }
    void *p = gpumem_device_alloc(1, 512);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(p), GPUMEM_EDOUBLEFREE);
}

static void test_large_interior(void)
{
    char *big = gpumem_device_alloc(1, 64u << 20);
    char *small = gpumem_device_alloc(1, 1000);
    ASSERT_NOT_NULL(big);
    ASSERT_NOT_NULL(small);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(big + (60u << 20) + 3, &info), GPUMEM_OK);
    EXPECT_PTR_EQ(info.base, big);
    EXPECT_EQ(info.offset, (60u << 20) + 3);
    EXPECT_EQ(gpumem_query(big + (64u << 20), &info) == GPUMEM_OK && info.base == big, 0);
    EXPECT_EQ(gpumem_query(small + 999, &info), GPUMEM_OK);
    EXPECT_PTR_EQ(info.base, small);
    EXPECT_EQ(gpumem_free(big + 4096), GPUMEM_EINTERIOR);
    EXPECT_EQ(gpumem_free(big), GPUMEM_OK);
    EXPECT_EQ(gpumem_query(big + 4096, &info), GPUMEM_EFOREIGN);
    EXPECT_EQ(gpumem_free(small), GPUMEM_OK);
}

int main(void)
{
    gpumem_set_error_handler(capture, NULL);
    RUN(test_bounded_memory_of_releases);
    RUN(test_same_address_again);
    RUN(test_large_interior);
    (void)last_code;
    return harness_exit();
}

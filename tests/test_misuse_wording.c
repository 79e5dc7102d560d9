/* Misuse whose diagnosis used to be wrong: a copy from memory gpumem already released (taken
 * for pageable host memory, so the copy read memory that was gone), two separate allocations
 * closer together than the bytes copied (called an overlap: it is an overrun), and a vector
 * view whose range wraps past the end of the address space (NULL with GPUMEM_OK), a free
 * inside a pool block's size-class rounding (called raw cudaMallocHost memory), and a free in
 * the alignment padding after a device allocation (called ordinary host memory). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>

#include "backend_arg.h"
#include "gpumem.h"
#include "harness.h"

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static void test_copy_from_released(void)
{
    static char host[4096];
    char *p = gpumem_device_alloc(1, 4096);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(host, p + 128, 64), GPUMEM_EINVAL);
    const char *m = gpumem_last_error()->message;
    EXPECT_CONTAINS(m, "the source ");
    EXPECT_CONTAINS(m, "is 128 bytes into 4.0 KiB of device memory that was already released");
    EXPECT_CONTAINS(m, "released at        ");
    EXPECT_CONTAINS(m, "test_misuse_wording.c:");
    EXPECT_CONTAINS(m, "(use after free)");
    EXPECT_CONTAINS(m, "nothing was copied");
    EXPECT_EQ(gpumem_copy(p, host, 64), GPUMEM_EINVAL);
    EXPECT_CONTAINS(gpumem_last_error()->message, "the destination ");
}

static void test_neighbours_are_not_an_overlap(void)
{
    /* Two pinned allocations from one pool chunk lie next to each other. */
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    char *a = gpumem_pool_alloc(pool, 1, 1024, NULL);
    char *b = gpumem_pool_alloc(pool, 1, 1024, NULL);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    size_t apart = (size_t)(b > a ? b - a : a - b);
    EXPECT_LE(apart, 4096);
    EXPECT_EQ(gpumem_copy(b, a, apart + 512), GPUMEM_EINVAL);
    const char *m = gpumem_last_error()->message;
    EXPECT_CONTAINS(m, "runs past the end of its allocation");
    EXPECT_TRUE(strstr(m, " overlap (") == NULL);
    gpumem_free(a);
    gpumem_free(b);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    /* A true overlap, inside one allocation, is still one. */
    char *c = gpumem_pinned_alloc(1, 8192);
    ASSERT_NOT_NULL(c);
    EXPECT_EQ(gpumem_copy(c + 256, c, 1024), GPUMEM_EINVAL);
    EXPECT_CONTAINS(gpumem_last_error()->message, "overlap (256 bytes apart)");
    gpumem_free(c);
}

static void test_free_in_pool_rounding(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    char *p = gpumem_pool_alloc(pool, 1, 1000, NULL); /* its class holds 1 024 bytes */
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(gpumem_free(p + 1008), GPUMEM_EINTERIOR);
    const char *m = gpumem_last_error()->message;
    EXPECT_CONTAINS(m, "which is 1008 bytes into the pinned pool block at ");
    EXPECT_CONTAINS(m, "past the 1000 B it was asked for, in the rounding of its size class");
    EXPECT_TRUE(strstr(m, "cudaMallocHost") == NULL);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_free_in_alignment_padding(void)
{
    char *p = gpumem_device_alloc(1, 1000);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(gpumem_free(p + 1004), GPUMEM_EINTERIOR);
    const char *m = gpumem_last_error()->message;
    EXPECT_CONTAINS(m, "which is 4 bytes past the end of 1000 B device memory at ");
    EXPECT_CONTAINS(m, ", in its alignment padding");
    EXPECT_CONTAINS(m, "allocated at       ");
    EXPECT_CONTAINS(m, "test_misuse_wording.c:");
    if (strstr(m, "host memory"))
        EXPECT_STR_EQ(m, "(a message that does not call it host memory)");
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
}

/* A pinned pool's chunk beyond the blocks carved from it: no allocation of the program's. */
static void test_free_in_pool_chunk(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    char *b = gpumem_pool_alloc(pool, 1, 256, NULL);
    ASSERT_NOT_NULL(b);
    EXPECT_EQ(gpumem_free(b + 65536), GPUMEM_EFOREIGN);
    const char *m = gpumem_last_error()->message;
    EXPECT_CONTAINS(m, "which lies in memory a pinned pool holds to carve blocks from, in no "
                       "live block");
    EXPECT_CONTAINS(m, "the pool was made at ");
    EXPECT_CONTAINS(m, "test_misuse_wording.c:");
    if (strstr(m, "cudaMallocHost"))
        EXPECT_STR_EQ(m, "(a message that does not call it raw cudaMallocHost memory)");
    EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
}

static void test_vec_view_that_wraps(void)
{
    const void *top = (const void *)(uintptr_t)(UINTPTR_MAX - 255); /* 256-byte aligned */
    EXPECT_NULL(gpumem_vec_ptr(top, 256, 16));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(gpumem_last_error()->message, "wraps past the end of the address space");
    EXPECT_NULL(gpumem_vec_ptr(top, 0, 512)); /* the first vector itself wraps */
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
}

int main(int argc, char **argv)
{
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    gpumem_set_error_handler(quiet, NULL);
    RUN(test_copy_from_released);
    RUN(test_neighbours_are_not_an_overlap);
    RUN(test_free_in_pool_rounding);
    RUN(test_free_in_alignment_padding);
    RUN(test_free_in_pool_chunk);
    RUN(test_vec_view_that_wraps);
    return harness_exit();
}

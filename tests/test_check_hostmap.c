/* gpumem check's map of CUDA host memory (tools/check/hostmap.c): the test every free() of a
 * checked program makes first. Exact to its 64 KiB granule, whatever else is live: a heap
 * address between a low and a high pinned buffer is not taken for CUDA memory. */
#include <pthread.h>
#include <stdint.h>

#include "engine.h"
#include "harness.h"
#include "hostmap.h"
#include "internal.h"

#define KIB ((uintptr_t)1 << 10)
#define GIB ((uintptr_t)1 << 30)

static const uintptr_t low = 0x10000000, high = 0x7f0000000000;

static void empty_map_holds_nothing(void)
{
    EXPECT_EQ(check_hostmap_may_hold(low), 0);
    EXPECT_EQ(check_hostmap_may_hold((uintptr_t)1 << 50), 0);
}

static void exact_to_the_granule(void)
{
    ASSERT_EQ(check_hostmap_add(low, 4 * KIB), 0);
    ASSERT_EQ(check_hostmap_add(high, 4 * KIB), 0);
    EXPECT_EQ(check_hostmap_may_hold(low), 1);
    EXPECT_EQ(check_hostmap_may_hold(low + 64 * KIB - 1), 1); /* same granule */
    EXPECT_EQ(check_hostmap_may_hold(low + 64 * KIB), 0);
    EXPECT_EQ(check_hostmap_may_hold(low - 1), 0);
    EXPECT_EQ(check_hostmap_may_hold(high + 100), 1);
    /* Between the two: what a span from the lowest to the highest would have admitted. */
    EXPECT_EQ(check_hostmap_may_hold(0x400000000000), 0);
    EXPECT_EQ(check_hostmap_may_hold(low + GIB), 0);
    /* Above 2^47 the registry decides, while anything is live. */
    EXPECT_EQ(check_hostmap_may_hold((uintptr_t)1 << 50), 1);
    check_hostmap_remove(high, 4 * KIB);
    check_hostmap_remove(low, 4 * KIB);
    EXPECT_EQ(check_hostmap_may_hold(low), 0);
    EXPECT_EQ(check_hostmap_may_hold(high), 0);
}

static void overlapping_ranges_are_counted(void)
{
    ASSERT_EQ(check_hostmap_add(low, 4 * KIB), 0);
    ASSERT_EQ(check_hostmap_add(low + 8 * KIB, 4 * KIB), 0); /* same granule */
    check_hostmap_remove(low, 4 * KIB);
    EXPECT_EQ(check_hostmap_may_hold(low + 8 * KIB), 1);
    check_hostmap_remove(low + 8 * KIB, 4 * KIB);
    EXPECT_EQ(check_hostmap_may_hold(low + 8 * KIB), 0);
}

static void unaligned_and_leaf_crossing_ranges(void)
{
    /* A registered range that starts mid-granule and ends in the next one. */
    ASSERT_EQ(check_hostmap_add(low + 100, 64 * KIB), 0);
    EXPECT_EQ(check_hostmap_may_hold(low + 64 * KIB + 99), 1);
    EXPECT_EQ(check_hostmap_may_hold(low + 128 * KIB), 0);
    check_hostmap_remove(low + 100, 64 * KIB);
    /* A range over the boundary of two 1 GiB leaves. */
    ASSERT_EQ(check_hostmap_add(4 * GIB - 64 * KIB, 128 * KIB), 0);
    EXPECT_EQ(check_hostmap_may_hold(4 * GIB - 1), 1);
    EXPECT_EQ(check_hostmap_may_hold(4 * GIB + 100), 1);
    EXPECT_EQ(check_hostmap_may_hold(4 * GIB + 64 * KIB), 0);
    check_hostmap_remove(4 * GIB - 64 * KIB, 128 * KIB);
    EXPECT_EQ(check_hostmap_may_hold(4 * GIB + 100), 0);
    /* Zero bytes still mark the granule of its address. */
    ASSERT_EQ(check_hostmap_add(low, 0), 0);
    EXPECT_EQ(check_hostmap_may_hold(low), 1);
    check_hostmap_remove(low, 0);
    EXPECT_EQ(check_hostmap_may_hold(low), 0);
}

static void *churn(void *arg)
{
    uintptr_t base = (uintptr_t)arg;
    for (int i = 0; i < 20000; i++) {
        if (check_hostmap_add(base + (uintptr_t)(i % 64) * 64 * KIB, 4 * KIB) != 0)
            return (void *)1;
        check_hostmap_remove(base + (uintptr_t)(i % 64) * 64 * KIB, 4 * KIB);
    }
    return NULL;
}

static void threads_leave_it_empty(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        ASSERT_EQ(pthread_create(&t[i], NULL, churn, (void *)(low + (uintptr_t)i * 32 * 64 * KIB)),
                  0);
    for (int i = 0; i < 4; i++) {
        void *rc = NULL;
        pthread_join(t[i], &rc);
        EXPECT_PTR_EQ(rc, NULL);
    }
    for (uintptr_t g = 0; g < 160; g++)
        EXPECT_EQ(check_hostmap_may_hold(low + g * 64 * KIB), 0);
}

/* Through the engine: pinned memory low and high in the address space, a heap pointer between
 * them is not CUDA memory, and an interior pinned address is found with its base. */
static void engine_lookup_between_two_pinned_buffers(void)
{
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, low, 4 * KIB, 0, 0, 0);
    check_alloc("cudaMallocHost", GPUMEM_KIND_PINNED, high, 4 * KIB, 0, 0, 0);
    uintptr_t base = 0;
    size_t bytes = 0;
    EXPECT_EQ(check_host_lookup(0x400000000000, &base, &bytes), 0);
    EXPECT_EQ(check_host_lookup(high + 16, &base, &bytes), GPUMEM_KIND_PINNED);
    EXPECT_EQ(base, high);
    EXPECT_EQ(bytes, 4 * KIB);
    EXPECT_EQ(check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, low, 0), CHECK_GO);
    check_release_end(low, 1);
    EXPECT_EQ(check_hostmap_may_hold(low), 0);
    EXPECT_EQ(check_hostmap_may_hold(high), 1);
    /* CUDA refused the release: the memory is live, and mapped, again. */
    EXPECT_EQ(check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, high, 0), CHECK_GO);
    check_release_end(high, 0);
    EXPECT_EQ(check_hostmap_may_hold(high), 1);
    EXPECT_EQ(check_release_begin("cudaFreeHost", 1u << GPUMEM_KIND_PINNED, high, 0), CHECK_GO);
    check_release_end(high, 1);
    EXPECT_EQ(check_hostmap_may_hold(high), 0);
}

int main(void)
{
    RUN(empty_map_holds_nothing);
    RUN(exact_to_the_granule);
    RUN(overlapping_ranges_are_counted);
    RUN(unaligned_and_leaf_crossing_ranges);
    RUN(threads_leave_it_empty);
    RUN(engine_lookup_between_two_pinned_buffers);
    return harness_exit();
}

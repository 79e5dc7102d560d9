/* Backend conformance: the backend table answers misuse exactly as the CUDA runtime does
 * (docs/cuda-facts.md's table, measured on an H200). Runs on the simulated device (host) and on
 * the real driver (gpu), so the simulation is checked against the real thing. */
#include "harness.h"
#include "internal.h"

static const gpumem__backend *be;

static void test_zero_and_null(void)
{
    void *p = (void *)1;
    EXPECT_EQ(be->malloc_device(&p, 0), cudaSuccess);
    EXPECT_NULL(p);
    EXPECT_EQ(be->free(NULL), cudaSuccess);
    EXPECT_EQ(be->free_host(NULL), cudaSuccess);
}

static void test_misuse_table(void)
{
    void *dev = NULL, *pinned = NULL, *managed = NULL, *async = NULL;
    ASSERT_EQ(be->malloc_device(&dev, 4096), cudaSuccess);
    ASSERT_EQ(be->host_alloc(&pinned, 8192, 0), cudaSuccess);
    ASSERT_EQ(be->malloc_managed(&managed, 4096, cudaMemAttachGlobal), cudaSuccess);
    ASSERT_EQ(be->malloc_async(&async, 4096, NULL), cudaSuccess);
    EXPECT_EQ((uintptr_t)dev % 256, 0);
    EXPECT_EQ((uintptr_t)pinned % 4096, 0);
    EXPECT_EQ((uintptr_t)async % 256, 0);

    EXPECT_EQ(be->free(pinned), cudaErrorInvalidValue);          /* cudaFree(pinned) */
    EXPECT_EQ(be->free_host(dev), cudaErrorInvalidValue);        /* cudaFreeHost(device) */
    EXPECT_EQ(be->free_host(managed), cudaErrorInvalidValue);    /* cudaFreeHost(managed) */
    EXPECT_EQ(be->free((char *)dev + 256), cudaErrorInvalidValue); /* interior */
    int on_stack;
    EXPECT_EQ(be->free(&on_stack), cudaErrorInvalidValue);       /* foreign */

    int type = -1;
    EXPECT_EQ(be->pointer_type(dev, &type), cudaSuccess);
    EXPECT_EQ(type, GPUMEM__PTR_DEVICE);
    EXPECT_EQ(be->pointer_type((char *)dev + 256, &type), cudaSuccess); /* interior: still device */
    EXPECT_EQ(type, GPUMEM__PTR_DEVICE);
    EXPECT_EQ(be->pointer_type(pinned, &type), cudaSuccess);
    EXPECT_EQ(type, GPUMEM__PTR_HOST);
    EXPECT_EQ(be->pointer_type(managed, &type), cudaSuccess);
    EXPECT_EQ(type, GPUMEM__PTR_MANAGED);
    EXPECT_EQ(be->pointer_type(&on_stack, &type), cudaSuccess);
    EXPECT_EQ(type, GPUMEM__PTR_UNREGISTERED);

    EXPECT_EQ(be->free(async), cudaSuccess);                     /* cudaFree(async) works */
    EXPECT_EQ(be->free(dev), cudaSuccess);
    EXPECT_EQ(be->free(dev), cudaErrorInvalidValue);             /* twice */
    EXPECT_EQ(be->free_host(pinned), cudaSuccess);
    EXPECT_EQ(be->free_host(pinned), cudaErrorInvalidValue);     /* twice */
    EXPECT_EQ(be->free(managed), cudaSuccess);
}

static void test_out_of_memory_is_not_sticky(void)
{
    void *p = NULL;
    size_t free_b = 0, total = 0;
    ASSERT_EQ(be->mem_info(0, &free_b, &total), cudaSuccess);
    EXPECT_EQ(be->malloc_device(&p, (size_t)1 << 50), cudaErrorMemoryAllocation); /* 1 PiB */
    EXPECT_EQ(be->host_alloc(&p, (size_t)1 << 50, 0), cudaErrorMemoryAllocation);
    EXPECT_EQ(be->malloc_device(&p, 4096), cudaSuccess); /* the next one succeeds */
    EXPECT_EQ(be->free(p), cudaSuccess);
}

static void test_mapped_pointer(void)
{
    void *h = NULL, *d = NULL;
    ASSERT_EQ(be->host_alloc(&h, 4096, cudaHostAllocMapped), cudaSuccess);
    EXPECT_EQ(be->host_device_ptr(&d, h), cudaSuccess);
    EXPECT_NE((uintptr_t)d, 0);
    EXPECT_EQ(be->free_host(h), cudaSuccess);
}

int main(int argc, char **argv)
{
    gpumem_backend_select(argc > 1 ? argv[1] : "sim");
    if (gpumem_init() != GPUMEM_OK) {
        SKIP("no usable CUDA device");
        return harness_exit();
    }
    be = gpumem__be;
    fprintf(stderr, "backend: %s\n", be->name);
    RUN(test_zero_and_null);
    RUN(test_misuse_table);
    RUN(test_out_of_memory_is_not_sticky);
    RUN(test_mapped_pointer);
    return harness_exit();
}

// What compute-sanitizer's memcheck sees of pool blocks, with and without GPUMEM_NVTX
// (tests/gpu/nvtx_memcheck.sh runs it under memcheck and reads the report). Each mode makes
// one kind of access and exits 0 whatever the kernel did: the verdict is memcheck's.
//   device-past   a device pool block of 1000 floats (a 4 KiB block): a kernel writes
//                 element 1000, one past the request, still inside the block
//   device-freed  a 4 KiB device pool block, released (cached by the pool): a kernel writes it
//   pinned-past   a 4 KiB pinned pool block, carved from a chunk: a kernel writes element 1024,
//                 one past the block, into the chunk's memory no block holds
//   clean         a device pool's blocks allocated, written in bounds by kernels, released,
//                 served again from the caches, trimmed, destroyed, and blocks released with
//                 gpumem_free_async while their kernel is still queued: no error
//   pinned-clean  the same in bounds for a pinned pool
#include <cstdio>
#include <cstring>

#include <cuda_runtime.h>

#include "gpu_check.h"
#include "gpumem.h"

__global__ void write_at(float *p, size_t i)
{
    p[i] = 1.0f;
}

__global__ void fill(float *p, size_t n)
{
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        p[i] = (float)i;
}

static void launch_one(float *p, size_t i)
{
    write_at<<<1, 1>>>(p, i);
    (void)cudaDeviceSynchronize(); // memcheck reports the access; the status is not the test
}

static int device_past()
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    CHECK_TRUE(pool != NULL);
    float *p = (float *)gpumem_pool_alloc(pool, 1000, sizeof(float), NULL);
    CHECK_TRUE(p != NULL);
    if (p)
        launch_one(p, 1000);
    gpumem_free(p);
    gpumem_pool_destroy(pool);
    return gpu_finish("device-past");
}

static int device_freed()
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    CHECK_TRUE(pool != NULL);
    float *p = (float *)gpumem_pool_alloc(pool, 1024, sizeof(float), NULL);
    CHECK_TRUE(p != NULL);
    float *stale = p;
    gpumem_free(p);
    if (stale)
        launch_one(stale, 0); // the pool keeps the block: CUDA still counts it allocated
    gpumem_pool_destroy(pool);
    return gpu_finish("device-freed");
}

static int pinned_past()
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    CHECK_TRUE(pool != NULL);
    float *p = (float *)gpumem_pool_alloc(pool, 1024, sizeof(float), NULL);
    CHECK_TRUE(p != NULL);
    if (p)
        launch_one(p, 1024);
    gpumem_free(p);
    gpumem_pool_destroy(pool);
    return gpu_finish("pinned-past");
}

// A pool's blocks of several sizes, written in bounds by kernels, released, served again from
// the caches, trimmed: three rounds.
static void in_bounds(gpumem_pool *pool)
{
    for (int round = 0; round < 3 && pool; round++) {
        size_t n[4] = {1000, 1024, 3000, (size_t)1 << 18};
        float *p[4];
        for (int i = 0; i < 4; i++) {
            p[i] = (float *)gpumem_pool_alloc(pool, n[i], sizeof(float), NULL);
            CHECK_TRUE(p[i] != NULL);
            if (p[i])
                fill<<<1, 256>>>(p[i], n[i]);
        }
        CHECK_TRUE(cudaDeviceSynchronize() == cudaSuccess);
        for (int i = 0; i < 4; i++)
            gpumem_free(p[i]);
        if (round == 1)
            CHECK_TRUE(gpumem_pool_trim(pool) == GPUMEM_OK);
    }
}

static int pinned_clean()
{
    gpumem_pool *pin = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    CHECK_TRUE(pin != NULL);
    in_bounds(pin);
    CHECK_TRUE(gpumem_pool_destroy(pin) == GPUMEM_OK);
    return gpu_finish("pinned-clean");
}

static int clean()
{
    gpumem_pool *dev = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    CHECK_TRUE(dev != NULL);
    in_bounds(dev);
    // Stream order: a kernel still queued on the block's stream when the block is released
    // with gpumem_free_async (its region goes at that call) is no error either.
    cudaStream_t s = NULL;
    CHECK_TRUE(cudaStreamCreate(&s) == cudaSuccess);
    for (int i = 0; i < 8 && dev && s; i++) {
        float *d = (float *)gpumem_pool_alloc(dev, 1u << 16, sizeof(float), s);
        CHECK_TRUE(d != NULL);
        if (!d)
            break;
        fill<<<1, 256, 0, s>>>(d, 1u << 16);
        CHECK_TRUE(gpumem_free_async(d, s) == GPUMEM_OK);
    }
    CHECK_TRUE(s == NULL || cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(gpumem_pool_destroy(dev) == GPUMEM_OK);
    if (s)
        (void)cudaStreamDestroy(s);
    return gpu_finish("clean");
}

int main(int argc, char **argv)
{
    if (gpu_device_count() == 0)
        return 77;
    const char *mode = argc > 1 ? argv[1] : "";
    if (std::strcmp(mode, "device-past") == 0)
        return device_past();
    if (std::strcmp(mode, "device-freed") == 0)
        return device_freed();
    if (std::strcmp(mode, "pinned-past") == 0)
        return pinned_past();
    if (std::strcmp(mode, "clean") == 0)
        return clean();
    if (std::strcmp(mode, "pinned-clean") == 0)
        return pinned_clean();
    std::fprintf(stderr, "usage: %s device-past|device-freed|clean|pinned-past|pinned-clean\n",
                 argv[0]);
    return 2;
}

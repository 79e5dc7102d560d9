// The CUB peer of `gpumem bench` and bench_pool: CUB's CachingDeviceAllocator (header-only,
// shipped with the CUDA toolkit's CCCL), one allocator shared by every thread, as a program
// would keep it. C++, so it lives here behind three C functions.
#include <cub/util_allocator.cuh>

#include "cub.h"

static cub::CachingDeviceAllocator *allocator;

extern "C" int bench_cub_create(void)
{
    // The defaults: bins 8^3 .. 8^7 bytes (512 B .. 2 MiB), at most 6 MiB cached.
    allocator = new cub::CachingDeviceAllocator();
    return 0;
}

extern "C" int bench_cub_pair(size_t bytes, cudaStream_t stream)
{
    void *p = nullptr;
    cudaError_t e = allocator->DeviceAllocate(&p, bytes, stream);
    if (e != cudaSuccess)
        return (int)e;
    return (int)allocator->DeviceFree(p);
}

extern "C" void bench_cub_destroy(void)
{
    delete allocator;
    allocator = nullptr;
}

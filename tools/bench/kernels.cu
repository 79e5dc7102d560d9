// `gpumem bench`: the kernels of the paths where the device itself reaches across the link
// (mapped zero-copy memory) or pulls pages over it (managed memory, first touch).
#include <cuda_runtime.h>

#include "bench.h"

// Reads every 16-byte word; the sum is stored only in a case that never happens, which keeps
// the loads without writing anything.
__global__ void bench_read_kernel(const uint4 *in, size_t n, unsigned *never)
{
    unsigned acc = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = in[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x5eed5eedu && never)
        *never = acc;
}

__global__ void bench_write_kernel(uint4 *out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = make_uint4((unsigned)i, 1u, 2u, 3u);
}

extern "C" int bench_kernel_read(const void *p, size_t bytes, int blocks, cudaStream_t stream)
{
    bench_read_kernel<<<blocks, 256, 0, stream>>>(static_cast<const uint4 *>(p), bytes / 16,
                                                 nullptr);
    return (int)cudaGetLastError();
}

extern "C" int bench_kernel_write(void *p, size_t bytes, int blocks, cudaStream_t stream)
{
    bench_write_kernel<<<blocks, 256, 0, stream>>>(static_cast<uint4 *>(p), bytes / 16);
    return (int)cudaGetLastError();
}

// Compiled to PTX, never run: with the device checks off, a kernel with
// GPUMEM_DEVICE_ASSERT_ALIGNED must compile to exactly the PTX of the same kernel without it
// (tests/gpu/compare_ptx.cmake; test device_assert_costs_nothing). With them on, it must not.
#include <gpumem_device.h>

__global__ void sum4(const float4 *in, float *out)
{
#ifndef GPUMEM_TEST_NO_MACRO
    GPUMEM_DEVICE_ASSERT_ALIGNED(in + threadIdx.x, sizeof(float4));
#endif
    float4 x = in[threadIdx.x];
    out[threadIdx.x] = x.x + x.y + x.z + x.w;
}

// GM003: vector views at offsets known to be misaligned; arithmetic that proves alignment.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define HEADER 32

__global__ void misaligned(float *d, unsigned char *bytes, __half *hp, float4 *out) {
  out[0] = *reinterpret_cast<float4 *>(d + 1); // expected-warning{{view as float4 at byte offset 4 from the start of the allocation, which is not a multiple of its 16-byte alignment}}
  out[1] = *(float4 *)(bytes + 8); // expected-warning{{view as float4 at byte offset 8}}
  out[2].x = (*(half2 *)(hp + 1)).x; // expected-warning{{view as half2 at byte offset 2}}
}

__global__ void aligned(float *d, unsigned char *bytes, float4 *out) {
  __shared__ alignas(float4) float As[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  out[0] = *reinterpret_cast<float4 *>(&As[ty][4 * tx]);
  out[1] = *(float4 *)(bytes + HEADER + 64 * threadIdx.x);
  out[2] = *(float4 *)(d + 4 * (blockIdx.x * blockDim.x + threadIdx.x));
  out[3] = *(float4 *)(d + ((tx + 3) & ~3));
}

__global__ void unknown_offset_is_quiet(float *d, float4 *out, int k) {
  out[0] = *(float4 *)(d + k);
}

void host_array(float4 *out) {
  float table[64];
  out[0] = *(float4 *)(table + 3); // expected-warning{{view as float4 at byte offset 12 from the start of the array}}
}

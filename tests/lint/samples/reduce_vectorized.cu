// Samples-style kernels: vectorized loads with float4 and int2 views, shared memory,
// warp shuffles. No findings expected.
#include <cuda_runtime.h>
#include <cuda_fp16.h>

#define FULL_MASK 0xffffffff
#define DEVICE_INLINE __device__ __forceinline__

DEVICE_INLINE float warpReduceSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(FULL_MASK, v, offset);
  return v;
}

__global__ void reduce_vec4(const float *__restrict__ in, float *out, int n) {
  __shared__ float partial[32];
  float sum = 0.0f;
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int n4 = n / 4;
  const float4 *in4 = reinterpret_cast<const float4 *>(in);
  for (int i = tid; i < n4; i += blockDim.x * gridDim.x) {
    float4 v = in4[i];
    sum += v.x + v.y + v.z + v.w;
  }
  for (int i = n4 * 4 + tid; i < n; i += blockDim.x * gridDim.x) sum += in[i];
  sum = warpReduceSum(sum);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
    sum = warpReduceSum(sum);
    if (threadIdx.x == 0) atomicAdd(out, sum);
  }
}

__global__ void copy_tile(const float *src, float *dst, int pitch) {
  int row = blockIdx.y, col = threadIdx.x * 4;
  const float4 *s = reinterpret_cast<const float4 *>(&src[row * pitch * 4 + col]);
  float4 *d = (float4 *)(dst + 4 * (row * pitch) + col);
  *d = *s;
}

__global__ void pack_half(const __half *h, half2 *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (2 * i + 1 < n) out[i] = *reinterpret_cast<const half2 *>(h + 2 * i);
}

__global__ void int_pairs(const int *keys, int2 *out) {
  out[threadIdx.x] = reinterpret_cast<const int2 *>(keys)[threadIdx.x];
  out[threadIdx.x + 32] = *(const int2 *)(keys + 64);
}

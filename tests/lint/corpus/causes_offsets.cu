// Corpus: offsets that are provably aligned only with arithmetic (GM003), and a pitch that a
// caller rounds up.
// corpus-rules: GM003
#include <cuda_runtime.h>
#include "corpus_checks.h"

#define TILE 16
#define HEADER_BYTES 32
#define ROW_BYTES 64
#define BAD_HEADER 12

// case: a float4 view of a row of an alignas(float4) shared tile, at 4 * tx
__global__ void ok_shared_tile(const float4 *in, float4 *out) {
    __shared__ alignas(float4) float As[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    *reinterpret_cast<float4 *>(&As[ty][4 * tx]) = in[ty * 4 + tx];
    __syncthreads();
    out[ty * 4 + tx] = *reinterpret_cast<float4 *>(&As[ty][4 * tx]);
}

// case: the same tile one float in
__global__ void gm003_shared_tile_off(float4 *out) {
    __shared__ alignas(16) float As[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    out[0] = *reinterpret_cast<float4 *>(&As[ty][4 * tx + 1]);  // expect: GM003
}

// case: offsets from macro constants that are multiples of 16 bytes
__global__ void ok_macro_offsets(unsigned char *buf, float4 *out) {
    out[0] = *(float4 *)(buf + HEADER_BYTES);
    out[1] = *(float4 *)(buf + HEADER_BYTES + ROW_BYTES * threadIdx.x);
    out[2] = *(float4 *)(buf + sizeof(float4) * 3);
}

// case: a macro constant that is not a multiple of 16
__global__ void gm003_macro_offset(unsigned char *buf, float4 *out) {
    out[0] = *(float4 *)(buf + BAD_HEADER);  // expect: GM003
}

// case: a struct field at a known misaligned offset
struct __align__(16) packet { int id; float data[7]; };
__global__ void gm003_field(struct packet *p, float4 *out) {
    out[0] = *reinterpret_cast<float4 *>(&p->data[0]);  // expect: GM003
}
__global__ void ok_field(struct packet *p, float4 *out) {
    out[0] = *reinterpret_cast<float4 *>(&p->data[3]);
}

// case: the caller rounds the pitch up to a multiple of four floats
static __device__ float4 row_start(const float *base, size_t pitch, int row) {
    return *reinterpret_cast<const float4 *>(base + row * pitch);
}
__global__ void ok_rounded_pitch(const float *base, size_t width, float4 *out) {
    size_t pitch = (width + 3) / 4 * 4;
    out[threadIdx.x] = row_start(base, pitch, threadIdx.x);
}
__global__ void ok_masked_pitch(const float *base, size_t width, float4 *out) {
    size_t pitch = (width + 3) & ~(size_t)3;
    out[threadIdx.x] = row_start(base, pitch, threadIdx.x);
}

// case: a pitch of three floats
__global__ void gm003_pitch_three(const float *base, float4 *out) {
    out[0] = *reinterpret_cast<const float4 *>(base + 3 * 1 + 0);  // expect: GM003
}

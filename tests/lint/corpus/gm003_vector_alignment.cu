// Corpus for GM003 (misaligned vector view). Offsets whose alignment cannot be
// proven are reported only in pedantic mode.
// corpus-rules: GM003
#include <cuda_runtime.h>
#include "corpus_checks.h"
#include <cuda_fp16.h>

// case: the seed's example, one float past an aligned base
__global__ void gm003_seed(float *d_ptr, float4 *out) {
    float4 *v = reinterpret_cast<float4 *>(d_ptr + 1);  // expect: GM003
    out[0] = v[threadIdx.x];
}

// case: address of an element, C cast
__global__ void gm003_address_of(float *d, float4 *out) {
    float4 *w = (float4 *)&d[2];  // expect: GM003
    out[0] = *w;
}

// case: float2 view one float in
__global__ void gm003_float2(float *d, float2 *out) {
    out[0] = *(float2 *)(d + 1);  // expect: GM003
}

// case: int4 view two ints in
__global__ void gm003_int4(int *ip, int4 *out) {
    out[0] = reinterpret_cast<int4 *>(ip + 2)[0];  // expect: GM003
}

// case: double2 view one double in
__global__ void gm003_double2(double *dp, double2 *out) {
    out[0] = *reinterpret_cast<double2 *>(dp + 1);  // expect: GM003
}

// case: half2 view one half in
__global__ void gm003_half2(__half *hp, half2 *out) {
    out[0] = *(half2 *)(hp + 1);  // expect: GM003
}

// case: byte buffer, 8 bytes into a float4
__global__ void gm003_bytes(unsigned char *bytes, float4 *out) {
    out[0] = *(float4 *)(bytes + 8);  // expect: GM003
}

// case: int2 view three ints in
__global__ void gm003_int2(int *ip, int2 *out) {
    out[0] = *(int2 *)(ip + 3);  // expect: GM003
}

// case: const view through reinterpret_cast of an element address
__global__ void gm003_const(const float *in, float4 *out) {
    const float4 *v = reinterpret_cast<const float4 *>(&in[6]);  // expect: GM003
    out[0] = *v;
}

// case: uchar4 view two chars in
__global__ void gm003_uchar4(char *cp, uchar4 *out) {
    out[0] = *(uchar4 *)(cp + 2);  // expect: GM003
}

// case: constant expression offset
__global__ void gm003_expr(float *d, float4 *out) {
    out[0] = *(float4 *)(d + 2 * 3);  // expect: GM003
}

// case: negative offset
__global__ void gm003_negative(float *d, float4 *out) {
    out[0] = *(float4 *)(d - 1);  // expect: GM003
}

// case: 64-bit pair at an odd long
__global__ void gm003_longlong2(long long *lp, longlong2 *out) {
    out[0] = *(longlong2 *)(lp + 1);  // expect: GM003
}

// case: shared memory array
__global__ void gm003_shared(float4 *out) {
    __shared__ float tile[256];
    out[threadIdx.x] = reinterpret_cast<float4 *>(tile + 2)[threadIdx.x];  // expect: GM003
}

float g_table[64];
// case: file-scope array
void gm003_global(float4 *out) {
    out[0] = *(float4 *)(g_table + 3);  // expect: GM003
}

// case: offset in sizeof units, in bytes
__global__ void gm003_sizeof(char *base, float4 *out) {
    out[0] = *(float4 *)(base + sizeof(float));  // expect: GM003
}

// ---- negatives ----

// case: whole vectors in
__global__ void ok_multiple(float *d, float4 *out) {
    out[0] = *reinterpret_cast<float4 *>(d + 4);
    out[1] = *(float4 *)&d[8];
    out[2].x = (*(float2 *)(d + 2)).x;
}

// case: a factor of four proves alignment
__global__ void ok_factor(float *d, float4 *out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = reinterpret_cast<float4 *>(d + 4 * i)[0];
    out[i + 1] = *(float4 *)&d[i * 4 + 8];
}

// case: no offset at all
__global__ void ok_no_offset(float *d, float4 *out) {
    out[0] = reinterpret_cast<float4 *>(d)[threadIdx.x];
}

// case: bytes in multiples of 16
__global__ void ok_bytes(unsigned char *bytes, int4 *out) {
    out[0] = *(int4 *)(bytes + 32);
    out[1] = *(int4 *)(bytes + 16 * threadIdx.x);
}

// case: a vector pointer advanced by vectors
__global__ void ok_vector_base(float4 *v, float4 *out) {
    out[0] = *(float4 *)(v + 1);
}

// case: a cast to a scalar pointer is not a vector view
__global__ void ok_scalar_cast(float *d, int *out) {
    out[0] = *(int *)(d + 1);
}

// case: float3 needs only float alignment
__global__ void ok_float3(float *d, float3 *out) {
    out[0] = *(float3 *)(d + 1);
}

// case: half2 at two halves
__global__ void ok_half2(__half *hp, half2 *out) {
    out[0] = *(half2 *)(hp + 2);
}

// case: vector arithmetic after the cast
__global__ void ok_cast_then_add(float *d, float4 *out) {
    out[0] = *((float4 *)d + 1);
}

// case: a non-constant offset is reported only with gpumem.VectorAlignment:Pedantic=true
// ("alignment not provable"; tests/lint/analyzer/gm003_pedantic.cu)
__global__ void ok_unknown_offset(float *d, float4 *out, int k) {
    out[0] = *(float4 *)(d + k);
    out[1] = *reinterpret_cast<float4 *>(&d[k]);
}

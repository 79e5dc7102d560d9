// GM003 with gpumem.VectorAlignment:Pedantic=true: offsets whose alignment is not provable.
// FLAGS: -Xclang -analyzer-config -Xclang gpumem.VectorAlignment:Pedantic=true
#include <cuda_runtime.h>

__global__ void unknown(float *d, float4 *out, int k) {
  out[0] = *(float4 *)(d + k); // expected-warning{{alignment not provable: view as float4 needs 16-byte alignment}}
  out[1] = *(float4 *)(d + 4 * k);
}

__global__ void small_array_base(float4 *out) {
  __shared__ float tile[3];
  out[0] = *(float4 *)(tile + 0); // expected-warning{{alignment not provable}}
}

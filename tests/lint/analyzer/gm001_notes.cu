// The path notes: "allocated here with <call>" at the call the user wrote, even when the
// runtime's C++ wrapper (cudaMallocHost<T> calls cudaHostAlloc) is what allocates.
// FLAGS: -Xclang -analyzer-disable-checker=gpumem.UncheckedStatus
#include <cuda_runtime.h>

void pinned(size_t n) {
  float *h;
  (void)cudaMallocHost(&h, n); // expected-note{{allocated here with cudaMallocHost}} expected-warning{{memory allocated with cudaMallocHost is never released on this path}} expected-note{{memory allocated with cudaMallocHost is never released on this path}}
}

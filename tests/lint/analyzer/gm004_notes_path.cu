// A status nobody reads is judged at the next CUDA call, which may be in
// another helper; the finding's path leads to the call that was not checked,
// not to where the engine noticed, and two findings noticed at one call are
// two findings.
#include "check.h"

void fill(float *d) { CHECK(cudaMemset(d, 0, 4)); }

void copy_in(float *d, const float *h) {
  cudaMemcpy(d, h, 4, cudaMemcpyHostToDevice); // expected-warning{{the status cudaMemcpy returns is discarded}}
}

void run(float *d, const float *h) {
  copy_in(d, h); // expected-note{{Calling 'copy_in'}}
  fill(d);
}

// Two statuses of one message, both judged at the memset.
void two_waits(float *d) {
  cudaDeviceSynchronize(); // expected-warning{{the status cudaDeviceSynchronize returns is discarded}}
  cudaDeviceSynchronize(); // expected-warning{{the status cudaDeviceSynchronize returns is discarded}}
  CHECK(cudaMemset(d, 0, 4));
}

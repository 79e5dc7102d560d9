// Memory handed to code the analysis does not see (a helper of another file,
// a library) may be kept or released there: it is never reported leaked. But
// a release the code makes after that call is a release all the same: a use
// after it, a second release and a release of the wrong kind are reported as
// for memory never handed over.
#include "check.h"
void run_elsewhere(float *d, int n); // defined in another file
void keep_elsewhere(float *p);

void used_after_release(int n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  run_elsewhere(d, n);
  CHECK(cudaFree(d));
  CHECK(cudaMemset(d, 0, 4)); // expected-warning{{memory allocated with cudaMalloc is passed to cudaMemset after it was released with cudaFree}}
}

void released_twice(int n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  run_elsewhere(d, n);
  CHECK(cudaFree(d));
  CHECK(cudaFree(d)); // expected-warning{{memory allocated with cudaMalloc is released again with cudaFree}}
}

void released_wrong_kind(int n) {
  float *h;
  CHECK(cudaMallocHost((void **)&h, n * sizeof(float)));
  run_elsewhere(h, n);
  CHECK(cudaFree(h)); // expected-warning{{memory allocated with cudaMallocHost is released with cudaFree; release it with cudaFreeHost}}
}

// Kept elsewhere: no leak, and nothing else to say.
void handed_over(int n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  keep_elsewhere(d);
}

// Handed over, then released here once: right.
void released_once(int n) {
  float *d;
  CHECK(cudaMalloc((void **)&d, n * sizeof(float)));
  run_elsewhere(d, n);
  CHECK(cudaFree(d));
}

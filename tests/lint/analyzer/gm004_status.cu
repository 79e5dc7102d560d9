// GM004: discarded statuses, stored statuses not read, launches not checked before the next
// CUDA call; a caller's check after a helper that launches counts.
#include "check.h"
#include <stdio.h>

__global__ void k(float *d) {}

void discarded(float *d, size_t n) {
  cudaMemset(d, 0, n); // expected-warning{{the status cudaMemset returns is discarded}}
  (void)cudaMemset(d, 0, n);
  cudaGetLastError();
}

// The runtime records a failing call's error until it is read, and a successful call does not
// reset it: a last-error query whose result is used, next or after a synchronization, reads it
// (Rodinia's `cudaMalloc(...); cudaCheckAsyncError(msg)`, which synchronizes and then asks).
// Another CUDA call first means the program went on unchecked.
void read_by_the_last_error_query(float *d, size_t n) {
  cudaMemset(d, 0, n);
  cudaDeviceSynchronize();
  if (cudaGetLastError() != cudaSuccess)
    abort();
}
void another_call_before_the_query(float *d, size_t n) {
  cudaMemset(d, 0, n); // expected-warning{{the status cudaMemset returns is discarded}}
  cudaMemset(d, 1, n);
  if (cudaGetLastError() != cudaSuccess)
    abort();
}
void a_discarded_query_reads_nothing(float *d, size_t n) {
  cudaMemset(d, 0, n); // expected-warning{{the status cudaMemset returns is discarded}}
  cudaPeekAtLastError();
}
// A check function the analyzer cannot see (another file's) may ask; a timer does not.
void project_check(const char *what);
double get_time(void);
void checked_elsewhere(float *d) {
  cudaFree(d);
  project_check("cudaFree");
}
double timed_not_checked(float *d) {
  cudaMemset(d, 0, 4); // expected-warning{{the status cudaMemset returns is discarded}}
  return get_time();
}
void discarded_then_another_call(float *d) {
  cudaDeviceSynchronize(); // expected-warning{{the status cudaDeviceSynchronize returns is discarded}}
  if (cudaFree(d) != cudaSuccess)
    abort();
}
void discarded_last_in_the_function(float *d) {
  cudaMemset(d, 0, 4); // expected-warning{{the status cudaMemset returns is discarded}}
}

// A status returned through a function pointer (a table of entry points) is named as written.
struct driver_table {
  cudaError_t (*memset)(void *, int, size_t);
};
void discarded_through_pointer(struct driver_table *drv, float *d, size_t n) {
  drv->memset(d, 0, n); // expected-warning{{the status drv->memset returns is discarded}}
  (void)drv->memset(d, 0, n);
}

int overwritten(float **d, const float *h, size_t n) {
  cudaError_t e = cudaMalloc((void **)d, n); // expected-warning{{the status cudaMalloc returned is stored but not read before the next CUDA call (cudaMemcpy)}}
  e = cudaMemcpy(*d, h, n, cudaMemcpyHostToDevice);
  return e != cudaSuccess;
}

void never_read(cudaEvent_t *ev) {
  cudaError_t e = cudaEventCreate(ev); // expected-warning{{the status cudaEventCreate returned is stored but never read}}
}

void launch_unchecked(float *d, float *h) {
  k<<<1, 1>>>(d); // expected-warning{{the error state of this kernel launch is not read (cudaGetLastError or cudaPeekAtLastError) before the next CUDA call (cudaMemcpy)}}
  CHECK(cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost));
}

// A synchronization between the launch and the query changes nothing: the error is still there.
void launch_synchronized_then_checked(float *d) {
  k<<<1, 1>>>(d);
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGetLastError());
}
void launch_synchronized_then_used(float *d, float *h) {
  k<<<1, 1>>>(d); // expected-warning{{the error state of this kernel launch is not read (cudaGetLastError or cudaPeekAtLastError) before the next CUDA call (cudaMemcpy)}}
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost));
}

static void helper(float *d) { k<<<1, 1>>>(d); }
void caller_checks(float *d) {
  helper(d);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
}

void launch_left_to_callers(float *d) { k<<<1, 1>>>(d); }

// Calls through function pointers: one whose target the path knows is
// followed into; one whose target it does not know is taken as releasing
// nothing and keeping nothing, unless its name says it releases.
#include "check.h"

typedef void (*step_fn)(float *);
void touch(float *p) { p[0] = 0.0f; }
void drop(float *p) { cudaFree(p); }

void known_target(void) {
  float *d;
  CHECK(cudaMallocManaged(&d, 64));
  step_fn f = drop;
  f(d);
  CHECK(cudaFree(d)); // expected-warning{{is released again with cudaFree}}
}

void unknown_target(step_fn f) {
  float *d;
  CHECK(cudaMalloc(&d, 64)); // expected-warning{{memory allocated with cudaMalloc is never released on this path}}
  f(d);
}

struct ops {
  void (*run)(float *);
  void (*free_fn)(float *);
};

void unknown_table(struct ops *o) {
  float *d, *e;
  CHECK(cudaMalloc(&d, 64));
  CHECK(cudaMalloc(&e, 64)); // expected-warning{{memory allocated with cudaMalloc is never released on this path}}
  o->run(e);
  o->free_fn(d); // a release, by its name: d is not followed after it
}

// The variable whose address such a call is given may be overwritten.
void out_parameter(void (*make)(float **)) {
  float *d;
  CHECK(cudaMalloc(&d, 64));
  make(&d);
  CHECK(cudaFree(d));
}

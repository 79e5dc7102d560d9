// Functions defined in another unit, with the facts `gpumem lint` learnt
// from that unit (facts_imported.facts, as its first pass writes them):
// their releases, wrong kinds and allocations are found without options.
// FLAGS: -Xclang -analyzer-config -Xclang gpumem.Memory:FactsIn=%S/facts_imported.facts
#include "check.h"

void release_buffer(void *p);
void release_pinned(float *&p);
void alloc_buffer(float **p, size_t n);
void use_buffer(float *p);

int main(void) {
  float *d, *h, *e, *u;
  CHECK(cudaMalloc(&d, 64));
  CHECK(cudaMallocHost(&h, 64));
  release_buffer(d);
  release_buffer(d); // expected-warning{{memory allocated with cudaMalloc is released again with release_buffer (cudaFree)}}
  release_buffer(h); // expected-warning{{memory allocated with cudaMallocHost is released with release_buffer (cudaFree); release it with cudaFreeHost}}
  alloc_buffer(&e, 64); // expected-warning{{memory allocated with alloc_buffer (cudaMalloc) is never released on this path}}
  CHECK(cudaMalloc(&u, 64)); // expected-warning{{memory allocated with cudaMalloc is never released on this path}}
  use_buffer(u);
  float *p;
  CHECK(cudaMalloc(&p, 64));
  release_pinned(p); // expected-warning{{memory allocated with cudaMalloc is released with release_pinned (cudaFreeHost)}}
  return 0;
}

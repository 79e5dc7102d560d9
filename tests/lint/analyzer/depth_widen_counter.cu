// A loop the engine stops unrolling (its body branches on a value it does
// not know) is widened: its counter is forgotten, but not the rounds already
// taken: it stays at least what it was, so `if (step == 0)` is not taken
// again on a made-up round.
#include "check.h"
int unknown(void);
void work(int step);

void release_on_first_step(size_t n) {
  float *p = (float *)malloc(n);
  for (int step = 0; step < 10; step++) {
    if (unknown())
      work(step);
    if (step == 0)
      free(p); // no double release
  }
}

void counting_down(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  for (int left = 12; left > 0; left -= 2) {
    if (unknown())
      work(left);
    if (left == 12)
      CHECK(cudaFree(d)); // no double release
  }
}

// A counter the loop assigns in another way is forgotten as before: the
// round that released may come again.
void reset_counter(size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  for (int step = 0; step < 10; step++) {
    if (unknown())
      step = 0;
    if (step == 1)
      CHECK(cudaFree(d)); // expected-warning{{is released again with cudaFree}}
  }
}

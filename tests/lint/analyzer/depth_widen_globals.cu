// Allocations kept in global arrays stay tracked past a widened loop that
// only reads: the engine's widening forgets every global, and with them the
// pointers of a program that allocates one buffer per stream into
// `int *d_in[STREAMS]`. A loop nest that calls nothing and writes only local
// variables is widened with just those variables forgotten.
#include "check.h"
#define STREAMS 4
int *d_in[STREAMS];
int *h_out[STREAMS];
int n = 1 << 22;

// Reads the results: two loops, the inner too long to unroll.
static bool results_ok(void) {
  bool ok = true;
  for (int s = 0; s < STREAMS; ++s)
    for (int i = 0; i < n; ++i)
      ok &= (h_out[s][i] == 5);
  return ok;
}

int main(void) {
  // Unchecked here: a check (a branch) in the loop makes the engine stop
  // unrolling it, and that loop, which calls, would be widened as before.
  for (int s = 0; s < STREAMS; ++s) {
    (void)cudaMalloc((void **)&d_in[s], 64);
    (void)cudaMallocHost((void **)&h_out[s], 64);
  }
  bool ok = results_ok();
  for (int s = 0; s < STREAMS; ++s) {
    CHECK(cudaFree(d_in[s]));
    CHECK(cudaFree(d_in[s])); // expected-warning{{is released again with cudaFree}}
    CHECK(cudaFreeHost(h_out[s]));
  }
  return ok ? 0 : 1;
}

// A loop that calls a function may write any global: widened as the engine
// does, and the allocation in the global is no longer followed (no finding,
// none made up).
void touch(void);
int *g_buf;
void calls_in_loop(void) {
  CHECK(cudaMalloc((void **)&g_buf, 64));
  for (int i = 0; i < 1000; ++i)
    touch();
  CHECK(cudaFree(g_buf));
}

// A loop that writes a global is widened as the engine does too.
int counter;
void writes_global(void) {
  float *d;
  CHECK(cudaMalloc((void **)&d, 64));
  for (int i = 0; i < 1000; ++i)
    counter += i;
  CHECK(cudaFree(d));
  CHECK(cudaFree(d)); // expected-warning{{is released again with cudaFree}}
}

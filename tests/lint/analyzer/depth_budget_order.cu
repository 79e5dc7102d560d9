// A benchmark helper called several times from main, with a 100-round
// warm-up loop after a few branches: the node budget for main is shared by
// every path. Unrolled, the loop's rounds were explored after every other
// path of the three calls and the budget ran out before any path passed the
// loop; widened (it allocates and releases nothing), the path goes on to the
// helper's last lines.
#include "check.h"
__global__ void step(float *w, int n);
int parse(const char *s);

static void run(const char *arg, int n) {
  float *w;
  CHECK(cudaMalloc(&w, n));
  int mode = parse(arg);
  if (mode == 1)
    n *= 2;
  if (mode == 2)
    n *= 3;
  if (parse(arg + 1))
    n += 1;
  if (parse(arg + 2))
    n += 2;
  if (parse(arg + 3))
    n += 3;
  if (mode < 0)
    return; // expected-warning{{not released on this early exit}}
  for (int i = 0; i < 100; i++) {
    step<<<1, 1>>>(w, n);
    (void)cudaGetLastError();
  }
  CHECK(cudaFree(w));
  CHECK(cudaFree(w)); // expected-warning{{released again}}
}

int main(int argc, char **argv) {
  run(argv[1], 1);
  run(argv[2], 2);
  run(argv[3], 3);
  return 0;
}

// Buffers kept in an array: the loop is unrolled as before (a widening would
// forget the array's elements, and with them the double release below).
void ping_pong(int n) {
  float *buf[2];
  CHECK(cudaMalloc(&buf[0], n));
  CHECK(cudaMalloc(&buf[1], n));
  for (int i = 0; i < 50; i++) {
    step<<<1, 1>>>(buf[i % 2], n);
    (void)cudaGetLastError();
  }
  CHECK(cudaFree(buf[0]));
  CHECK(cudaFree(buf[1]));
  CHECK(cudaFree(buf[1])); // expected-warning{{released again}}
}

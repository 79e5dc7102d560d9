// Calls of the C++ standard library are evaluated as calls of unknown code,
// not followed: a benchmark's main that fills its inputs with
// std::uniform_real_distribution in nested loops of constant bounds spent
// the node budget inside the library's code, and no path reached the
// releases at the end of main.
#include "check.h"
#include <algorithm>
#include <random>
#include <vector>
#define NX 11
#define NY 40
#define NB 4
#define NS 2
typedef double grid[NY + 1][NB][NS];
__global__ void step(grid *a, grid *b, int i, int j);

int main() {
  grid *h_a = (grid *)malloc((NX + 1) * sizeof(grid));
  grid *h_b = (grid *)malloc((NX + 1) * sizeof(grid));
  std::default_random_engine rng(123);
  std::uniform_real_distribution<double> dist(0.0, 1.0);
  for (int i = 0; i < NX + 1; i++)
    for (int j = 0; j < NY + 1; j++)
      for (int b = 0; b < NB; b++)
        for (int s = 0; s < NS; s++) {
          h_a[i][j][b][s] = dist(rng);
          h_b[i][j][b][s] = dist(rng);
        }
  std::vector<int> order(64);
  for (int k = 0; k < 64; k++)
    order[k] = (int)(dist(rng) * 1000);
  std::partial_sort(order.begin(), order.begin() + 8, order.end(),
                    [](int x, int y) { return x > y; });

  grid *d_a, *d_b;
  CHECK(cudaMalloc(&d_a, (NX + 1) * sizeof(grid)));
  CHECK(cudaMalloc(&d_b, (NX + 1) * sizeof(grid)));
  for (int i = 1; i < NX + 1; i++)
    for (int j = 1; j < NY + 1; j++) {
      step<<<NB, 2>>>(d_a, d_b, i, j);
      CHECK(cudaGetLastError());
    }
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_a)); // expected-warning{{released again}}
  CHECK(cudaFree(d_b));
  free(h_a);
  free(h_b);
  return 0;
}

// std::swap, std::min and std::max on scalars are evaluated as the standard
// defines them: after a swap each variable holds the other's allocation, and
// a size clamped by std::min is known to be at most its bound.
void swapped(size_t n) {
  float *a, *b;
  CHECK(cudaMalloc(&a, n));
  CHECK(cudaMalloc(&b, n));
  std::swap(a, b);
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(a)); // expected-warning{{released again}}
}

void clamped(int n) {
  float *p;
  CHECK(cudaMalloc(&p, 4));
  int k = std::min(n, 256);
  if (k > 256)
    return; // never: no leak reported
  int m = std::max(k, 1);
  if (m < 1)
    return; // never
  CHECK(cudaFree(p));
}

// Any other call of the standard library that gets a pointer by reference
// may store into it: the pointer is no longer known to hold its allocation,
// and nothing is reported about it (no made-up leak).
void rotated(size_t n) {
  float *v[3];
  CHECK(cudaMalloc(&v[0], n));
  CHECK(cudaMalloc(&v[1], n));
  CHECK(cudaMalloc(&v[2], n));
  std::rotate(v, v + 1, v + 3);
  CHECK(cudaFree(v[0]));
  CHECK(cudaFree(v[1]));
  CHECK(cudaFree(v[2]));
}

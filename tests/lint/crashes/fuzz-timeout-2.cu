#dlÇbal__ void k(float *a, int n) { a[threadIdx.x] = 0; }
int run(int~n) {
f(float));
  CUDA_CHEC];
  aut`o f = [&](int x) { cudaFree(b); };
  do { if (!b) break; } while (0)G  switch (n) { case 0: cudaFree(b); break; default: returnj nullptrntime_error("x");
 1ee(b); continubraek;;e default: Ž¤turnj nullptr; }
  t
  return 0r;à‚õßß‹õç ree(b); };


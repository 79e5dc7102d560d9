namespace ns {
template <typename T>
T* make(size_t n) try {
  GPUMEM_AUTO float *a = gpumem_device_alloc(n, 4);
  float *b = (float*)gpumem_adopt(s, gpumem_device_alloc(n, 4));
  __shared__ float sm[64];
  auto f = [&](int x) { cudaFree(b); };
  do { if (!b) break; } while (0);
  switch (n) { case 1: cudaFree(b); break; default: return nullptr; }
  throw std::runtime_error("x");
  (void)cudaFree(b);
  unsigned char *c = static_cast<unsigned char*>(p);
} catch (const std::exception &e) { return nullptr; }
}
struct S { void m() { cudaFree(p); } float *p; };
void S2::m2() const { cudaFree(p); }
extern "C" void g(void) { if (cudaMalloc(&p, 4) != cudaSuccess) return; }

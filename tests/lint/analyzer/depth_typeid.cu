// The path goes on past typeid: clang's engine ends it at a CXXTypeidExpr, so
// a leak after `if (typeid(Real) == typeid(double))` went unreported.
#include "check.h"
#include <stdexcept>
#include <typeinfo>
int prepare(const void *p);

template <typename Real> void solve(size_t n) {
  Real *d;
  CHECK(cudaMalloc(&d, n * sizeof(Real)));
  if (typeid(Real) == typeid(double))
    n *= 2;
  if (prepare(d))
    throw std::runtime_error("x"); // expected-warning{{memory allocated with cudaMalloc is not released on this early exit}}
  CHECK(cudaFree(d));
}
template void solve<float>(size_t);

// Folded per instantiation: for float the double branch is dead, so its leak
// is not reported; the float branch's is.
template <typename Real> void by_type(size_t n) {
  Real *d;
  CHECK(cudaMalloc(&d, n)); // expected-warning{{memory allocated with cudaMalloc is never released}}
  if (typeid(Real) != typeid(float)) {
    CHECK(cudaFree(d));
    return;
  }
}
template void by_type<float>(size_t);

// A typeid that is not a comparison of static types is an unknown value.
struct Base {
  virtual ~Base();
};
void dynamic(Base &b, size_t n) {
  float *d;
  CHECK(cudaMalloc(&d, n));
  if (typeid(b) == typeid(Base))
    n++;
  const char *name = typeid(b).name();
  if (prepare(name))
    return; // expected-warning{{memory allocated with cudaMalloc is not released on this early exit}}
  CHECK(cudaFree(d));
}

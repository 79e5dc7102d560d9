// GM004 with gpumem.UncheckedStatus:LaunchChecks naming a project's launch check.
// FLAGS: -Xclang -analyzer-config -Xclang gpumem.UncheckedStatus:LaunchChecks=checkLaunch
#include "check.h"
// expected-no-diagnostics
__global__ void k(float *d) {}
void checkLaunch(const char *what);
inline void checkLaunch(const char *what) { (void)what; }

void checked_by_project_call(float *d, float *h) {
  k<<<1, 1>>>(d);
  checkLaunch("k");
  CHECK(cudaMemcpy(h, d, 4, cudaMemcpyDeviceToHost));
}

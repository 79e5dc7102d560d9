#include "check.h"
// Another program's function of the same name, which releases nothing.
void done_with(float *p) { CHECK(cudaMemset(p, 0, 4)); }

#include "check.h"
void done_with(float *p) { CHECK(cudaFree(p)); }

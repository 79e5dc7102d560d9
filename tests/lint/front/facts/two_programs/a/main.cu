#include "check.h"
void done_with(float *p);
int main(void) {
    float *d;
    CHECK(cudaMalloc(&d, 64));
    done_with(d);
    CHECK(cudaFree(d));
    return 0;
}

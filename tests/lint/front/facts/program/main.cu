#include "check.h"
#include "buffers.h"
int main(void) {
    float *d, *h, *e, *f;
    CHECK(cudaMalloc(&d, 64));
    CHECK(cudaMallocHost(&h, 64));
    release_buffer(d);
    release_buffer(d);  // GM008
    release_buffer(h);  // GM002
    alloc_buffer(&e, 64);  // GM001: e is never released
    CHECK(cudaMalloc(&f, 64));  // GM001: fill only reads f
    fill(f, 64);
    return 0;
}

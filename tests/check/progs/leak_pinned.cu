// expect: leak cudaMallocHost pinned bytes=65536 at=main@alloc
//
// Pinned host memory from cudaMallocHost, written and copied to the device, never released
// (the device copy is).
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    const size_t bytes = 65536;
    char *h = NULL, *d = NULL;
    CHECK(cudaMallocHost(&h, bytes)); // @alloc
    memset(h, 1, bytes);
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaFree(d));
    prog_done("leak_pinned");
    return 0;
}

// expect: double-free cudaFree device bytes=4096
//
// cudaFree of the same device block twice, with no allocation in between (so the address
// cannot have been handed out again).
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaFree(d));
    PLANTED(cudaFree(d));
    prog_done("double_free_device");
    return 0;
}

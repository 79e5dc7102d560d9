// expect: double-free cudaFree device bytes=4096 at=main@again alloc_at=main@alloc first_at=main@first
//
// cudaFree of the same device block twice, with no allocation in between (so the address
// cannot have been handed out again).
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096)); // @alloc
    CHECK(cudaFree(d)); // @first
    PLANTED(cudaFree(d)); // @again
    prog_done("double_free_device");
    return 0;
}

// expect: interior-free cudaFree device bytes=4096 offset=256 at=main@interior alloc_at=main@alloc
//
// cudaFree of a pointer 256 bytes into a device block; the block itself is then released
// properly, so nothing leaks.
#include "check_prog.h"

int main(void)
{
    prog_init();
    char *d = NULL;
    CHECK(cudaMalloc(&d, 4096)); // @alloc
    PLANTED(cudaFree(d + 256)); // @interior
    CHECK(cudaFree(d));
    prog_done("interior_free");
    return 0;
}

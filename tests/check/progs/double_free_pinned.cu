// expect: double-free cudaFreeHost pinned bytes=4096 at=main@again alloc_at=main@alloc first_at=main@first
//
// cudaFreeHost of the same pinned block twice.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *h = NULL;
    CHECK(cudaMallocHost(&h, 4096)); // @alloc
    CHECK(cudaFreeHost(h)); // @first
    PLANTED(cudaFreeHost(h)); // @again
    prog_done("double_free_pinned");
    return 0;
}

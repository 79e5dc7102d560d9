// expect: double-free cudaFreeHost pinned bytes=4096
//
// cudaFreeHost of the same pinned block twice.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *h = NULL;
    CHECK(cudaMallocHost(&h, 4096));
    CHECK(cudaFreeHost(h));
    PLANTED(cudaFreeHost(h));
    prog_done("double_free_pinned");
    return 0;
}

// expect: mismatched-release free managed bytes=4096 at=main@free alloc_at=main@alloc
//
// Managed memory handed to the C library's free(); under gpumem check it is released with
// cudaFree and the program runs on.
#include <stdlib.h>
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    char *m = NULL;
    CHECK(cudaMallocManaged(&m, 4096)); // @alloc
    memset(m, 0, 4096);
    free(m); // @free
    printf("mismatch_free_managed: still running after free() of managed memory\n");
    char *again = NULL;
    CHECK(cudaMallocManaged(&again, 4096));
    memset(again, 1, 4096);
    CHECK(cudaFree(again));
    prog_done("mismatch_free_managed");
    return 0;
}

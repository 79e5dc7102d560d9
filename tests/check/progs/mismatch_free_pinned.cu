// expect: mismatched-release free pinned bytes=4096 at=main@free alloc_at=main@alloc
//
// Pinned memory from cudaMallocHost handed to the C library's free(). Natively glibc aborts
// ("free(): invalid pointer") or corrupts its heap; under gpumem check the block is released
// with cudaFreeHost and the program runs on: it allocates and releases more memory, host and
// pinned, and prints its closing line.
#include <stdlib.h>
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    char *h = NULL;
    CHECK(cudaMallocHost(&h, 4096)); // @alloc
    memset(h, 0, 4096);
    free(h); // @free
    printf("mismatch_free_pinned: still running after free() of pinned memory\n");
    fflush(stdout);

    for (int i = 0; i < 16; i++) {
        char *p = (char *)malloc(100 + i);
        char *q = NULL;
        if (!p) {
            fprintf(stderr, "malloc failed\n");
            return 1;
        }
        CHECK(cudaMallocHost(&q, 4096));
        memset(p, i, 100 + i);
        memset(q, i, 4096);
        CHECK(cudaFreeHost(q));
        free(p);
    }
    prog_done("mismatch_free_pinned");
    return 0;
}

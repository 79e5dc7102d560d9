// expect: mismatched-release realloc pinned bytes=4096 at=main@realloc alloc_at=main@alloc
//
// Pinned memory from cudaMallocHost handed to realloc(). Natively the C library crashes
// (SIGSEGV) or aborts; under gpumem check realloc() returns new memory holding the old
// contents, the pinned block is released with cudaFreeHost, and the program runs on. realloc
// of ordinary memory and of NULL still works as it should.
#include <stdlib.h>
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    char *h = NULL;
    CHECK(cudaMallocHost(&h, 4096)); // @alloc
    for (int i = 0; i < 4096; i++)
        h[i] = (char)(i * 7);
    char *r = (char *)realloc(h, 8192); // @realloc
    if (!r) {
        fprintf(stderr, "realloc of pinned memory returned NULL\n");
        return 1;
    }
    for (int i = 0; i < 4096; i++)
        if (r[i] != (char)(i * 7)) {
            fprintf(stderr, "realloc lost the contents at byte %d\n", i);
            return 1;
        }
    memset(r + 4096, 1, 4096);
    free(r);

    char *m = (char *)realloc(NULL, 100);
    if (!m)
        return 1;
    memset(m, 3, 100);
    m = (char *)realloc(m, 100000);
    if (!m || m[99] != 3)
        return 1;
    free(m);
    prog_done("mismatch_realloc_pinned");
    return 0;
}

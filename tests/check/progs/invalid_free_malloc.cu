// expect: invalid-free cudaFree - at=main@planted
//
// cudaFree of memory that came from the C library's malloc (then released properly).
#include <stdlib.h>
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    char *p = (char *)malloc(4096);
    if (!p) {
        fprintf(stderr, "malloc failed\n");
        return 1;
    }
    memset(p, 0, 4096);
    PLANTED(cudaFree(p)); // @planted
    free(p);
    prog_done("invalid_free_malloc");
    return 0;
}

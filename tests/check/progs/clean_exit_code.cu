// expect-exit: 3
//
// No findings expected; the program's own exit status (3) must come back through gpumem check
// untouched.
#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaFree(d));
    prog_done("clean_exit_code");
    return 3;
}

// expect: leak cudaMalloc device bytes=1048576 at=main@alloc
//
// A leak, then exec of another program (/bin/true, which uses no CUDA): the process's CUDA
// memory goes with its program, and the report of what the program did with CUDA is written
// before the exec.
#include <unistd.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 1 << 20)); // @alloc
    CHECK(cudaMemset(d, 0, 1 << 20));
    CHECK(cudaDeviceSynchronize());
    prog_done("leak_exec");
    execl("/bin/true", "true", (char *)NULL);
    perror("leak_exec: execl");
    return 1;
}

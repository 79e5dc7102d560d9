// expect: leak cudaMalloc device bytes=524288 at=main@alloc
//
// A leak, then _exit(), which runs no exit handlers: the report is written at the _exit itself
// (as after a fatal signal: no pointer scan), and says how the process ended.
#include <unistd.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 512 << 10)); // @alloc
    CHECK(cudaMemset(d, 0, 512 << 10));
    CHECK(cudaDeviceSynchronize());
    prog_done("leak_underscore_exit");
    _exit(0);
}

// expect: leak cudaMalloc device bytes=65536 at=main@alloc
// expect-status: signaled
// expect-signal: 6
//
// Leaks a device block, then dies of abort() (SIGABRT) without running exit handlers: the
// leak must still be reported, and the process recorded as killed by signal 6.
#include <stdlib.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    void *d = NULL;
    CHECK(cudaMalloc(&d, 65536)); // @alloc
    CHECK(cudaMemset(d, 0, 65536));
    CHECK(cudaDeviceSynchronize());
    printf("leak_abort: aborting with a device block live\n");
    fflush(stdout);
    abort();
}

// expect: leak cudaMalloc device bytes=262144 leak_kind=definite at=worker@alloc
//
// A std::thread allocates 256 KiB of device memory, keeps the pointer in a local and ends
// without releasing it; main joins it and runs on to its end. The thread's stack, the pointer
// still in it, stays mapped (glibc keeps it for the next thread), but no thread can use it
// any more: definitely lost.
#include <thread>

#include "check_prog.h"

static void worker(void)
{
    void *volatile d = NULL;
    CHECK(cudaMalloc((void **)&d, 262144)); // @alloc
    CHECK(cudaMemset(d, 0, 262144));
    CHECK(cudaDeviceSynchronize());
}

int main(void)
{
    prog_init();
    std::thread t(worker);
    t.join();
    prog_done("leak_thread_joined");
    return 0;
}

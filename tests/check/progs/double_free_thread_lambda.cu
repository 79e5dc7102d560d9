// expect: double-free cudaFree managed at=release_again@second first_at=release_once@first alloc_at=main@alloc
//
// Releases made in threads: std::thread runs a lambda that releases the managed buffer, and a
// second std::thread runs a std::function holding a lambda that releases it again. Both
// releases must be located at the program's lines, through the lambdas and std::thread's,
// std::function's and std::invoke's frames in libstdc++ (the release functions are kept out of
// line, so that their frames are the same in every build).
#include <functional>
#include <thread>

#include "check_prog.h"

__attribute__((noinline)) static void release_once(void *m)
{
    CHECK(cudaFree(m)); // @first
}

__attribute__((noinline)) static void release_again(void *m)
{
    cudaError_t e = cudaFree(m); // @second
    printf("planted: the second cudaFree returned %s\n", cudaGetErrorName(e));
}

int main(void)
{
    prog_init();
    void *m = NULL;
    CHECK(cudaMallocManaged(&m, 1 << 16)); // @alloc
    std::thread first([m] { release_once(m); });
    first.join();
    std::function<void()> again = [m] { release_again(m); };
    std::thread second(again);
    second.join();
    (void)cudaGetLastError();
    prog_done("double_free_thread_lambda");
    return 0;
}

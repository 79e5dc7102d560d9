// The check macro the verify tests use: a failed call ends the program, as in most CUDA code.
#ifndef VERIFY_CHECK_H
#define VERIFY_CHECK_H
#include <cuda_runtime.h>
#include <stdlib.h>
#define CHECK(call)                                                                        \
    do {                                                                                   \
        if ((call) != cudaSuccess)                                                         \
            abort();                                                                       \
    } while (0)
#endif

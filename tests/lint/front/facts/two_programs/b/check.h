#ifndef CHECK_H
#define CHECK_H
#include <cuda_runtime.h>
#include <stdlib.h>
#define CHECK(call)                                                                        \
    do {                                                                                   \
        if ((call) != cudaSuccess)                                                         \
            abort();                                                                       \
    } while (0)
#endif

// Shared by the gpu tests written in CUDA: a check that counts failures and goes on, the
// device count (0 when there is none: the caller then exits 77, counted as skipped), and
// the closing line.
#ifndef GPUMEM_GPU_CHECK_H
#define GPUMEM_GPU_CHECK_H

#include <cstdio>

static int failures;

#define CHECK_TRUE(c)                                                                            \
    do {                                                                                         \
        if (!(c)) {                                                                              \
            std::fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #c);                   \
            failures++;                                                                          \
        }                                                                                        \
    } while (0)

// Number of CUDA devices the caller's runtime sees; prints the skip line when there is none.
static inline int gpu_device_count()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("SKIP: no CUDA device\n");
        return 0;
    }
    return n;
}

// The closing line and the exit status.
static inline int gpu_finish(const char *what)
{
    std::printf("%s%s%s (%d failures)\n", what, *what ? " " : "", failures ? "FAIL" : "ok",
                failures);
    return failures ? 1 : 0;
}

#endif

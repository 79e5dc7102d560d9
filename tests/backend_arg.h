/* Shared by the test programs that run the same scenarios on the simulated device and on a
 * GPU: the backend comes from argv[1] ("sim" when absent, or "cuda"). */
#ifndef GPUMEM_TEST_BACKEND_ARG_H
#define GPUMEM_TEST_BACKEND_ARG_H

#include <stdio.h>

#include "gpumem.h"
#include "harness.h"

/* Chooses the backend; 0 when argv[1] names none (usage printed: main returns 2). */
static inline int test_select_backend(int argc, char **argv)
{
    if (gpumem_backend_select(argc > 1 ? argv[1] : "sim") == GPUMEM_OK)
        return 1;
    fprintf(stderr, "usage: %s [sim|cuda]\n", argv[0]);
    return 0;
}

/* Initializes it; 0 when there is no usable device (the reason printed and the test marked
 * skipped: main returns harness_exit(), which gives 77). */
static inline int test_device_ready(void)
{
    if (gpumem_init() == GPUMEM_OK) {
        fprintf(stderr, "backend: %s\n", gpumem_backend());
        return 1;
    }
    fprintf(stderr, "%s\n", gpumem_last_error()->message);
    SKIP("no usable CUDA device");
    return 0;
}

#endif

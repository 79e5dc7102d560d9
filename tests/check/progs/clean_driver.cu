// No findings expected: the driver API's allocation calls, each released with its own call.
#include <stdlib.h>
#include <string.h>

#include "check_prog.h"

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    const size_t bytes = 1 << 16;
    CUstream s;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    CUdeviceptr d = 0, pitched = 0, managed = 0, async = 0;
    size_t pitch = 0;
    void *pinned = NULL, *host = NULL;
    CHECK_CU(cuMemAlloc(&d, bytes));
    CHECK_CU(cuMemAllocPitch(&pitched, &pitch, 1000, 64, 4));
    CHECK_CU(cuMemAllocManaged(&managed, bytes, CU_MEM_ATTACH_GLOBAL));
    CHECK_CU(cuMemAllocHost(&pinned, bytes));
    CHECK_CU(cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE));
    memset(pinned, 1, bytes);
    memset(host, 2, bytes);
    memset((void *)managed, 3, bytes);
    CHECK_CU(cuMemcpyHtoD(d, pinned, bytes));
    CHECK_CU(cuMemcpyDtoH(host, d, bytes));

    char *reg = (char *)aligned_alloc(4096, bytes);
    if (!reg) {
        fprintf(stderr, "aligned_alloc failed\n");
        return 1;
    }
    CHECK_CU(cuMemHostRegister(reg, bytes, 0));
    CHECK_CU(cuMemcpyHtoD(d, reg, bytes));

    CHECK_CU(cuMemAllocAsync(&async, bytes, s));
    CHECK_CU(cuMemsetD8Async(async, 0, bytes, s));
    CHECK_CU(cuMemFreeAsync(async, s));
    CHECK_CU(cuStreamSynchronize(s));

    CHECK_CU(cuMemHostUnregister(reg));
    free(reg);
    CHECK_CU(cuMemFreeHost(host));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(managed));
    CHECK_CU(cuMemFree(pitched));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuStreamDestroy(s));
    prog_done("clean_driver");
    return 0;
}

// expect: double-free cuMemRelease virtual at=main@second first_at=main@first alloc_at=main@create
// expect: leak cuMemCreate virtual at=main@kept
//
// Virtual memory handles are counted: one cuMemRelease per reference. The first buffer is
// released twice with one reference (the creator's): the second release is a double release
// (CUDA may refuse it or not; the memory is gone either way once the mapping is undone). The
// second buffer's handle is retained (a second reference) and released once: its memory stays
// allocated until exit, a leak.
#include "check_prog.h"

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemCreate(&h, gran, &prop, 0)); // @create
    CHECK_CU(cuMemRelease(h));                 // @first
    CUresult again = cuMemRelease(h);          // @second
    printf("planted: the second cuMemRelease returned %d\n", (int)again);

    CUmemGenericAllocationHandle k, retained;
    CUdeviceptr va = 0;
    CHECK_CU(cuMemCreate(&k, gran, &prop, 0)); // @kept
    CHECK_CU(cuMemAddressReserve(&va, gran, 0, 0, 0));
    CHECK_CU(cuMemMap(va, gran, 0, k, 0));
    CHECK_CU(cuMemRetainAllocationHandle(&retained, (void *)va));
    CHECK_CU(cuMemUnmap(va, gran));
    CHECK_CU(cuMemAddressFree(va, gran));
    CHECK_CU(cuMemRelease(retained)); /* one of two references: the memory stays */
    prog_done("double_release_vmm");
    return 0;
}

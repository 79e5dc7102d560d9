// expect: leak cuMemAddressReserve reserved bytes=67108864 at=main@reserve
//
// A virtual address range reserved with cuMemAddressReserve and never freed with
// cuMemAddressFree (nothing is mapped in it). A second reservation, with a mapping made and
// undone inside it, is freed: no finding.
#include "check_prog.h"

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    CUdeviceptr leaked = 0;
    CHECK_CU(cuMemAddressReserve(&leaked, 64u << 20, 0, 0, 0)); // @reserve

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemAddressReserve(&va, gran, 0, 0, 0));
    CHECK_CU(cuMemCreate(&h, gran, &prop, 0));
    CHECK_CU(cuMemMap(va, gran, 0, h, 0));
    CHECK_CU(cuMemUnmap(va, gran));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, gran));
    printf("reserved %#llx\n", (unsigned long long)leaked);
    prog_done("leak_reserve");
    return 0;
}

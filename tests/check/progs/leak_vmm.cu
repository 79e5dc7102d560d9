// expect: leak cuMemCreate virtual at=main@create
// expect: leak cuMemAddressReserve reserved at=main@reserve
//
// Virtual memory management: a reserved range, physical memory from cuMemCreate mapped into
// it, accessed by a kernel. The handle is released right after mapping (legal: the memory
// lives as long as the mapping), but the mapping is never undone (cuMemUnmap), so the physical
// memory is never freed, and the range never freed (cuMemAddressFree): two leaks, the memory
// (shown where cuMemCreate made it) and the reservation.
#include "check_prog.h"

__global__ void fill(int *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 7;
}

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
    const size_t bytes = 2 * gran;

    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemAddressReserve(&va, bytes, 0, 0, 0)); // @reserve
    CHECK_CU(cuMemCreate(&h, bytes, &prop, 0)); // @create
    CHECK_CU(cuMemMap(va, bytes, 0, h, 0)); // @map
    CHECK_CU(cuMemRelease(h));
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(va, bytes, &access, 1));

    size_t n = bytes / sizeof(int);
    fill<<<(unsigned)((n + 255) / 256), 256>>>((int *)va, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    printf("mapped %zu bytes at %#llx\n", bytes, (unsigned long long)va);
    prog_done("leak_vmm");
    return 0;
}

// No findings expected: virtual memory management done completely. Two pieces of physical
// memory mapped side by side into one reserved range, used by a kernel as one array, then
// unmapped, released and the range freed.
#include "check_prog.h"

__global__ void fill(int *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = (int)i;
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

    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h[2];
    CHECK_CU(cuMemAddressReserve(&va, 2 * gran, 0, 0, 0));
    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemCreate(&h[i], gran, &prop, 0));
        CHECK_CU(cuMemMap(va + i * gran, gran, 0, h[i], 0));
    }
    CUmemAccessDesc access = {};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(va, 2 * gran, &access, 1));

    size_t n = 2 * gran / sizeof(int);
    fill<<<(unsigned)((n + 255) / 256), 256>>>((int *)va, n);
    CHECK(cudaGetLastError());
    int last = 0;
    CHECK(cudaMemcpy(&last, (int *)va + n - 1, sizeof last, cudaMemcpyDeviceToHost));
    if ((size_t)last != n - 1) {
        fprintf(stderr, "clean_vmm: expected %zu, got %d\n", n - 1, last);
        return 1;
    }

    CHECK_CU(cuMemUnmap(va, 2 * gran));
    CHECK_CU(cuMemRelease(h[0]));
    CHECK_CU(cuMemRelease(h[1]));
    CHECK_CU(cuMemAddressFree(va, 2 * gran));
    prog_done("clean_vmm");
    return 0;
}

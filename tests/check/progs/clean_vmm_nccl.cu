// No findings expected: virtual memory freed the way NCCL's ncclCuMemFree does it. The buffer
// is made as NCCL makes it (cuMemCreate, cuMemAddressReserve, cuMemMap, cuMemSetAccess); the
// free path takes one more reference with cuMemRetainAllocationHandle, releases it, unmaps,
// and releases the creator's reference. Each retain adds a reference, and the memory goes
// when the last reference is released and the last mapping unmapped: no double release. A
// second buffer is released right after mapping and unmapped later (PyTorch's expandable
// segments do so), a third is exported as a file descriptor, imported back, and both handles
// are released.
#include <unistd.h>

#include "check_prog.h"

static CUmemAllocationProp device_prop(int shareable)
{
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    if (shareable)
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return prop;
}

static CUdeviceptr nccl_alloc(size_t size, const CUmemAllocationProp *prop,
                              CUmemGenericAllocationHandle *h)
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemCreate(h, size, prop, 0));
    CHECK_CU(cuMemAddressReserve(&p, size, 0, 0, 0));
    CHECK_CU(cuMemMap(p, size, 0, *h, 0));
    CUmemAccessDesc access = {};
    access.location = prop->location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(p, size, &access, 1));
    return p;
}

static void nccl_free(CUdeviceptr p)
{
    CUmemGenericAllocationHandle h;
    size_t size = 0;
    CHECK_CU(cuMemRetainAllocationHandle(&h, (void *)p));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemGetAddressRange(NULL, &size, p));
    CHECK_CU(cuMemUnmap(p, size));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(p, size));
}

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    CUmemAllocationProp prop = device_prop(0);
    size_t gran = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

    for (int i = 0; i < 8; i++) {
        CUmemGenericAllocationHandle h;
        CUdeviceptr p = nccl_alloc((i + 1) * gran, &prop, &h);
        CHECK(cudaMemset((void *)p, i, (i + 1) * gran));
        CHECK(cudaDeviceSynchronize()); /* unmapping does not wait for the work on it */
        nccl_free(p);
    }

    CUmemGenericAllocationHandle early;
    CUdeviceptr q = nccl_alloc(gran, &prop, &early);
    CHECK_CU(cuMemRelease(early)); /* the mapping keeps the memory */
    CHECK(cudaMemset((void *)q, 1, gran));
    CHECK(cudaDeviceSynchronize());
    CHECK_CU(cuMemUnmap(q, gran)); /* and now it goes */
    CHECK_CU(cuMemAddressFree(q, gran));

    CUmemAllocationProp shared = device_prop(1);
    CUmemGenericAllocationHandle exported, imported;
    CUdeviceptr r = nccl_alloc(gran, &shared, &exported);
    int fd = -1;
    CHECK_CU(cuMemExportToShareableHandle(&fd, exported, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK_CU(cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)fd,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd);
    CUdeviceptr r2 = 0;
    CHECK_CU(cuMemAddressReserve(&r2, gran, 0, 0, 0));
    CHECK_CU(cuMemMap(r2, gran, 0, imported, 0));
    CUmemAccessDesc access = {};
    access.location = shared.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemSetAccess(r2, gran, &access, 1));
    CHECK(cudaMemset((void *)r2, 2, gran));
    CHECK(cudaMemset((void *)r, 3, gran));
    CHECK(cudaDeviceSynchronize());
    CHECK_CU(cuMemUnmap(r2, gran));
    CHECK_CU(cuMemAddressFree(r2, gran));
    CHECK_CU(cuMemRelease(imported));
    nccl_free(r);
    prog_done("clean_vmm_nccl");
    return 0;
}

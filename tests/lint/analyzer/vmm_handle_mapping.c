// Virtual memory management, the two pairs next to the address range's: a
// physical allocation handle (cuMemCreate / cuMemRelease) and a mapping of a
// handle into a reserved range (cuMemMap / cuMemUnmap). A handle or mapping
// leaked on an error return, never released, or released twice is reported.
#include <cuda.h>

int create_then_fail(size_t size, const CUmemAllocationProp *prop,
                     CUdeviceptr va) {
  CUmemGenericAllocationHandle h;
  if (cuMemCreate(&h, size, prop, 0) != CUDA_SUCCESS)
    return -1;
  if (cuMemMap(va, size, 0, h, 0) != CUDA_SUCCESS)
    return -1; // expected-warning{{memory allocated with cuMemCreate is not released on this early exit, though the function releases it on its normal path: h (cuMemCreate, line 10)}}
  (void)cuMemRelease(h);
  return 0;
}

void handle_forgotten(size_t size, const CUmemAllocationProp *prop) {
  CUmemGenericAllocationHandle h;
  (void)cuMemCreate(&h, size, prop, 0); // expected-warning{{memory allocated with cuMemCreate is never released on this path; release it with cuMemRelease}}
}

void handle_released_twice(size_t size, const CUmemAllocationProp *prop) {
  CUmemGenericAllocationHandle h;
  if (cuMemCreate(&h, size, prop, 0) != CUDA_SUCCESS)
    return;
  (void)cuMemRelease(h);
  (void)cuMemRelease(h); // expected-warning{{memory allocated with cuMemCreate is released again with cuMemRelease (it was released with cuMemRelease)}}
}

int map_then_fail(size_t size, CUmemGenericAllocationHandle h,
                  const CUmemAccessDesc *desc) {
  CUdeviceptr va;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS)
    return -1;
  if (cuMemMap(va, size, 0, h, 0) != CUDA_SUCCESS) {
    (void)cuMemAddressFree(va, size);
    return -1; // a mapping that failed is not leaked
  }
  if (cuMemSetAccess(va, size, desc, 1) != CUDA_SUCCESS) {
    (void)cuMemAddressFree(va, size);
    return -1; // expected-warning{{memory allocated with cuMemMap is not released on this early exit, though the function releases it on its normal path: va (cuMemMap, line 36)}}
  }
  (void)cuMemUnmap(va, size);
  (void)cuMemAddressFree(va, size);
  return 0;
}

void mapping_forgotten(size_t size, CUmemGenericAllocationHandle h) {
  CUdeviceptr va;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS)
    return;
  (void)cuMemMap(va, size, 0, h, 0); // expected-warning{{memory allocated with cuMemMap is never released on this path; release it with cuMemUnmap}}
  (void)cuMemAddressFree(va, size);
}

void unmapped_twice(size_t size, CUmemGenericAllocationHandle h) {
  CUdeviceptr va;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS)
    return;
  if (cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS) {
    (void)cuMemUnmap(va, size);
    (void)cuMemUnmap(va, size); // expected-warning{{memory allocated with cuMemMap is released again with cuMemUnmap (it was released with cuMemUnmap)}}
  }
  (void)cuMemAddressFree(va, size);
}

// The whole sequence, each call checked and undone in reverse order on
// error: nothing to report.
int map_all(size_t size, const CUmemAllocationProp *prop,
            const CUmemAccessDesc *desc, CUdeviceptr *out,
            CUmemGenericAllocationHandle *out_h) {
  CUdeviceptr va;
  CUmemGenericAllocationHandle h;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS)
    return -1;
  if (cuMemCreate(&h, size, prop, 0) != CUDA_SUCCESS)
    goto free_range;
  if (cuMemMap(va, size, 0, h, 0) != CUDA_SUCCESS)
    goto release;
  if (cuMemSetAccess(va, size, desc, 1) != CUDA_SUCCESS)
    goto unmap;
  *out = va;
  *out_h = h;
  return 0;
unmap:
  (void)cuMemUnmap(va, size);
release:
  (void)cuMemRelease(h);
free_range:
  (void)cuMemAddressFree(va, size);
  return -1;
}

// A mapping at an address the caller reserved is the caller's to unmap.
int map_at(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h) {
  return cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS ? 0 : -1;
}

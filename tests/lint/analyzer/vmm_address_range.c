// Virtual memory management: a range reserved with cuMemAddressReserve is
// released with cuMemAddressFree; one leaked on an error return is reported,
// as is a release with the wrong call.
#include <cuda.h>

int map_range(size_t size, CUmemGenericAllocationHandle h) {
  CUdeviceptr va;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS)
    return -1;
  if (cuMemMap(va, size, 0, h, 0) != CUDA_SUCCESS)
    return -1; // expected-warning{{memory allocated with cuMemAddressReserve is not released on this early exit, though the function releases it on its normal path: va (cuMemAddressReserve, line 8)}}
  (void)cuMemUnmap(va, size);
  (void)cuMemAddressFree(va, size);
  return 0;
}

void forgotten(size_t size) {
  CUdeviceptr va;
  (void)cuMemAddressReserve(&va, size, 0, 0, 0); // expected-warning{{memory allocated with cuMemAddressReserve is never released on this path; release it with cuMemAddressFree}}
}

void wrong_release(size_t size) {
  CUdeviceptr va;
  if (cuMemAddressReserve(&va, size, 0, 0, 0) != CUDA_SUCCESS)
    return;
  (void)cuMemFree(va); // expected-warning{{cuMemAddressReserve}}
}

// expect: leak cudaMallocArray array bytes=262144 at=main@leaked
// expect: leak cuArray3DCreate array bytes=65536 at=main@leaked3d
// expect: mismatched-release cudaFree array bytes=4096 at=main@wrong_free alloc_at=main@wrong
// expect: mismatched-release cudaFree mipmapped-array bytes=5440 at=main@mip_free alloc_at=main@mip
//
// CUDA arrays: a 256x256 float array from cudaMallocArray that is never released, a 3D array
// from the driver that is never destroyed, a 1D array released with cudaFree (CUDA refuses
// it; released right after), and a mipmapped array (32x32 float, 4 levels: 4096 + 1024 + 256
// + 64 = 5440 bytes) released with cudaFree (refused), then with cudaFreeMipmappedArray.
// Arrays released right stay unreported. cudaFreeArray of the mipmapped array is not planted:
// on an H200 (driver 580.159.04, CUDA 13.0, 2026-12-05) it returned cudaSuccess without a tool
// attached, and with CUPTI attached the process died of SIGSEGV inside the call in some of the
// builds, before it returned: undefined behaviour of the driver, not a verdict to test.
#include "check_prog.h"

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    cudaChannelFormatDesc fdesc = cudaCreateChannelDesc<float>();

    cudaArray_t leaked = NULL;
    CHECK(cudaMallocArray(&leaked, &fdesc, 256, 256)); // @leaked

    CUDA_ARRAY3D_DESCRIPTOR d3 = {};
    d3.Width = 16;
    d3.Height = 16;
    d3.Depth = 16;
    d3.Format = CU_AD_FORMAT_FLOAT;
    d3.NumChannels = 4;
    CUarray leaked3d = NULL;
    CHECK_CU(cuArray3DCreate(&leaked3d, &d3)); // @leaked3d

    cudaArray_t wrong = NULL;
    CHECK(cudaMallocArray(&wrong, &fdesc, 1024, 0)); // @wrong
    PLANTED(cudaFree(wrong)); // @wrong_free
    CHECK(cudaFreeArray(wrong));

    cudaMipmappedArray_t mip = NULL;
    CHECK(cudaMallocMipmappedArray(&mip, &fdesc, make_cudaExtent(32, 32, 0), 4)); // @mip
    PLANTED(cudaFree((void *)mip)); // @mip_free
    CHECK(cudaFreeMipmappedArray(mip));

    cudaArray_t fine = NULL;
    CHECK(cudaMalloc3DArray(&fine, &fdesc, make_cudaExtent(64, 64, 4)));
    CHECK(cudaFreeArray(fine));
    prog_done("leak_array");
    return 0;
}

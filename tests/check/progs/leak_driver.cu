// expect: leak cuMemAlloc device bytes=524288 at=main@alloc
//
// The driver API: cuMemAlloc in the runtime's primary context, never released with cuMemFree.
#include "check_prog.h"

int main(void)
{
    prog_init();
    CHECK_CU(cuInit(0));
    CUdeviceptr d = 0;
    CHECK_CU(cuMemAlloc(&d, 524288)); // @alloc
    CHECK_CU(cuMemsetD8(d, 0, 524288));
    CHECK_CU(cuCtxSynchronize());
    prog_done("leak_driver");
    return 0;
}

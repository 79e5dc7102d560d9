// The seed's misaligned float4 load: CUDA reports cudaErrorMisalignedAddress at the next
// synchronizing call and the context is dead. GPUMEM_CHECK names it as sticky, and with
// GPUMEM_SYNC_LAUNCH=1 GPUMEM_CHECK_LAUNCH pins it to the launch. Exits 77 without a GPU.
#include <cstdio>
#include <cstring>

#include <gpumem.h>

#include "gpu_check.h"

static gpumem_error seen;
static void capture(const gpumem_error *e, void *) { seen = *e; }

__global__ void load4(const float *base, float *out)
{
    const float4 *v = reinterpret_cast<const float4 *>(base + 1); // 4 bytes off: misaligned
    float4 x = v[threadIdx.x];
    out[threadIdx.x] = x.x + x.y + x.z + x.w;
}

int main()
{
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    gpumem_set_error_handler(capture, nullptr);
    float *d = (float *)gpumem_device_alloc(1024, sizeof(float));
    float *out = (float *)gpumem_device_alloc(32, sizeof(float));
    if (!d || !out)
        return 1;
    load4<<<1, 32>>>(d, out);
    int rc = GPUMEM_CHECK_LAUNCH(); // synchronizes when GPUMEM_SYNC_LAUNCH=1 (set by CTest)
    int ok = rc == cudaErrorMisalignedAddress && seen.code == GPUMEM_ESTICKY &&
             std::strstr(seen.message, "this error is sticky") &&
             std::strstr(seen.message, "kernel execution");
    std::printf("%s\n", seen.message);
    // Every later call fails too; gpumem reports the release failure as sticky, no crash.
    int frc = gpumem_free(d);
    std::printf("gpumem_free after the fault: %s\n", gpumem_err_name(frc));
    ok = ok && frc == GPUMEM_ESTICKY;
    std::printf("%s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}

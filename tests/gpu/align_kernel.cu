// The seed's misaligned float4 load three ways, one per process (a stopped kernel leaves the
// context dead, so each mode runs alone):
//   bare   the load as written: CUDA says cudaErrorMisalignedAddress, and nothing more;
//   assert the same kernel with GPUMEM_DEVICE_ASSERT_ALIGNED first: the kernel prints file,
//          line, thread, block and address, then stops (cudaErrorAssert);
//   view   GPUMEM_VEC on the host refuses the view before any launch: the context stays
//          healthy and the corrected view runs.
// Built with GPUMEM_DEVICE_CHECKS=1. Exits 77 without a GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include <gpumem.h>
#include <gpumem_device.h>

#include "gpu_check.h"


static gpumem_error seen;
static void capture(const gpumem_error *e, void *) { seen = *e; }

__global__ void load4_bare(const float *base, size_t elem_offset, float *out)
{
    const float *p = base + elem_offset;
    float4 x = reinterpret_cast<const float4 *>(p)[threadIdx.x];
    out[threadIdx.x] = x.x + x.y + x.z + x.w;
}

__global__ void load4_checked(const float *base, size_t elem_offset, float *out)
{
    const float *p = base + elem_offset;
    GPUMEM_DEVICE_ASSERT_ALIGNED(p, sizeof(float4));
    float4 x = reinterpret_cast<const float4 *>(p)[threadIdx.x];
    out[threadIdx.x] = x.x + x.y + x.z + x.w;
}

__global__ void load4_view(const float4 *v, float *out)
{
    GPUMEM_DEVICE_ASSERT_ALIGNED(v, sizeof(float4));
    float4 x = v[threadIdx.x];
    out[threadIdx.x] = x.x + x.y + x.z + x.w;
}

// Device printf goes to this process's stdout; it is sent to a file while the kernel runs and
// read back, so the program can check what a user would see.
static char captured[1 << 16];
static int saved_stdout = -1;
static char capture_path[] = "/tmp/gpumem_align_kernel_XXXXXX";

static void capture_begin()
{
    std::fflush(stdout);
    int fd = mkstemp(capture_path);
    saved_stdout = dup(1);
    dup2(fd, 1);
    close(fd);
}

static void capture_end()
{
    std::fflush(stdout);
    dup2(saved_stdout, 1);
    close(saved_stdout);
    FILE *f = std::fopen(capture_path, "r");
    size_t n = f ? std::fread(captured, 1, sizeof captured - 1, f) : 0;
    captured[n] = '\0';
    if (f)
        std::fclose(f);
    unlink(capture_path);
    std::printf("--- device output ---\n%s--- end ---\n", captured);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "view";
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    gpumem_set_error_handler(capture, nullptr);
    const size_t count = 4096;
    float *d = (float *)gpumem_device_alloc(count, sizeof(float));
    float *out = (float *)gpumem_device_alloc(64, sizeof(float));
    CHECK_TRUE(d && out);
    if (!d || !out)
        return 1;
    float *h = (float *)gpumem_pinned_alloc(count, sizeof(float));
    for (size_t i = 0; i < count; i++)
        h[i] = 1.0f;
    CHECK_TRUE(cudaMemcpy(d, h, count * sizeof(float), cudaMemcpyHostToDevice) == cudaSuccess);

    if (std::strcmp(mode, "bare") == 0) {
        capture_begin();
        load4_bare<<<2, 32>>>(d, 1, out);
        cudaError_t e = cudaDeviceSynchronize();
        capture_end();
        std::printf("bare: %s: %s; device output: %zu bytes\n", cudaGetErrorName(e),
                    cudaGetErrorString(e), std::strlen(captured));
        CHECK_TRUE(e == cudaErrorMisalignedAddress);
        CHECK_TRUE(std::strstr(captured, "gpumem") == nullptr);
    } else if (std::strcmp(mode, "assert") == 0) {
        capture_begin();
        load4_checked<<<2, 32>>>(d, 1, out);
        cudaError_t e = cudaDeviceSynchronize();
        capture_end();
        std::printf("assert: %s: %s\n", cudaGetErrorName(e), cudaGetErrorString(e));
        CHECK_TRUE(e == cudaErrorAssert);
        CHECK_TRUE(std::strstr(captured, "align_kernel.cu:") != nullptr);
        CHECK_TRUE(std::strstr(captured, "gpumem: error: misaligned access in load4_checked: p = ") !=
                   nullptr);
        CHECK_TRUE(std::strstr(captured, "is 4 bytes past a 16-byte boundary") != nullptr);
        CHECK_TRUE(std::strstr(captured, "thread (0,0,0) of block (1,0,0)") != nullptr);
        CHECK_TRUE(std::strstr(captured, "stopping the kernel before the access") != nullptr);
    } else {
        // The wrong view is refused on the host: no launch, no fault, the context is fine.
        float4 *bad = GPUMEM_VEC(float4, d, 1);
        CHECK_TRUE(bad == nullptr && seen.code == GPUMEM_EMISALIGNED);
        std::printf("%s\n", seen.message);
        CHECK_TRUE(std::strstr(seen.message, "offset 4 is not a multiple of 16 for a 16-byte "
                                             "vector view of the 16.0 KiB device allocation") !=
                   nullptr);
        CHECK_TRUE(cudaGetLastError() == cudaSuccess);
        float4 *good = GPUMEM_VEC(float4, d, 4);
        CHECK_TRUE(good == (float4 *)(d + 4));
        capture_begin();
        load4_view<<<1, 32>>>(good, out);
        load4_checked<<<2, 32>>>(d, 8, out); // aligned: the check passes silently
        cudaError_t e = cudaDeviceSynchronize();
        capture_end();
        CHECK_TRUE(e == cudaSuccess);
        CHECK_TRUE(captured[0] == '\0');
        float r[32];
        CHECK_TRUE(cudaMemcpy(r, out, sizeof r, cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK_TRUE(r[0] == 4.0f && r[31] == 4.0f);
        CHECK_TRUE(gpumem_free(d) == GPUMEM_OK);
        CHECK_TRUE(gpumem_free(out) == GPUMEM_OK);
        CHECK_TRUE(gpumem_free(h) == GPUMEM_OK);
    }
    return gpu_finish(mode);
}

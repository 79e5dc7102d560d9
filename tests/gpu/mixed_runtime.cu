// A program built by nvcc with its default static CUDA runtime, calling gpumem (which uses
// the driver): memory and streams cross, error state does not. On two GPUs it also runs after
// cudaSetDevice(1). Exits 77 where there is no GPU.
#include <cstdio>
#include <cstring>

#include <gpumem.h>

#include "gpu_check.h"


static int last_code;
static void capture(const gpumem_error *e, void *) { last_code = e->code; }

__global__ void fill(float *p, size_t n, float v)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v + (float)i;
}

__global__ void read_mapped(const float *mapped, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * mapped[i];
}

static void scenario(int device)
{
    std::printf("scenario on device %d\n", device);
    CHECK_TRUE(cudaSetDevice(device) == cudaSuccess);
    cudaStream_t s;
    CHECK_TRUE(cudaStreamCreate(&s) == cudaSuccess);
    const size_t n = 1 << 20;

    // Stream-ordered gpumem memory used by the program's kernel on the program's stream.
    float *d = (float *)gpumem_device_alloc_async(n, sizeof(float), s);
    float *h = (float *)gpumem_pinned_alloc(n, sizeof(float));
    CHECK_TRUE(d && h);
    gpumem_info info;
    CHECK_TRUE(gpumem_query(d, &info) == GPUMEM_OK && info.device == device && info.stream == s);
    fill<<<(n + 255) / 256, 256, 0, s>>>(d, n, 1.0f);
    GPUMEM_CHECK_LAUNCH();
    CHECK_TRUE(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, s) == cudaSuccess);
    CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(h[0] == 1.0f && h[n - 1] == 1.0f + (float)(n - 1));
    CHECK_TRUE(gpumem_free_async(d, s) == GPUMEM_OK);

    // Mapped host memory read by a kernel through gpumem_device_ptr.
    float *m = (float *)gpumem_host_alloc(n, sizeof(float), GPUMEM_HOST_MAPPED);
    float *out = (float *)gpumem_device_alloc(n, sizeof(float));
    CHECK_TRUE(m && out);
    for (size_t i = 0; i < n; i++)
        m[i] = (float)i;
    float *md = (float *)gpumem_device_ptr(m);
    CHECK_TRUE(md != nullptr);
    read_mapped<<<(n + 255) / 256, 256, 0, s>>>(md, out, n);
    GPUMEM_CHECK_LAUNCH();
    CHECK_TRUE(cudaMemcpy(h, out, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK_TRUE(h[12345] == 2.0f * 12345.0f);

    // Managed memory touched by host and device.
    float *u = (float *)gpumem_managed_alloc(n, sizeof(float), GPUMEM_ATTACH_GLOBAL);
    CHECK_TRUE(u != nullptr);
    fill<<<(n + 255) / 256, 256>>>(u, n, 3.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK_TRUE(u[7] == 10.0f);

    // gpumem's out of memory never reaches the program's runtime error state.
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    void *huge = gpumem_device_alloc((size_t)1 << 50, 1); // gpumem-lint: ignore[GM001] refused: NULL
    CHECK_TRUE(huge == nullptr && last_code == GPUMEM_ENOMEM);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(cudaPeekAtLastError() == cudaSuccess);

    // The program's cudaFree releases memory gpumem made? gpumem would not know: instead,
    // gpumem refuses memory the program made with a message that says what CUDA thinks it is.
    void *raw = nullptr;
    CHECK_TRUE(cudaMalloc(&raw, 4096) == cudaSuccess);
    CHECK_TRUE(gpumem_free(raw) == GPUMEM_EFOREIGN); // gpumem-lint: ignore[GM002] refused, as tested
    CHECK_TRUE(std::strstr(gpumem_last_error()->message, "CUDA says it is device memory") != nullptr);
    CHECK_TRUE(cudaFree(raw) == cudaSuccess);

    CHECK_TRUE(gpumem_free(m) == GPUMEM_OK);
    CHECK_TRUE(gpumem_free(out) == GPUMEM_OK);
    CHECK_TRUE(gpumem_free(u) == GPUMEM_OK);
    CHECK_TRUE(gpumem_free(h) == GPUMEM_OK);
    CHECK_TRUE(cudaStreamDestroy(s) == cudaSuccess);
}

static void launch_check(void)
{
    // A bad launch (too many threads per block): first see what the runtime itself says,
    // then check that GPUMEM_CHECK_LAUNCH reports the same error, at the launch.
    fill<<<1, 4096>>>(nullptr, 0, 0.0f);
    cudaError_t reference = cudaGetLastError();
    CHECK_TRUE(reference != cudaSuccess);
    fill<<<1, 4096>>>(nullptr, 0, 0.0f);
    int rc = GPUMEM_CHECK_LAUNCH();
    std::printf("bad launch: runtime says %s; GPUMEM_CHECK_LAUNCH returned %s\n",
                cudaGetErrorName(reference), gpumem_err_name(rc));
    CHECK_TRUE(rc == (int)reference);
    CHECK_TRUE(last_code == GPUMEM_ECUDA);
    CHECK_TRUE(std::strstr(gpumem_last_error()->message, cudaGetErrorName(reference)) != nullptr);
    CHECK_TRUE(std::strstr(gpumem_last_error()->message, "mixed_runtime.cu") != nullptr);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess); // consumed by the check
}

int main()
{
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    gpumem_set_error_handler(capture, nullptr);
    CHECK_TRUE(gpumem_init() == GPUMEM_OK);
    scenario(0);
    if (n > 1)
        scenario(1); // after cudaSetDevice(1): gpumem follows the caller's current device
    else
        std::printf("one GPU: the cudaSetDevice(1) scenario needs two and was not run\n");
    launch_check();
    gpumem_live live;
    gpumem_live_get(&live);
    CHECK_TRUE(live.count[0] == 0);
    return gpu_finish("");
}

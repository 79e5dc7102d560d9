// Ownership on a GPU: every kind, owned by gpumem::unique_ptr (and by a C scope and
// GPUMEM_AUTO, which nvcc supports too), is released when an exception unwinds through the
// frame that owns it. Checked twice: gpumem's registry (gpumem_live_get) and the device
// itself (cudaMemGetInfo before, during and after). Exits 77 without a GPU.
#include <cstdio>
#include <stdexcept>

#include <gpumem.hpp>

#include "gpu_check.h"


static const size_t MiB = size_t(1) << 20;
static const size_t N = 64 * MiB; // floats: 256 MiB per device-side buffer

__global__ void fill(float *p, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = v;
}

static size_t device_free()
{
    CHECK_TRUE(cudaDeviceSynchronize() == cudaSuccess);
    size_t free_bytes = 0, total = 0;
    CHECK_TRUE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
    return free_bytes;
}

static uint64_t live(int kind = 0)
{
    gpumem_live l;
    gpumem_live_get(&l);
    return l.count[kind];
}

struct unwind : std::runtime_error {
    unwind() : std::runtime_error("unwind") {}
};

// Every kind owned by this frame, in use by kernels, then an exception.
static void own_every_kind_then_throw(cudaStream_t s, size_t *free_during)
{
    auto d = gpumem::make_device<float>(N);
    auto m = gpumem::make_managed<float>(N);
    auto p = gpumem::make_pinned<float>(N / 16);
    auto h = gpumem::make_host<float>(N / 16, GPUMEM_HOST_MAPPED);
    auto a = gpumem::make_device_async<float>(N, s);
    fill<<<1024, 256, 0, s>>>(d.get(), N, 1.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    fill<<<1024, 256, 0, s>>>(m.get(), N, 2.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    fill<<<1024, 256, 0, s>>>(a.get(), N, 3.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    fill<<<64, 256, 0, s>>>(static_cast<float *>(gpumem_device_ptr(h.get())), N / 16, 4.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(h.get()[N / 16 - 1] == 4.0f);
    CHECK_TRUE(m.get()[N - 1] == 2.0f);
    p.get()[0] = 5.0f;
    for (int k = GPUMEM_KIND_DEVICE; k <= GPUMEM_KIND_DEVICE_ASYNC; k++) /* the five it makes */
        CHECK_TRUE(live(k) == 1);
    *free_during = device_free();
    throw unwind();
}

// A make_* call fails half-way (more than the device has): what came before is released.
static void fail_half_way(cudaStream_t s, size_t total)
{
    auto d = gpumem::make_device<float>(N);
    auto a = gpumem::make_device_async<float>(N, s);
    auto p = gpumem::make_pinned<float>(N / 16);
    auto too_big = gpumem::make_device<char>(total * 2);
    CHECK_TRUE(false); // not reached
}

// The C owners from a .cu file: a scope and GPUMEM_AUTO, unwound by a C++ exception.
static void c_owners_then_throw(cudaStream_t s)
{
    GPUMEM_SCOPE(scope);
    float *d = gpumem_adopt(scope, static_cast<float *>(gpumem_device_alloc(N, sizeof(float))));
    float *a = gpumem_adopt(scope, static_cast<float *>(
                                       gpumem_device_alloc_async(N, sizeof(float), s)));
    GPUMEM_AUTO void *h = gpumem_host_alloc(N / 16, sizeof(float), GPUMEM_HOST_PORTABLE);
    CHECK_TRUE(d && a && h);
    fill<<<1024, 256, 0, s>>>(d, N, 1.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(live() == 3);
    throw unwind();
}

static void quiet(const gpumem_error *, void *) {}

int main()
{
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    CHECK_TRUE(gpumem_init() == GPUMEM_OK);
    gpumem_set_error_handler(quiet, nullptr);
    cudaStream_t s;
    CHECK_TRUE(cudaStreamCreate(&s) == cudaSuccess);
    size_t free0 = 0, total = 0;
    CHECK_TRUE(cudaMemGetInfo(&free0, &total) == cudaSuccess);

    // A first round loads the kernel and sets up the stream-ordered pool, so that what is
    // measured next is only the memory the owners hold.
    size_t during = 0;
    try {
        own_every_kind_then_throw(s, &during);
    } catch (const unwind &) {
    }
    const size_t slack = 16 * MiB;
    const size_t held = 2 * N * sizeof(float); // device + device-async (managed: on touch)

    size_t before = device_free();
    bool caught = false;
    try {
        own_every_kind_then_throw(s, &during);
    } catch (const unwind &) {
        caught = true;
    }
    size_t after = device_free();
    CHECK_TRUE(caught);
    CHECK_TRUE(live() == 0);
    CHECK_TRUE(during + held <= before + slack);  // the memory was really taken ...
    CHECK_TRUE(after + slack >= before);          // ... and really given back
    std::printf("unique_ptr, every kind: free %zu MiB before, %zu MiB while owned, %zu MiB "
                "after the exception; live in gpumem after: %llu\n",
                before / MiB, during / MiB, after / MiB, (unsigned long long)live());

    caught = false;
    try {
        fail_half_way(s, total);
    } catch (const gpumem::error &e) {
        caught = e.code() == GPUMEM_ENOMEM && e.record().requested == total * 2;
        std::printf("make_device of %zu MiB threw gpumem::error %s\n", total * 2 / MiB,
                    gpumem_err_name(e.code()));
    }
    size_t after2 = device_free();
    CHECK_TRUE(caught);
    CHECK_TRUE(live() == 0);
    CHECK_TRUE(after2 + slack >= before);

    caught = false;
    try {
        c_owners_then_throw(s);
    } catch (const unwind &) {
        caught = true;
    }
    size_t after3 = device_free();
    CHECK_TRUE(caught);
    CHECK_TRUE(live() == 0);
    CHECK_TRUE(after3 + slack >= before);
    std::printf("GPUMEM_SCOPE and GPUMEM_AUTO unwound: free %zu MiB, live %llu\n", after3 / MiB,
                (unsigned long long)live());

    CHECK_TRUE(cudaStreamDestroy(s) == cudaSuccess);
    return gpu_finish("");
}

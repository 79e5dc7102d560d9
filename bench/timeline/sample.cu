// A CUDA program with a peak and a leak, for `gpumem check --trace` on a GPU (h200-run.sh):
// model weights that live throughout, per-step activations, a workspace that makes the peak at
// step 6, and a pinned cache filled every third step and never released. Plain CUDA runtime
// calls: gpumem check watches them in the unmodified program.
#include <cstdio>
#include <cuda_runtime.h>
#include <unistd.h>

#define CHECK(x)                                                                                 \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                      \
                         cudaGetErrorString(e_));                                                \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

static const size_t MiB = size_t(1) << 20;

__global__ void touch(char *p, size_t n)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = 1;
}

__attribute__((noinline)) static cudaError_t load_weights(void **p, size_t bytes)
{
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess)
        touch<<<256, 256>>>(static_cast<char *>(*p), bytes);
    return e;
}

__attribute__((noinline)) static cudaError_t alloc_activations(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes);
}

__attribute__((noinline)) static cudaError_t alloc_workspace(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes);
}

__attribute__((noinline)) static cudaError_t cache_batch(void **p, size_t bytes)
{
    return cudaMallocHost(p, bytes); // never released: the leak
}

int main()
{
    void *weights[4];
    for (int i = 0; i < 4; i++) {
        CHECK(load_weights(&weights[i], 2048 * MiB));
        CHECK(cudaDeviceSynchronize());
    }
    void *staging;
    CHECK(cudaMallocHost(&staging, 256 * MiB));
    for (int step = 0; step < 12; step++) {
        void *act[6];
        for (int i = 0; i < 6; i++)
            CHECK(alloc_activations(&act[i], size_t(512 + 256 * i) * MiB));
        void *ws;
        CHECK(alloc_workspace(&ws, step == 6 ? 24576 * MiB : 2048 * MiB));
        touch<<<1024, 256>>>(static_cast<char *>(ws), 64 * MiB);
        CHECK(cudaDeviceSynchronize());
        usleep(20000);
        CHECK(cudaFree(ws));
        for (int i = 5; i >= 0; i--)
            CHECK(cudaFree(act[i]));
        if (step % 3 == 0) {
            void *cached;
            CHECK(cache_batch(&cached, 64 * MiB));
        }
        usleep(10000);
    }
    CHECK(cudaFreeHost(staging));
    for (int i = 0; i < 4; i++)
        CHECK(cudaFree(weights[i]));
    std::printf("sample: done (4 pinned batches of 64 MiB left allocated on purpose)\n");
    return 0;
}

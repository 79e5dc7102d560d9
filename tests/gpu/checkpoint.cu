// Checkpoints on a GPU: a loop that leaks 1 MiB an iteration shows one site with 100
// allocations; a clean loop shows nothing; a raw cudaMalloc inside the window shows up as
// device memory gpumem cannot attribute. Exits 77 without a GPU.
#include <cstdio>

#include <gpumem.h>

#include "gpu_check.h"


static long long mib(long long b) { return b / (1 << 20); }

int main()
{
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    CHECK_TRUE(gpumem_init() == GPUMEM_OK);
    void *warm = gpumem_device_alloc(1, 1 << 20); // the context and pools exist before we look
    gpumem_free(warm);

    gpumem_checkpoint_t cp = gpumem_checkpoint();
    CHECK_TRUE(cp.device == 0 && cp.device_total > 0);
    void *leaked[100];
    for (int i = 0; i < 100; i++)
        leaked[i] = gpumem_device_alloc(1, 1 << 20);
    gpumem_checkpoint_diff_t d;
    CHECK_TRUE(gpumem_checkpoint_diff(&cp, stdout, &d) == GPUMEM_OK);
    CHECK_TRUE(d.count == 100 && d.sites == 1 && d.bytes == 100ull << 20);
    CHECK_TRUE(d.device_known == 1);
    CHECK_TRUE(d.gpumem_device == 100ll << 20);
    // CUDA reserves device memory in chunks: allow a few MiB either way.
    CHECK_TRUE(mib(d.device_used) >= 96 && mib(d.device_used) <= 110);
    CHECK_TRUE(mib(d.unattributed) >= -4 && mib(d.unattributed) <= 10);
    for (int i = 0; i < 100; i++)
        gpumem_free(leaked[i]);

    cp = gpumem_checkpoint();
    for (int i = 0; i < 100; i++)
        gpumem_free(gpumem_device_alloc(1, 1 << 20));
    CHECK_TRUE(gpumem_checkpoint_diff(&cp, stdout, &d) == GPUMEM_OK);
    CHECK_TRUE(d.count == 0 && d.sites == 0);
    CHECK_TRUE(mib(d.device_used) >= -4 && mib(d.device_used) <= 4);

    cp = gpumem_checkpoint();
    void *raw = nullptr;
    CHECK_TRUE(cudaMalloc(&raw, 64 << 20) == cudaSuccess); // not through gpumem
    CHECK_TRUE(gpumem_checkpoint_diff(&cp, stdout, &d) == GPUMEM_OK);
    CHECK_TRUE(d.count == 0 && d.gpumem_device == 0);
    CHECK_TRUE(mib(d.unattributed) >= 62 && mib(d.unattributed) <= 70);
    std::printf("raw cudaMalloc of 64 MiB: used %+lld MiB, unattributed %+lld MiB\n",
                mib(d.device_used), mib(d.unattributed));
    CHECK_TRUE(cudaFree(raw) == cudaSuccess);
    return gpu_finish("");
}

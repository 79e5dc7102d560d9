// Portable pinned memory (GPUMEM_HOST_PORTABLE) is usable from every device: one buffer,
// allocated while device 0 is current, is copied to device 0 and to device 1, each with a
// synchronous and a stream-ordered copy, and read back through a kernel's result.
// Exits 77 without a GPU, and with a message on a machine with one GPU (it needs two).
#include <cstdio>

#include <gpumem.h>

#include "gpu_check.h"


__global__ void twice(const float *in, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2.0f * in[i];
}

int main()
{
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    if (n < 2) {
        std::printf("SKIP: one GPU here; the portable copy to two GPUs needs two (run it on a "
                    "machine with two)\n");
        return 77;
    }
    const size_t count = 1 << 22;
    CHECK_TRUE(cudaSetDevice(0) == cudaSuccess);
    float *src = (float *)gpumem_host_alloc(count, sizeof(float), GPUMEM_HOST_PORTABLE);
    float *back = (float *)gpumem_host_alloc(count, sizeof(float), GPUMEM_HOST_PORTABLE);
    CHECK_TRUE(src && back);
    if (!src || !back) {
        gpumem_free(src); /* the one that was allocated, if any */
        gpumem_free(back);
        return 1;
    }
    for (size_t i = 0; i < count; i++)
        src[i] = (float)i;
    gpumem_info info;
    CHECK_TRUE(gpumem_query(src, &info) == GPUMEM_OK && info.device == 0 &&
               (info.flags & GPUMEM_HOST_PORTABLE));
    gpumem_describe(src, stdout);
    for (int dev = 0; dev < 2; dev++) {
        CHECK_TRUE(cudaSetDevice(dev) == cudaSuccess);
        cudaStream_t s;
        CHECK_TRUE(cudaStreamCreate(&s) == cudaSuccess);
        float *a = (float *)gpumem_device_alloc(count, sizeof(float));
        float *b = (float *)gpumem_device_alloc(count, sizeof(float));
        CHECK_TRUE(a && b);
        CHECK_TRUE(gpumem_query(a, &info) == GPUMEM_OK && info.device == dev);
        CHECK_TRUE(cudaMemcpy(a, src, count * sizeof(float), cudaMemcpyHostToDevice) ==
                   cudaSuccess);
        twice<<<(unsigned)((count + 255) / 256), 256, 0, s>>>(a, b, count);
        CHECK_TRUE(cudaGetLastError() == cudaSuccess);
        CHECK_TRUE(cudaMemcpyAsync(back, b, count * sizeof(float), cudaMemcpyDeviceToHost, s) ==
                   cudaSuccess);
        CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
        CHECK_TRUE(back[0] == 0.0f && back[12345] == 24690.0f &&
                   back[count - 1] == 2.0f * (float)(count - 1));
        // Stream-ordered copy from the portable buffer into this device.
        CHECK_TRUE(cudaMemsetAsync(a, 0, count * sizeof(float), s) == cudaSuccess);
        CHECK_TRUE(cudaMemcpyAsync(a, src, count * sizeof(float), cudaMemcpyHostToDevice, s) ==
                   cudaSuccess);
        CHECK_TRUE(cudaMemcpyAsync(back, a, count * sizeof(float), cudaMemcpyDeviceToHost, s) ==
                   cudaSuccess);
        CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
        CHECK_TRUE(back[777] == 777.0f);
        std::printf("device %d: copied %zu MiB from the portable buffer and back: %s\n", dev,
                    count * sizeof(float) >> 20, failures ? "FAIL" : "ok");
        CHECK_TRUE(gpumem_free(a) == GPUMEM_OK && gpumem_free(b) == GPUMEM_OK);
        CHECK_TRUE(cudaStreamDestroy(s) == cudaSuccess);
    }
    CHECK_TRUE(gpumem_free(src) == GPUMEM_OK && gpumem_free(back) == GPUMEM_OK);
    return gpu_finish("");
}

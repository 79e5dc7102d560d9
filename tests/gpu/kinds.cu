// The rules of each kind on a GPU: mapped host memory read and written by a kernel through
// gpumem_device_ptr; write-combined memory written by the host and read by a kernel; managed
// memory advised, prefetched to the device for a kernel and back to the host; and every
// kind's alignment (the smallest power of two seen, for docs/memory-kinds.md).
// Exits 77 without a GPU.
#include <cstdio>
#include <cstring>

#include <gpumem.h>

#include "gpu_check.h"


static int last_code;
static void capture(const gpumem_error *e, void *) { last_code = e->code; }

__global__ void scale(const float *in, float *out, size_t n, float k)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = k * in[i];
}

static unsigned blocks(size_t n) { return (unsigned)((n + 255) / 256); }

static void mapped(cudaStream_t s)
{
    const size_t n = 1 << 20;
    float *m = (float *)gpumem_host_alloc(n, sizeof(float), GPUMEM_HOST_MAPPED);
    float *r = (float *)gpumem_host_alloc(n, sizeof(float), GPUMEM_HOST_MAPPED);
    float *plain = (float *)gpumem_pinned_alloc(n, sizeof(float));
    CHECK_TRUE(m && r && plain);
    for (size_t i = 0; i < n; i++)
        m[i] = (float)i;
    float *md = (float *)gpumem_device_ptr(m), *rd = (float *)gpumem_device_ptr(r);
    CHECK_TRUE(md && rd);
    // The kernel reads and writes host memory directly (zero-copy).
    scale<<<blocks(n), 256, 0, s>>>(md, rd, n, 3.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(r[0] == 0.0f && r[n - 1] == 3.0f * (float)(n - 1));
    // An interior pointer maps to the same offset; unmapped memory is refused.
    CHECK_TRUE(gpumem_device_ptr(m + 100) == (void *)(md + 100));
    CHECK_TRUE(gpumem_device_ptr(plain) == nullptr && last_code == GPUMEM_EKIND);
    std::printf("mapped: kernel read and wrote host memory through gpumem_device_ptr: %s\n",
                failures ? "FAIL" : "ok");
    CHECK_TRUE(gpumem_free(m) == GPUMEM_OK && gpumem_free(r) == GPUMEM_OK &&
               gpumem_free(plain) == GPUMEM_OK);
}

static void write_combined(cudaStream_t s)
{
    const size_t n = 1 << 20;
    float *wc = (float *)gpumem_host_alloc(n, sizeof(float),
                                           GPUMEM_HOST_WRITE_COMBINED | GPUMEM_HOST_MAPPED);
    float *d = (float *)gpumem_device_alloc(n, sizeof(float));
    float *back = (float *)gpumem_pinned_alloc(n, sizeof(float));
    CHECK_TRUE(wc && d && back);
    gpumem_info info;
    CHECK_TRUE(gpumem_query(wc, &info) == GPUMEM_OK &&
               (info.flags & GPUMEM_HOST_WRITE_COMBINED));
    for (size_t i = 0; i < n; i++) // the host writes (its intended use)
        wc[i] = (float)(i % 1000);
    CHECK_TRUE(cudaMemcpyAsync(d, wc, n * sizeof(float), cudaMemcpyHostToDevice, s) ==
               cudaSuccess);
    scale<<<blocks(n), 256, 0, s>>>((const float *)gpumem_device_ptr(wc), d, n, 2.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(cudaMemcpyAsync(back, d, n * sizeof(float), cudaMemcpyDeviceToHost, s) ==
               cudaSuccess);
    CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(back[999] == 1998.0f && back[1000] == 0.0f);
    std::printf("write-combined: host wrote, copy and kernel read: %s\n", failures ? "FAIL" : "ok");
    gpumem_describe(wc, stdout);
    CHECK_TRUE(gpumem_free(wc) == GPUMEM_OK && gpumem_free(d) == GPUMEM_OK &&
               gpumem_free(back) == GPUMEM_OK);
}

static void managed(cudaStream_t s)
{
    const size_t n = 1 << 22;
    float *u = (float *)gpumem_managed_alloc(n, sizeof(float), GPUMEM_ATTACH_GLOBAL);
    float *v = (float *)gpumem_managed_alloc(n, sizeof(float), GPUMEM_ATTACH_GLOBAL);
    CHECK_TRUE(u && v);
    for (size_t i = 0; i < n; i++)
        u[i] = 1.0f;
    CHECK_TRUE(gpumem_advise(u, n * sizeof(float), cudaMemAdviseSetReadMostly, 0) == GPUMEM_OK);
    CHECK_TRUE(gpumem_advise(v, n * sizeof(float), cudaMemAdviseSetPreferredLocation, 0) ==
               GPUMEM_OK);
    CHECK_TRUE(gpumem_advise(v, n * sizeof(float), cudaMemAdviseSetAccessedBy, GPUMEM_HOST) ==
               GPUMEM_OK);
    CHECK_TRUE(gpumem_prefetch(u, n * sizeof(float), 0, s) == GPUMEM_OK);
    CHECK_TRUE(gpumem_prefetch(v, n * sizeof(float), 0, s) == GPUMEM_OK);
    scale<<<blocks(n), 256, 0, s>>>(u, v, n, 5.0f);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    CHECK_TRUE(gpumem_prefetch(v, n * sizeof(float), GPUMEM_HOST, s) == GPUMEM_OK);
    CHECK_TRUE(cudaStreamSynchronize(s) == cudaSuccess);
    CHECK_TRUE(v[0] == 5.0f && v[n - 1] == 5.0f);
    // Past the end and the wrong kind are refused before CUDA is called.
    CHECK_TRUE(gpumem_prefetch(u + 1, n * sizeof(float), 0, s) == GPUMEM_EINVAL);
    CHECK_TRUE(cudaGetLastError() == cudaSuccess);
    std::printf("managed: advised, prefetched to device 0 and back, kernel result right: %s\n",
                failures ? "FAIL" : "ok");
    gpumem_describe(u + 10, stdout);
    CHECK_TRUE(gpumem_free(u) == GPUMEM_OK && gpumem_free(v) == GPUMEM_OK);
}

// The largest power of two dividing every pointer of a kind, over small and large sizes.
static void alignment()
{
    static const size_t sizes[] = {1, 8, 100, 513, 4097, 65536, 1 << 20, 3 << 20};
    const int nk = 7;
    static const char *names[] = {"device", "managed", "pinned", "host mapped",
                                  "host write-combined", "host portable", "device-async"};
    for (int k = 0; k < nk; k++) {
        uintptr_t all = 0;
        void *p[8];
        for (int i = 0; i < 8; i++) {
            switch (k) {
            case 0: p[i] = gpumem_device_alloc(sizes[i], 1); break;
            case 1: p[i] = gpumem_managed_alloc(sizes[i], 1, 0); break;
            case 2: p[i] = gpumem_pinned_alloc(sizes[i], 1); break;
            case 3: p[i] = gpumem_host_alloc(sizes[i], 1, GPUMEM_HOST_MAPPED); break;
            case 4: p[i] = gpumem_host_alloc(sizes[i], 1, GPUMEM_HOST_WRITE_COMBINED); break;
            case 5: p[i] = gpumem_host_alloc(sizes[i], 1, GPUMEM_HOST_PORTABLE); break;
            default: p[i] = gpumem_device_alloc_async(sizes[i], 1, nullptr); break;
            }
            CHECK_TRUE(p[i] && gpumem_is_aligned(p[i], GPUMEM_ALIGNMENT));
            all |= (uintptr_t)p[i];
        }
        uintptr_t small = 0;
        for (int i = 0; i < 4; i++)
            small |= (uintptr_t)p[i];
        std::printf("alignment: %-20s all sizes: multiple of %lu; sizes <= 513 B: multiple of "
                    "%lu\n", names[k], (unsigned long)(all & (~all + 1)),
                    (unsigned long)(small & (~small + 1)));
        for (int i = 0; i < 8; i++)
            gpumem_free(p[i]);
    }
}

int main()
{
    int n = gpu_device_count();
    if (n == 0)
        return 77;
    gpumem_set_error_handler(capture, nullptr);
    CHECK_TRUE(gpumem_init() == GPUMEM_OK);
    cudaStream_t s;
    CHECK_TRUE(cudaStreamCreate(&s) == cudaSuccess);
    mapped(s);
    write_combined(s);
    managed(s);
    alignment();
    CHECK_TRUE(cudaStreamDestroy(s) == cudaSuccess);
    gpumem_live live;
    gpumem_live_get(&live);
    CHECK_TRUE(live.count[0] == 0);
    return gpu_finish("");
}

// bench_kinds: what the memory kinds' rules cost, on the GPU at hand.
//
//   managed, first touch  a kernel reads 1 GiB of managed memory that lives on the host: pages
//                         migrate on the kernel's faults;
//   managed, prefetched   gpumem_prefetch to the device, then the same kernel (time of both);
//   pinned copy + kernel  reference: cudaMemcpy from pinned memory, then the kernel;
//   host writes / reads   memset and a summing loop over 256 MiB of write-combined and of
//                         ordinary pinned memory (write-combined is for the host to write:
//                         reads bypass the cache). In a virtual machine the two may not
//                         differ; the benchmark reports what it measures.
//
// Each row is the median of 5 runs; host wall clock. Prints a markdown table and
// `RESULT key=value` lines. Exits 0 with a message on a machine without a GPU.
// Usage: bench_kinds [--quick]   (--quick: 256 MiB of managed memory, 64 MiB of host memory)
#include <cstdio>
#include <cstring>

#include <gpumem.h>

#include "bench_util.h"

#define CK(x)                                                                                    \
    do {                                                                                         \
        if (GPUMEM_CHECK(x) != 0)                                                                \
            return 1;                                                                            \
    } while (0)

__global__ void sum_kernel(const float4 *in, size_t n4, float *out)
{
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        float4 v = in[i];
        acc += v.x + v.y + v.z + v.w;
    }
    if (acc == -1.0f) // never: keeps the loads
        *out = acc;
}

enum { RUNS = 5 };

static double gbps(size_t bytes, double ns) { return (double)bytes / ns; }

static void row(const char *key, const char *label, size_t bytes, double *ns)
{
    double med = bench_median(ns, RUNS);
    std::printf("| %-40s | %8.2f ms | %7.1f GB/s |\n", label, med / 1e6, gbps(bytes, med));
    std::fprintf(stderr, "RESULT bench=kinds case=%s bytes=%zu median_ns=%.0f gbps=%.2f\n", key,
                 bytes, med, gbps(bytes, med));
}

static int run_kernel(const float *p, size_t bytes, float *out, cudaStream_t s)
{
    sum_kernel<<<132 * 8, 256, 0, s>>>((const float4 *)p, bytes / 16, out);
    return (int)cudaGetLastError();
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        std::printf("bench_kinds: no CUDA device here; nothing measured\n");
        return 0;
    }
    gpumem_device_info dev;
    if (gpumem_device_get(0, &dev) != GPUMEM_OK)
        return 1;
    char cpu[256];
    std::printf("bench_kinds on %s, CPU %s (%ld cores)\n\n", dev.name,
                bench_cpu_model(cpu, sizeof cpu), bench_cores());
    std::printf("| case | median | rate |\n|---|---|---|\n");

    const size_t mbytes = quick ? (size_t)256 << 20 : (size_t)1 << 30;
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    float *out = (float *)gpumem_device_alloc(1, sizeof(float));
    float *m = (float *)gpumem_managed_alloc(mbytes, 1, GPUMEM_ATTACH_GLOBAL);
    float *pin = (float *)gpumem_pinned_alloc(mbytes, 1);
    float *d = (float *)gpumem_device_alloc(mbytes, 1);
    if (!out || !m || !pin || !d)
        return 1;
    std::memset(pin, 1, mbytes);
    double first[RUNS], pre[RUNS], pre_only[RUNS], copy[RUNS];
    for (int r = 0; r < RUNS; r++) {
        // Pages on the host: the host writes them (and a prefetch home makes sure).
        CK(gpumem_prefetch(m, mbytes, GPUMEM_HOST, s));
        CK(cudaStreamSynchronize(s));
        std::memset(m, 1, mbytes);
        uint64_t t0 = bench_now_ns();
        CK(run_kernel(m, mbytes, out, s));
        CK(cudaStreamSynchronize(s));
        first[r] = (double)(bench_now_ns() - t0);

        CK(gpumem_prefetch(m, mbytes, GPUMEM_HOST, s));
        CK(cudaStreamSynchronize(s));
        std::memset(m, 1, mbytes);
        t0 = bench_now_ns();
        CK(gpumem_prefetch(m, mbytes, 0, s));
        CK(cudaStreamSynchronize(s));
        uint64_t t1 = bench_now_ns();
        CK(run_kernel(m, mbytes, out, s));
        CK(cudaStreamSynchronize(s));
        pre[r] = (double)(bench_now_ns() - t0);
        pre_only[r] = (double)(t1 - t0);

        t0 = bench_now_ns();
        CK(cudaMemcpyAsync(d, pin, mbytes, cudaMemcpyHostToDevice, s));
        CK(run_kernel(d, mbytes, out, s));
        CK(cudaStreamSynchronize(s));
        copy[r] = (double)(bench_now_ns() - t0);
    }
    row("managed_first_touch", "managed, kernel first touch (faults)", mbytes, first);
    row("managed_prefetch_kernel", "managed, gpumem_prefetch + kernel", mbytes, pre);
    row("managed_prefetch_only", "managed, gpumem_prefetch alone", mbytes, pre_only);
    row("pinned_copy_kernel", "pinned, cudaMemcpy + kernel", mbytes, copy);
    gpumem_free(m);
    gpumem_free(d);

    // Host access to write-combined against ordinary pinned memory.
    const size_t hbytes = quick ? (size_t)64 << 20 : (size_t)256 << 20;
    float *wc = (float *)gpumem_host_alloc(hbytes, 1, GPUMEM_HOST_WRITE_COMBINED);
    if (!wc)
        return 1;
    float *kinds[2] = {pin, wc};
    const char *names[2] = {"pinned", "write-combined"};
    for (int k = 0; k < 2; k++) {
        double w[RUNS], rd[RUNS];
        volatile uint64_t sink = 0;
        for (int r = 0; r < RUNS; r++) {
            uint64_t t0 = bench_now_ns();
            std::memset(kinds[k], r + 1, hbytes);
            w[r] = (double)(bench_now_ns() - t0);
            const uint64_t *q = (const uint64_t *)kinds[k];
            uint64_t acc = 0;
            t0 = bench_now_ns();
            for (size_t i = 0; i < hbytes / 8; i++)
                acc += q[i];
            rd[r] = (double)(bench_now_ns() - t0);
            sink = sink + acc;
        }
        char key[64], label[96];
        std::snprintf(key, sizeof key, "host_write_%s", k ? "wc" : "pinned");
        std::snprintf(label, sizeof label, "host writes (memset), %s", names[k]);
        row(key, label, hbytes, w);
        std::snprintf(key, sizeof key, "host_read_%s", k ? "wc" : "pinned");
        std::snprintf(label, sizeof label, "host reads (sum), %s", names[k]);
        row(key, label, hbytes, rd);
    }
    gpumem_free(wc);
    gpumem_free(pin);
    gpumem_free(out);
    CK(cudaStreamDestroy(s));
    return 0;
}

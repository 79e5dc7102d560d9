// No findings expected: every allocation call of the runtime API, each released with its own
// release call, with kernels and copies in between. Releasing NULL is not a bug either.
#include <stdlib.h>
#include <string.h>

#include "check_prog.h"

__global__ void add(float *dst, const float *src, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        dst[i] += src[i];
}

static unsigned blocks(size_t n) { return (unsigned)((n + 255) / 256); }

int main(void)
{
    prog_init();
    const size_t n = 1 << 16, bytes = n * sizeof(float);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    float *d = NULL, *m = NULL, *pinned = NULL, *host = NULL, *hostd = NULL, *wc = NULL;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMallocManaged(&m, bytes));
    CHECK(cudaMallocHost(&pinned, bytes));
    CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK(cudaHostAlloc(&wc, bytes, cudaHostAllocWriteCombined));
    CHECK(cudaHostGetDevicePointer(&hostd, host, 0));
    for (size_t i = 0; i < n; i++) {
        pinned[i] = 1.0f;
        m[i] = 2.0f;
        host[i] = 3.0f;
        wc[i] = 4.0f;
    }
    CHECK(cudaMemcpy(d, pinned, bytes, cudaMemcpyHostToDevice));
    add<<<blocks(n), 256>>>(d, m, n);
    add<<<blocks(n), 256>>>(d, hostd, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(pinned, d, bytes, cudaMemcpyDeviceToHost));
    if (pinned[n - 1] != 6.0f) {
        fprintf(stderr, "clean_runtime: expected 6, got %g\n", pinned[n - 1]);
        return 1;
    }

    // Pitched and 3D.
    float *pitched = NULL;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&pitched, &pitch, 500 * sizeof(float), 100));
    CHECK(cudaMemset2D(pitched, pitch, 0, 500 * sizeof(float), 100));
    cudaPitchedPtr p3;
    cudaExtent e = make_cudaExtent(64 * sizeof(float), 32, 16);
    CHECK(cudaMalloc3D(&p3, e));
    CHECK(cudaMemset3D(p3, 0, e));

    // Registered host memory: page-locked in place, unregistered before the C library frees it.
    char *reg = (char *)aligned_alloc(4096, 1 << 16);
    if (!reg) {
        fprintf(stderr, "aligned_alloc failed\n");
        return 1;
    }
    memset(reg, 5, 1 << 16);
    CHECK(cudaHostRegister(reg, 1 << 16, cudaHostRegisterDefault));
    CHECK(cudaMemcpy(d, reg, 1 << 16, cudaMemcpyHostToDevice));

    // Stream-ordered: the default pool and a pool of our own.
    float *async = NULL, *frompool = NULL;
    CHECK(cudaMallocAsync(&async, bytes, s));
    CHECK(cudaMemcpyAsync(async, d, bytes, cudaMemcpyDeviceToDevice, s));
    cudaMemPool_t pool;
    cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    CHECK(cudaMemPoolCreate(&pool, &props));
    CHECK(cudaMallocFromPoolAsync(&frompool, bytes, pool, s));
    CHECK(cudaMemcpyAsync(frompool, async, bytes, cudaMemcpyDeviceToDevice, s));
    CHECK(cudaFreeAsync(async, s));
    CHECK(cudaFreeAsync(frompool, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemPoolDestroy(pool));

    CHECK(cudaHostUnregister(reg));
    free(reg);
    CHECK(cudaFree(p3.ptr));
    CHECK(cudaFree(pitched));
    CHECK(cudaFreeHost(wc));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(m));
    CHECK(cudaFree(d));
    CHECK(cudaFree(NULL));
    CHECK(cudaFreeHost(NULL));
    CHECK(cudaStreamDestroy(s));
    prog_done("clean_runtime");
    return 0;
}

/* probe_hostreg: what registering pageable memory with the driver (cuMemHostRegister) costs,
 * what copies from it reach, and what the driver does with a registered range whose memory is
 * released behind its back. It decides how gpumem's registration cache learns that a buffer
 * is gone (docs/copies.md): if the driver noticed the release, a lookup could check validity;
 * if it does not, only watching the program's releases is safe.
 *
 * Part 1, cost: for 32 MiB, 256 MiB and 1 GiB of touched malloc memory, the time of
 * cuMemHostRegister and of cuMemHostUnregister, and ten synchronous copies each way from and to
 * the registered buffer (min, median, max GB/s) next to cuMemAllocHost memory.
 *
 * Part 2, release behind the driver's back, three ways: munmap then mmap at the same address;
 * free then malloc of the same size (glibc's free of a large block is an internal munmap);
 * madvise(MADV_DONTNEED). After each: what cuPointerGetAttribute says of the address (memory
 * type, buffer id), whether a copy from the new memory to the device carries the new bytes or
 * the old ones, whether a copy into it lands where the program reads, and what
 * cuMemHostUnregister then returns.
 *
 * Usage: probe_hostreg. Prints `RESULT ...` lines. Needs a GPU (exits 0 with a note without). */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bench_util.h"

#define RUNS 10

static const char *err_name(CUresult r)
{
    const char *s = NULL;
    cuGetErrorName(r, &s);
    return s ? s : "?";
}

static double copy_gbps(CUdeviceptr dst, CUdeviceptr src, size_t n, double *mn, double *mx)
{
    double v[RUNS];
    for (int k = 0; k < RUNS; k++) {
        uint64_t t0 = bench_now_ns();
        CUresult r = cuMemcpy(dst, src, n);
        if (r != CUDA_SUCCESS) {
            printf("RESULT probe=hostreg error=cuMemcpy:%s\n", err_name(r));
            return 0.0;
        }
        v[k] = (double)n / (double)(bench_now_ns() - t0);
    }
    double med = bench_median(v, RUNS);
    *mn = v[0];
    *mx = v[RUNS - 1];
    return med;
}

/* Ten copies from src to dst; one RESULT line with their min, median and max GB/s. */
static void report_copy(CUdeviceptr dst, CUdeviceptr src, size_t n, const char *path,
                        const char *dir)
{
    double mn = 0, mx = 0, med = copy_gbps(dst, src, n, &mn, &mx);
    printf("RESULT probe=hostreg bytes=%zu path=%s dir=%s min_gbps=%.3f median_gbps=%.3f "
           "max_gbps=%.3f\n", n, path, dir, mn, med, mx);
}

static void cost(CUdeviceptr dev, void *pinned, size_t n)
{
    char *h = malloc(n);
    if (!h) {
        printf("RESULT probe=hostreg bytes=%zu malloc=failed\n", n);
        return;
    }
    memset(h, 1, n);
    uint64_t t0 = bench_now_ns();
    CUresult r = cuMemHostRegister(h, n, 0);
    double reg_ms = (double)(bench_now_ns() - t0) / 1e6;
    if (r != CUDA_SUCCESS) {
        printf("RESULT probe=hostreg bytes=%zu register=%s\n", n, err_name(r));
        free(h);
        return;
    }
    CUdeviceptr hp = (CUdeviceptr)(uintptr_t)h, pp = (CUdeviceptr)(uintptr_t)pinned;
    report_copy(dev, hp, n, "registered", "h2d");
    report_copy(hp, dev, n, "registered", "d2h");
    report_copy(dev, pp, n, "pinned", "h2d");
    report_copy(pp, dev, n, "pinned", "d2h");
    t0 = bench_now_ns();
    r = cuMemHostUnregister(h);
    double unreg_ms = (double)(bench_now_ns() - t0) / 1e6;
    printf("RESULT probe=hostreg bytes=%zu register_ms=%.3f unregister_ms=%.3f unregister=%s\n", n,
           reg_ms, unreg_ms, err_name(r));
    free(h);
}

static void attrs(const char *when, const char *how, uintptr_t p)
{
    unsigned type = 0;
    unsigned long long id = 0;
    CUresult a = cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                       (CUdeviceptr)p);
    CUresult b = cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                       (CUdeviceptr)p);
    printf("RESULT probe=release how=%s when=%s memory_type=%s:%u buffer_id=%s:%llu\n", how, when,
           err_name(a), a == CUDA_SUCCESS ? type : 0u, err_name(b), b == CUDA_SUCCESS ? id : 0ull);
}

/* Copies n bytes from p to the device and back into a pinned buffer, and says which bytes
 * the device got (the new ones, 0x55, or the old ones, 0xAA); then fills the device with
 * 0x77, copies it into p, and says whether p shows it. */
static void check_copies(const char *how, unsigned char *p, size_t n, CUdeviceptr dev,
                         unsigned char *back)
{
    memset(back, 0, n);
    CUresult r = cuMemcpy(dev, (CUdeviceptr)(uintptr_t)p, n);
    CUresult r2 = cuMemcpy((CUdeviceptr)(uintptr_t)back, dev, n);
    size_t fresh = 0, stale = 0;
    for (size_t i = 0; i < n; i++) {
        fresh += back[i] == 0x55;
        stale += back[i] == 0xAA;
    }
    printf("RESULT probe=release how=%s h2d=%s/%s device_got_new=%zu device_got_old=%zu of=%zu\n",
           how, err_name(r), err_name(r2), fresh, stale, n);
    cuMemsetD8(dev, 0x77, n);
    cuCtxSynchronize();
    r = cuMemcpy((CUdeviceptr)(uintptr_t)p, dev, n);
    size_t seen = 0;
    for (size_t i = 0; i < n; i++)
        seen += p[i] == 0x77;
    printf("RESULT probe=release how=%s d2h=%s program_sees_copy=%zu of=%zu\n", how, err_name(r),
           seen, n);
}

static void release_case(const char *how, size_t n, CUdeviceptr dev, unsigned char *back)
{
    unsigned char *p;
    if (strcmp(how, "free_malloc") == 0)
        p = malloc(n);
    else
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 0xAA, n);
    CUresult r = cuMemHostRegister(p, n, 0);
    printf("RESULT probe=release how=%s register=%s\n", how, err_name(r));
    uintptr_t pa = (uintptr_t)p; /* the address, kept apart from the pointer released below */
    attrs("registered", how, pa);
    unsigned char *q = p;
    if (strcmp(how, "munmap_mmap") == 0) {
        munmap(p, n);
        attrs("released", how, pa);
        q = mmap((void *)pa, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                 -1, 0);
    } else if (strcmp(how, "free_malloc") == 0) {
        free(p);
        attrs("released", how, pa);
        q = malloc(n);
    } else {
        madvise(p, n, MADV_DONTNEED);
        attrs("released", how, pa);
    }
    printf("RESULT probe=release how=%s same_address=%s\n", how,
           (uintptr_t)q == pa ? "yes" : "no");
    if ((uintptr_t)q != pa || q == MAP_FAILED)
        return;
    memset(q, 0x55, n);
    attrs("reused", how, pa);
    check_copies(how, q, n, dev, back);
    r = cuMemHostUnregister(q);
    printf("RESULT probe=release how=%s unregister_after=%s\n", how, err_name(r));
    attrs("unregistered", how, pa);
    r = cuMemHostRegister(q, n, 0);
    printf("RESULT probe=release how=%s register_again=%s\n", how, err_name(r));
    if (r == CUDA_SUCCESS)
        cuMemHostUnregister(q);
}

int main(void)
{
    CUdevice d;
    CUcontext c;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&d, 0) != CUDA_SUCCESS ||
        cuDevicePrimaryCtxRetain(&c, d) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS) {
        printf("probe_hostreg: no usable CUDA device here; nothing measured\n");
        return 0;
    }
    size_t max = (size_t)1 << 30;
    CUdeviceptr dev;
    void *pinned;
    if (cuMemAlloc(&dev, max) != CUDA_SUCCESS || cuMemAllocHost(&pinned, max) != CUDA_SUCCESS) {
        printf("probe_hostreg: cannot allocate 1 GiB\n");
        return 1;
    }
    memset(pinned, 2, max);
    static const size_t sizes[] = {(size_t)32 << 20, (size_t)256 << 20, (size_t)1 << 30};
    for (int i = 0; i < 3; i++)
        cost(dev, pinned, sizes[i]);
    size_t n = (size_t)64 << 20;
    release_case("munmap_mmap", n, dev, pinned);
    release_case("free_malloc", n, dev, pinned);
    release_case("madvise_dontneed", n, dev, pinned);
    return 0;
}

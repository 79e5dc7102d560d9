// expect: leak cudaMalloc device bytes=262144 at=mapIndicesToBuckets@alloc,main@map
// expect: leak cudaMallocHost pinned bytes=16384 at=stageCounts@stage,main@counts
//
// Leaks through helpers that keep their own frames (noinline, as a helper in another file or
// a large one would be): the device buckets allocated in mapIndicesToBuckets and the pinned
// staging buffer of stageCounts, both called from main, are never released. Each leak's stack
// must name the helper at its allocation line and main at the call of the helper.
#include <string.h>

#include "check_prog.h"

__global__ void bucket(const int *idx, int *buckets, int n, int nbuckets)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(&buckets[idx[i] % nbuckets], 1);
}

__attribute__((noinline)) static int *mapIndicesToBuckets(const int *idx, int n, int nbuckets)
{
    int *buckets = NULL;
    CHECK(cudaMalloc(&buckets, nbuckets * sizeof(int))); // @alloc
    CHECK(cudaMemset(buckets, 0, nbuckets * sizeof(int)));
    bucket<<<(n + 255) / 256, 256>>>(idx, buckets, n, nbuckets);
    CHECK(cudaGetLastError());
    return buckets;
}

__attribute__((noinline)) static int *stageCounts(const int *buckets, int nbuckets)
{
    int *staged = NULL;
    CHECK(cudaMallocHost(&staged, nbuckets * sizeof(int))); // @stage
    CHECK(cudaMemcpy(staged, buckets, nbuckets * sizeof(int), cudaMemcpyDeviceToHost));
    return staged;
}

int main(void)
{
    prog_init();
    const int n = 1 << 16;
    int *idx = NULL;
    CHECK(cudaMalloc(&idx, n * sizeof(int)));
    CHECK(cudaMemset(idx, 0, n * sizeof(int)));
    int *buckets = mapIndicesToBuckets(idx, n, 65536); // @map
    int *counts = stageCounts(buckets, 4096); // @counts
    printf("bucket 0 holds %d of %d\n", counts[0], n);
    CHECK(cudaFree(idx));
    prog_done("leak_helper");
    return 0;
}

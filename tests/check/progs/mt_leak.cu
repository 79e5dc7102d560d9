// expect: leak cudaMalloc device bytes=20480 at=worker@alloc
//
// Eight threads allocate and release device and pinned memory at the same time, 200 rounds
// each; thread 5 keeps one device block of 20480 bytes (5 pages: 4096 * (1 + (199 + 5) % 8))
// in its last round and never releases it. Exactly that block must be reported.
#include <thread>
#include <vector>

#include "check_prog.h"

static const int threads = 8, rounds = 200, leaker = 5;
static void *kept;

__global__ void touch(char *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = (char)i;
}

static void worker(int id, cudaStream_t s)
{
    CHECK(cudaSetDevice(0));
    for (int r = 0; r < rounds; r++) {
        size_t bytes = 4096 * (size_t)(1 + (r + id) % 8);
        char *d = NULL, *h = NULL;
        CHECK(cudaMalloc(&d, bytes)); // @alloc
        CHECK(cudaMallocHost(&h, 512));
        touch<<<(unsigned)((bytes + 255) / 256), 256, 0, s>>>(d, bytes);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(h, d, 512, cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaFreeHost(h));
        if (id == leaker && r == rounds - 1) {
            kept = d;
            continue;
        }
        CHECK(cudaFree(d));
    }
}

int main(void)
{
    prog_init();
    std::vector<cudaStream_t> streams(threads);
    for (auto &s : streams)
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; i++)
        pool.emplace_back(worker, i, streams[i]);
    for (auto &t : pool)
        t.join();
    for (auto &s : streams)
        CHECK(cudaStreamDestroy(s));
    // The pointer is dropped here: nothing refers to the block any more.
    printf("thread %d kept a block at %p\n", leaker, kept);
    kept = NULL;
    prog_done("mt_leak");
    return 0;
}

/* The least an allocator behind PyTorch's pluggable-allocator interface can cost: blocks
 * cached by size (four sizes a doubling) and handed out again at once, cudaMalloc for a
 * size with none cached, never released. It holds far more memory than any real allocator
 * would, and is safe only for programs on one stream; it is no allocator to use, but the speed
 * of a training loop on it is what PyTorch's interface allows any allocator plugged into it.
 * bench/python/workloads.py builds it (allocator torch-floor) with the C compiler and CUDA. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#define SLOTS 65536 /* distinct sizes; the variable-length loop has a few thousand */

static struct {
    size_t size; /* 0: slot free */
    void **v;
    size_t n, cap;
} cache[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Four sizes a doubling (at most 25 % over), from 512 bytes: exact sizes are too many (the
 * variable-length loop ran an 80 GB H100 out of memory with them). */
static size_t round_up(ssize_t size)
{
    size_t s = size < 512 ? 512 : (size_t)size, top = 512;
    while (top < s)
        top <<= 1;
    size_t step = top / 8; /* sizes top/2 + k * top/8, k = 1..4 */
    return top == 512 ? 512 : (s + step - 1) / step * step;
}

/* The slot of size: its own, or the free one where it goes; SLOTS when the table is full. */
static size_t slot_of(size_t size)
{
    size_t h = (size_t)(((uint64_t)size * 0x9E3779B97F4A7C15ull) >> 48) % SLOTS;
    for (size_t i = 0; i < SLOTS; i++, h = (h + 1) % SLOTS)
        if (cache[h].size == size || cache[h].size == 0)
            return h;
    return SLOTS;
}

void *floor_malloc(ssize_t size, int device, cudaStream_t stream)
{
    (void)device, (void)stream;
    size_t s = round_up(size);
    void *p = NULL;
    pthread_mutex_lock(&lock);
    size_t h = slot_of(s);
    if (h < SLOTS && cache[h].n)
        p = cache[h].v[--cache[h].n];
    pthread_mutex_unlock(&lock);
    if (!p && cudaMalloc(&p, s) != cudaSuccess)
        return NULL;
    return p;
}

void floor_free(void *p, ssize_t size, int device, cudaStream_t stream)
{
    (void)device, (void)stream;
    size_t s = round_up(size);
    pthread_mutex_lock(&lock);
    size_t h = slot_of(s);
    if (h < SLOTS && cache[h].n == cache[h].cap) {
        size_t cap = cache[h].cap ? cache[h].cap * 2 : 8;
        void **v = realloc(cache[h].v, cap * sizeof *v);
        if (v) {
            cache[h].v = v;
            cache[h].cap = cap;
        }
    }
    if (h < SLOTS && cache[h].n < cache[h].cap) {
        cache[h].size = s;
        cache[h].v[cache[h].n++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (p)
        cudaFree(p); /* no room to keep it */
}

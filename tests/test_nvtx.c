/* Pools describe their memory to NVTX tools (src/nvtx.c), checked against a stand-in tool
 * (nvtx_stub.c) that NVTX loads through NVTX_INJECTION64_PATH and that records every heap and
 * region call and checks their order. On the simulated device.
 *
 * Usage: test_nvtx on|off. on: GPUMEM_NVTX is on (or auto under what looks like
 * compute-sanitizer), and every chunk and block of its own is a heap while the pool holds it,
 * every live block a region of the bytes asked for, blocks served from a thread cache
 * included. off: GPUMEM_NVTX=0, or auto with no compute-sanitizer: the tool hears nothing. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpumem.h"
#include "harness.h"
#include "nvtx_stub.h"

/* What the stub saw so far; all zero when NVTX never loaded it. */
static nvtx_stub_counts seen(void)
{
    nvtx_stub_counts c;
    memset(&c, 0, sizeof c);
    const char *path = getenv("NVTX_INJECTION64_PATH");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    nvtx_stub_get_fn get = lib ? (nvtx_stub_get_fn)(uintptr_t)dlsym(lib, "nvtx_stub_get") : NULL;
    if (get)
        get(&c);
    if (lib)
        dlclose(lib);
    return c;
}

static void expect_clean(void)
{
    nvtx_stub_counts c = seen();
    EXPECT_EQ(c.violations, 0);
    if (c.violations)
        fprintf(stderr, "  first violation: %s\n", c.first_violation);
}

/* A device block: carved from a segment of 2 MiB, the heap (NVTX makes device pools carve
 * segments CUDA gives in one piece), a region of the bytes asked for; released, the region
 * goes (the heap stays: the block is cached); served again from the cache, a region again with
 * no new heap; trimmed, the heap goes. */
static void device_pool(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    nvtx_stub_counts c0 = seen();
    float *p = gpumem_pool_alloc(pool, 1000, sizeof *p, NULL); /* 4000 bytes, a 4 KiB block */
    ASSERT_NOT_NULL(p);
    nvtx_stub_counts c = seen();
    EXPECT_EQ(c.domains, 1);
    EXPECT_STR_EQ(c.domain, "gpumem");
    EXPECT_EQ(c.heaps_registered - c0.heaps_registered, 1);
    EXPECT_EQ(c.last_heap_base, (uintptr_t)p);
    EXPECT_EQ(c.last_heap_bytes, 2 << 20);
    EXPECT_EQ(c.regions_registered - c0.regions_registered, 1);
    EXPECT_EQ(c.last_region_base, (uintptr_t)p);
    EXPECT_EQ(c.last_region_bytes, 4000);
    EXPECT_EQ(c.regions_live, 1);

    gpumem_free(p);
    c = seen();
    EXPECT_EQ(c.regions_live, 0);
    EXPECT_EQ(c.heaps_live - c0.heaps_live, 1); /* cached: still the pool's */

    float *q = gpumem_pool_alloc(pool, 1000, sizeof *q, NULL);
    ASSERT_NOT_NULL(q);
    EXPECT_PTR_EQ(q, p); /* the cached block (from the thread cache, unless it is off) */
    c = seen();
    EXPECT_EQ(c.heaps_registered - c0.heaps_registered, 1);
    EXPECT_EQ(c.regions_registered - c0.regions_registered, 2);
    EXPECT_EQ(c.regions_live, 1);
    EXPECT_EQ(gpumem_free_async(q, NULL), GPUMEM_OK);
    EXPECT_EQ(seen().regions_live, 0);

    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    c = seen();
    EXPECT_EQ(c.heaps_unregistered - c0.heaps_unregistered, 1);
    EXPECT_EQ(c.heaps_live, c0.heaps_live);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    expect_clean();
}

/* Pinned blocks carved from a chunk: the chunk is the heap, the blocks regions side by side in
 * it; a large block is a heap of its own; trimmed and destroyed, nothing stays. */
static void pinned_pool(void)
{
    gpumem_pool_options_t o = {.chunk_bytes = 1 << 20};
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, &o);
    ASSERT_NOT_NULL(pool);
    nvtx_stub_counts c0 = seen();
    char *a = gpumem_pool_alloc(pool, 4096, 1, NULL);
    char *b = gpumem_pool_alloc(pool, 4096, 1, NULL);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    nvtx_stub_counts c = seen();
    EXPECT_EQ(c.heaps_registered - c0.heaps_registered, 1);
    EXPECT_EQ(c.last_heap_bytes, 1 << 20);
    EXPECT_TRUE((uintptr_t)a >= c.last_heap_base && (uintptr_t)b >= c.last_heap_base);
    EXPECT_EQ(c.regions_live, 2);
    char *big = gpumem_pool_alloc(pool, 512 << 10, 1, NULL); /* > chunk / 4: its own */
    ASSERT_NOT_NULL(big);
    c = seen();
    EXPECT_EQ(c.heaps_registered - c0.heaps_registered, 2);
    EXPECT_EQ(c.last_heap_base, (uintptr_t)big);
    EXPECT_EQ(c.regions_live, 3);
    gpumem_free(a);
    gpumem_free(b);
    gpumem_free(big);
    c = seen();
    EXPECT_EQ(c.regions_live, 0);
    EXPECT_EQ(gpumem_pool_trim(pool), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    c = seen();
    EXPECT_EQ(c.heaps_live, c0.heaps_live);
    EXPECT_EQ(c.heaps_unregistered - c0.heaps_unregistered, 2);
    expect_clean();
}

/* Destroying a pool with cached blocks, without a trim first, takes its heaps too: the small
 * segment of the 1 MiB block and the 20 MiB segment the 2 and 3 MiB blocks share. */
static void destroy_untrimmed(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    ASSERT_NOT_NULL(pool);
    nvtx_stub_counts c0 = seen();
    void *p[3];
    for (int i = 0; i < 3; i++)
        p[i] = gpumem_pool_alloc(pool, 1, (size_t)(i + 1) << 20, NULL);
    for (int i = 0; i < 3; i++)
        gpumem_free(p[i]);
    EXPECT_EQ(seen().heaps_live - c0.heaps_live, 2);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    EXPECT_EQ(seen().heaps_live, c0.heaps_live);
    expect_clean();
}

/* Blocks handed between threads: each thread releases half its blocks itself and leaves the
 * other half in a shared slot for whichever thread comes next, so blocks move between thread
 * caches and the pool while others allocate. The stub sees every region come and go in order
 * (a region unregistered after its block reached another thread would overlap that thread's). */
#define WORKERS 8
#define ROUNDS 400
static _Atomic(void *) handoff[64];
static gpumem_pool *shared[2];

static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < ROUNDS; i++) {
        seed = seed * 1103515245u + 12345u;
        gpumem_pool *pool = shared[(seed >> 8) & 1];
        size_t bytes = 256 + (seed >> 12) % 8192;
        void *p = gpumem_pool_alloc(pool, 1, bytes, NULL);
        if (!p)
            return "allocation failed";
        if (i & 1) {
            gpumem_free(p);
            continue;
        }
        void *old = atomic_exchange(&handoff[(seed >> 4) % 64], p);
        if (old)
            gpumem_free(old);
    }
    return NULL;
}

static void threads(void)
{
    shared[0] = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    shared[1] = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(shared[0]);
    ASSERT_NOT_NULL(shared[1]);
    nvtx_stub_counts c0 = seen();
    pthread_t t[WORKERS];
    for (uintptr_t i = 0; i < WORKERS; i++)
        ASSERT_EQ(pthread_create(&t[i], NULL, worker, (void *)(i + 1)), 0);
    for (int i = 0; i < WORKERS; i++) {
        void *why = NULL;
        pthread_join(t[i], &why);
        EXPECT_NULL(why);
    }
    for (int i = 0; i < 64; i++)
        gpumem_free(atomic_exchange(&handoff[i], NULL));
    nvtx_stub_counts c = seen();
    EXPECT_EQ(c.regions_live, 0);
    EXPECT_EQ(c.regions_registered - c0.regions_registered, WORKERS * ROUNDS);
    EXPECT_EQ(c.regions_unregistered - c0.regions_unregistered, WORKERS * ROUNDS);
    EXPECT_EQ(gpumem_pool_destroy(shared[0]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(shared[1]), GPUMEM_OK);
    EXPECT_EQ(seen().heaps_live, c0.heaps_live);
    expect_clean();
}

/* fork() while pools describe themselves: the child can still use a pool (the heaps' lock is
 * not left held in it). */
static void fork_child(void)
{
    gpumem_pool *pool = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(pool);
    void *p = gpumem_pool_alloc(pool, 1, 4096, NULL);
    ASSERT_NOT_NULL(p);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        void *q = gpumem_pool_alloc(pool, 1, 4096, NULL);
        gpumem_free(q);
        _exit(q && seen().regions_live == 1 ? 0 : 1);
    }
    ASSERT_NE(pid, -1);
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    gpumem_free(p);
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
    expect_clean();
}

/* Nothing reaches the tool. */
static void silent(void)
{
    gpumem_pool *d = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    gpumem_pool *h = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    ASSERT_NOT_NULL(d);
    ASSERT_NOT_NULL(h);
    void *p = gpumem_pool_alloc(d, 1, 4096, NULL), *q = gpumem_pool_alloc(h, 1, 4096, NULL);
    EXPECT_TRUE(p && q);
    gpumem_free(p);
    gpumem_free(q);
    EXPECT_EQ(gpumem_pool_destroy(d), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(h), GPUMEM_OK);
    nvtx_stub_counts c = seen();
    EXPECT_EQ(c.domains, 0);
    EXPECT_EQ(c.heaps_registered, 0);
    EXPECT_EQ(c.regions_registered, 0);
}

int main(int argc, char **argv)
{
    if (argc < 2 || !getenv("NVTX_INJECTION64_PATH")) {
        fprintf(stderr, "usage: NVTX_INJECTION64_PATH=nvtx_stub.so test_nvtx on|off\n");
        return 2;
    }
    if (strcmp(argv[1], "on") == 0) {
        RUN(device_pool);
        RUN(pinned_pool);
        RUN(destroy_untrimmed);
        RUN(threads);
        RUN(fork_child);
    } else {
        RUN(silent);
    }
    return harness_exit();
}

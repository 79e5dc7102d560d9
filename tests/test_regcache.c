/* The registration cache of gpumem_copy (src/regcache.c, src/reghooks.c), on the simulated
 * device, which keeps registered host ranges as the driver does (an overlapping registration
 * is refused; a registered range is pinned host memory to cuPointerGetAttribute).
 *
 * Run with GPUMEM_COPY_STAGE_MIN=1MiB and GPUMEM_REGCACHE=8MiB (tests/CMakeLists.txt), so
 * that 3 MiB buffers are cached and a third one evicts the first. A buffer's first copy is
 * staged and queues its registration, which the cache's own thread does after the copy;
 * gpumem__regcache_settle waits for it where a test needs the range registered. `test_regcache off` expects
 * the cache off, with the reason given as its second argument (GPUMEM_REGCACHE=0). Where the
 * hooks are not linked (sanitizer builds) or the process's free is not gpumem's, the cache is
 * off and the cached scenarios are skipped. */
#define _DEFAULT_SOURCE
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h"

#define MIB ((size_t)1 << 20)

static unsigned char *dev;

static gpumem__regcache_counts counts(void)
{
    gpumem__regcache_counts c;
    gpumem__regcache_counts_get(&c);
    return c;
}

static uint64_t registered_copies(void)
{
    gpumem__copy_counts c;
    gpumem__copy_counts_get(&c);
    return c.registered;
}

static uint64_t staged_copies(void)
{
    gpumem__copy_counts c;
    gpumem__copy_counts_get(&c);
    return c.staged;
}

/* Page-aligned blocks of whole pages share no page with a neighbour (malloc's blocks side by
 * side do: the cache then registers both as one range). */
static unsigned char *filled(size_t n, unsigned seed)
{
    unsigned char *p = aligned_alloc(4096, (n + 4095) & ~(size_t)4095);
    if (p)
        for (size_t i = 0; i < n; i++)
            p[i] = (unsigned char)(i * 13 + seed);
    return p;
}

/* The device holds what p holds, for n bytes (read back through the backend's own copy). */
static int device_matches(const unsigned char *p, size_t n)
{
    unsigned char *back = malloc(n);
    if (!back || gpumem__be->memcpy_async(back, dev, n, NULL) != 0) {
        free(back);
        return 0;
    }
    int same = memcmp(back, p, n) == 0;
    free(back);
    return same;
}

/* First copy: a miss, staged, that queues the registration; once registered, later copies
 * both ways: hits at the same range, and a part of it; the data right every time. */
static void test_hit_and_miss(void)
{
    size_t n = 3 * MIB;
    unsigned char *a = filled(n, 1);
    ASSERT_NOT_NULL(a);
    gpumem__regcache_counts c0 = counts();
    uint64_t reg0 = registered_copies(), st0 = staged_copies();
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_TRUE(device_matches(a, n));
    EXPECT_EQ(registered_copies() - reg0, 0);
    EXPECT_EQ(staged_copies() - st0, 1);
    gpumem__regcache_settle();
    gpumem__regcache_counts c1 = counts();
    EXPECT_EQ(c1.misses - c0.misses, 1);
    EXPECT_EQ(c1.registered - c0.registered, 1);
    EXPECT_EQ(c1.hits - c0.hits, 0);
    EXPECT_EQ(c1.entries, 1);
    EXPECT_TRUE(gpumem__sim_registered(a));
    EXPECT_TRUE(gpumem__sim_registered(a + n - 1));

    memset(a, 0x5A, n);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK); /* a hit: the new bytes arrive */
    EXPECT_TRUE(device_matches(a, n));
    memset(a, 0, n);
    EXPECT_EQ(gpumem_copy(a, dev, n), GPUMEM_OK); /* from the device, into the same range */
    size_t bad = 0;
    while (bad < n && a[bad] == 0x5A)
        bad++;
    EXPECT_EQ(bad, n);
    EXPECT_EQ(gpumem_copy(dev, a + MIB, MIB + 5), GPUMEM_OK); /* part of the range */
    gpumem__regcache_counts c2 = counts();
    EXPECT_EQ(c2.hits - c1.hits, 3);
    EXPECT_EQ(c2.misses - c1.misses, 0);
    EXPECT_EQ(c2.registered - c1.registered, 0);
    EXPECT_EQ(registered_copies() - reg0, 3);
    EXPECT_EQ(staged_copies() - st0, 1);
    /* The program's memory is still pageable to gpumem, though the driver says pinned. */
    EXPECT_TRUE(gpumem__regcache_owns(a));
    EXPECT_EQ(gpumem_copy_async(dev, a, n, NULL), GPUMEM_OK);
    EXPECT_EQ(counts().hits - c2.hits, 1);

    volatile uintptr_t at = (uintptr_t)a; /* the address, apart from the pointer freed */
    free(a); /* released: unregistered */
    EXPECT_TRUE(!gpumem__sim_registered((const void *)at));
    EXPECT_EQ(counts().entries, 0);
}

/* The limit: two 3 MiB ranges fit in 8 MiB, a third evicts the least recently used; a range
 * larger than the limit is staged and never registered. */
static void test_eviction(void)
{
    size_t n = 3 * MIB;
    unsigned char *a = filled(n, 2), *b = filled(n, 3), *c = filled(n, 4);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    ASSERT_NOT_NULL(c);
    gpumem__regcache_counts c0 = counts();
    EXPECT_EQ(c0.bytes, 0);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(dev, b, n), GPUMEM_OK);
    gpumem__regcache_settle();

    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK); /* a is now the more recent */
    EXPECT_EQ(counts().entries, 2);
    EXPECT_EQ(gpumem_copy(dev, c, n), GPUMEM_OK);
    EXPECT_TRUE(device_matches(c, n));
    gpumem__regcache_settle();
    gpumem__regcache_counts c1 = counts();
    EXPECT_EQ(c1.evicted - c0.evicted, 1);
    EXPECT_EQ(c1.entries, 2);
    EXPECT_LE(c1.bytes, 8 * MIB);
    EXPECT_TRUE(gpumem__sim_registered(a));
    EXPECT_TRUE(!gpumem__sim_registered(b)); /* the least recently used went */
    EXPECT_TRUE(gpumem__sim_registered(c));

    size_t big = 9 * MIB;
    unsigned char *d = filled(big, 5);
    ASSERT_NOT_NULL(d);
    uint64_t st0 = staged_copies();
    EXPECT_EQ(gpumem_copy(dev, d, big), GPUMEM_OK);
    EXPECT_TRUE(device_matches(d, big));
    EXPECT_EQ(staged_copies() - st0, 1);
    EXPECT_TRUE(!gpumem__sim_registered(d));
    EXPECT_EQ(counts().entries, 2);
    free(a);
    free(b);
    free(c);
    free(d);
    EXPECT_EQ(counts().entries, 0);
    EXPECT_EQ(gpumem__sim_registered_count(), 0);
}

/* Every way memory goes back unregisters it first: free, realloc, munmap, madvise. */
static void test_release(void)
{
    size_t n = 2 * MIB;
    gpumem__regcache_counts c0 = counts();

    unsigned char *a = filled(n, 6);
    ASSERT_NOT_NULL(a);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    gpumem__regcache_settle();
    EXPECT_TRUE(gpumem__sim_registered(a));
    unsigned char *a2 = realloc(a, 4 * n);
    ASSERT_NOT_NULL(a2);
    EXPECT_TRUE(!gpumem__sim_registered(a2));
    EXPECT_EQ(counts().entries, 0);
    free(a2);

    unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_(EXPECT_TRUE(m != MAP_FAILED));
    memset(m, 7, n);
    EXPECT_EQ(gpumem_copy(dev, m, n), GPUMEM_OK);
    gpumem__regcache_settle();
    EXPECT_TRUE(gpumem__sim_registered(m));
    EXPECT_EQ(madvise(m, n, MADV_DONTNEED), 0);
    EXPECT_TRUE(!gpumem__sim_registered(m));
    memset(m, 8, n);
    EXPECT_EQ(gpumem_copy(dev, m, n), GPUMEM_OK); /* registered again, the new pages */
    EXPECT_TRUE(device_matches(m, n));
    gpumem__regcache_settle();
    EXPECT_TRUE(gpumem__sim_registered(m));
    EXPECT_EQ(munmap(m + n / 2, n / 2), 0); /* half of it goes: the whole range is dropped */
    EXPECT_TRUE(!gpumem__sim_registered(m));
    EXPECT_EQ(munmap(m, n / 2), 0);

    gpumem__regcache_counts c1 = counts();
    EXPECT_EQ(c1.released - c0.released, 3);
    EXPECT_EQ(c1.entries, 0);
    EXPECT_EQ(gpumem__sim_registered_count(), 0);

    /* A free of memory the cache does not hold touches nothing. */
    unsigned char *x = filled(n, 9), *y = malloc(64);
    ASSERT_NOT_NULL(x);
    ASSERT_NOT_NULL(y);
    EXPECT_EQ(gpumem_copy(dev, x, n), GPUMEM_OK);
    gpumem__regcache_settle();
    free(y);
    EXPECT_TRUE(gpumem__sim_registered(x));
    free(x);
    EXPECT_EQ(counts().released - c1.released, 1);
}

/* Heap blocks side by side share a page: a small block freed next to a registered buffer
 * leaves it registered; two ranges sharing a page (here two parts of one block, as two heap
 * blocks side by side would be) are registered as one range, which the release drops. */
static void test_neighbours(void)
{
    size_t n = 2 * MIB;
    mallopt(M_MMAP_THRESHOLD, 16 * (int)MIB); /* these blocks come from the heap */
    unsigned char *c = malloc(64), *a = malloc(n);
    ASSERT_NOT_NULL(c);
    ASSERT_NOT_NULL(a);
    memset(a, 1, n);
    uintptr_t page = 4096, a_first = (uintptr_t)a & ~(page - 1);
    gpumem__regcache_counts c0 = counts();
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    gpumem__regcache_settle();
    EXPECT_TRUE(gpumem__sim_registered(a));
    if ((uintptr_t)c >= a_first && (uintptr_t)c < (uintptr_t)a) {
        /* In a's first page, not in its bytes, and freed inside the next copy of a, as the
         * driver frees blocks of its own: a leaves it registered, and the copy does not wait
         * for itself. */
        gpumem__sim_free_during_copy(c);
        EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
        EXPECT_TRUE(gpumem__sim_registered(a));
        EXPECT_EQ(counts().released, c0.released);
        EXPECT_EQ(counts().hits - c0.hits, 1);
    } else {
        fprintf(stderr, "  (the small block is not in the buffer's first page: not checked)\n");
        free(c);
    }
    free(a);
    EXPECT_EQ(counts().entries, 0);

    unsigned char *region = malloc(2 * n + 64);
    ASSERT_NOT_NULL(region);
    unsigned char *x = region + 16, *y = region + 16 + n + 16; /* y starts in x's last page */
    memset(region, 3, 2 * n + 64);
    gpumem__regcache_counts c1 = counts();
    EXPECT_EQ(gpumem_copy(dev, x, n), GPUMEM_OK);
    gpumem__regcache_settle();
    EXPECT_EQ(gpumem_copy(dev, y, n), GPUMEM_OK);
    EXPECT_TRUE(device_matches(y, n));
    gpumem__regcache_settle();
    gpumem__regcache_counts c2 = counts();
    EXPECT_EQ(c2.entries, 1); /* one range for both */
    EXPECT_EQ(c2.registered - c1.registered, 2);
    EXPECT_EQ(c2.evicted - c1.evicted, 1);
    EXPECT_EQ(gpumem_copy(dev, x, n), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(dev, y, n), GPUMEM_OK);
    EXPECT_EQ(counts().hits - c2.hits, 2);
    free(region);
    EXPECT_EQ(counts().entries, 0);
    EXPECT_EQ(gpumem__sim_registered_count(), 0);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
}

/* The driver refusing a registration: the copy was staged and is correct, the refusal is
 * counted, nothing stays registered, and the next copy is staged and queues it again (here
 * the driver then accepts it). */
static void test_refused(void)
{
    size_t n = 2 * MIB;
    unsigned char *a = filled(n, 10);
    ASSERT_NOT_NULL(a);
    gpumem__regcache_counts c0 = counts();
    uint64_t st0 = staged_copies();
    gpumem__sim_fail_register(0, cudaErrorHostMemoryAlreadyRegistered);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_TRUE(device_matches(a, n));
    gpumem__regcache_settle();
    EXPECT_EQ(counts().refused - c0.refused, 1);
    EXPECT_TRUE(!gpumem__sim_registered(a));
    EXPECT_EQ(counts().entries, 0);
    EXPECT_EQ(counts().bytes, 0);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK); /* not registered: staged again */
    EXPECT_EQ(staged_copies() - st0, 2);
    gpumem__regcache_settle();
    EXPECT_TRUE(gpumem__sim_registered(a));
    EXPECT_EQ(counts().refused - c0.refused, 1);
    free(a);
    EXPECT_EQ(counts().entries, 0);
}

/* Turned off at run time: copies are staged and nothing is registered; on again: cached. */
static void test_switch(void)
{
    size_t n = 2 * MIB;
    unsigned char *a = filled(n, 11);
    ASSERT_NOT_NULL(a);
    EXPECT_EQ(gpumem__regcache_set_enabled(0), 0);
    uint64_t st0 = staged_copies();
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_EQ(staged_copies() - st0, 2);
    EXPECT_EQ(gpumem__sim_registered_count(), 0);
    EXPECT_EQ(gpumem__regcache_set_enabled(1), 1);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    gpumem__regcache_settle();
    EXPECT_TRUE(gpumem__sim_registered(a));
    gpumem__regcache_reset();
    EXPECT_TRUE(!gpumem__sim_registered(a));
    free(a);
}

/* A buffer released right after its first copy, while its registration is queued, under way
 * or done (whichever the registrar reached): it ends unregistered and uncounted, and nothing
 * else is left registered. Many rounds, to meet each of those states. */
static void test_release_while_registering(void)
{
    size_t n = 2 * MIB;
    for (int round = 0; round < 40; round++) {
        unsigned char *a = filled(n, (unsigned)round);
        ASSERT_NOT_NULL(a);
        EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
        if (round % 3 == 1)
            sched_yield(); /* give the registrar a start */
        volatile uintptr_t at = (uintptr_t)a;
        free(a);
        EXPECT_TRUE(!gpumem__sim_registered((const void *)at));
        EXPECT_EQ(counts().entries, 0);
        EXPECT_EQ(counts().bytes, 0);
    }
    gpumem__regcache_settle();
    EXPECT_EQ(gpumem__sim_registered_count(), 0);
    EXPECT_EQ(counts().bytes, 0);
}

/* In a process made by fork there is no registrar: the copy registers the range itself once it
 * is done, so it is registered when the call returns, and the next copy is a hit. */
static void test_fork_child(void)
{
    size_t n = 2 * MIB;
    unsigned char *a = filled(n, 21);
    ASSERT_NOT_NULL(a);
    pid_t pid = fork();
    ASSERT_(EXPECT_TRUE(pid >= 0));
    if (pid == 0) {
        gpumem__regcache_counts c0 = counts();
        int ok = gpumem_copy(dev, a, n) == GPUMEM_OK && gpumem__sim_registered(a) &&
                 counts().registered - c0.registered == 1 &&
                 gpumem_copy(dev, a, n) == GPUMEM_OK && counts().hits - c0.hits == 1 &&
                 device_matches(a, n);
        volatile uintptr_t at = (uintptr_t)a;
        free(a);
        ok = ok && !gpumem__sim_registered((const void *)at) && counts().entries == 0;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(a);
}

/* `test_regcache off WHY`: the cache is off for the reason WHY, and copies are staged. */
static int expect_off(const char *why)
{
    gpumem__regcache_counts c = counts();
    EXPECT_TRUE(c.off_reason != NULL);
    if (c.off_reason)
        EXPECT_CONTAINS(c.off_reason, why);
    size_t n = 2 * MIB;
    unsigned char *a = filled(n, 12);
    if (!a)
        return 1;
    uint64_t st0 = staged_copies();
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_EQ(gpumem_copy(dev, a, n), GPUMEM_OK);
    EXPECT_TRUE(device_matches(a, n));
    EXPECT_EQ(staged_copies() - st0, 2);
    EXPECT_EQ(registered_copies(), 0);
    EXPECT_EQ(gpumem__sim_registered_count(), 0);
    EXPECT_EQ(gpumem__regcache_set_enabled(1), 0);
    free(a);
    return harness_exit();
}

int main(int argc, char **argv)
{
    if (gpumem_backend_select("sim") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        fprintf(stderr, "FAIL: the simulated device: %s\n", gpumem_last_error()->message);
        return 1;
    }
    dev = gpumem_device_alloc(16 * MIB, 1);
    if (!dev)
        return 1;
    if (argc > 2 && strcmp(argv[1], "off") == 0)
        return expect_off(argv[2]);
    gpumem__regcache_counts c = counts();
    if (c.off_reason) {
        fprintf(stderr, "the cache is off: %s\n", c.off_reason);
        if (strstr(c.off_reason, "is not gpumem's") || strstr(c.off_reason, "not linked"))
            SKIP("no release hooks, or another free comes first (a sanitizer build)");
        else
            EXPECT_TRUE(c.off_reason == NULL);
        gpumem_free(dev);
        return harness_exit();
    }
    RUN(test_hit_and_miss);
    RUN(test_eviction);
    RUN(test_release);
    RUN(test_neighbours);
    RUN(test_refused);
    RUN(test_switch);
    RUN(test_release_while_registering);
    RUN(test_fork_child);
    gpumem_free(dev);
    return harness_exit();
}

/* Two threads release the same pointer at once, 4 000 times, with other allocations and
 * releases around it (so released addresses come back, as CUDA hands them out again): one
 * release succeeds and the other is a double free, never "gpumem did not allocate". With the
 * default quarantine, an address is remembered until 65 536 releases later, so every second
 * release here is recognised.
 *
 * Also: a released address of the simulated device is never one host malloc returns (the
 * simulated device's memory is its own address range, as a GPU's is). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend_arg.h"
#include "gpumem.h"
#include "harness.h"

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

static pthread_barrier_t go;
static void *volatile shared;
static int codes[2];

static void *releaser(void *arg)
{
    int i = (int)(intptr_t)arg;
    pthread_barrier_wait(&go);
    codes[i] = gpumem_free(shared);
    return NULL;
}

static void test_two_threads_one_pointer(void)
{
    int ok = 0, dbl = 0, foreign = 0, other = 0;
    void *noise[8];
    for (int round = 0; round < 4000; round++) {
        for (int k = 0; k < 8; k++)
            noise[k] = gpumem_device_alloc(1, (size_t)256 << (k % 4));
        shared = gpumem_device_alloc(1, 256 + (size_t)(round % 3) * 256);
        if (!shared && ++other <= 3)
            fprintf(stderr, "round %d: %s\n", round, gpumem_last_error()->message);
        for (int k = 0; k < 8; k += 2)
            gpumem_free(noise[k]);
        pthread_t t[2];
        pthread_barrier_init(&go, NULL, 2);
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, releaser, (void *)(intptr_t)i);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        for (int k = 1; k < 8; k += 2)
            gpumem_free(noise[k]);
        for (int i = 0; i < 2; i++) {
            ok += codes[i] == GPUMEM_OK;
            dbl += codes[i] == GPUMEM_EDOUBLEFREE;
            foreign += codes[i] == GPUMEM_EFOREIGN;
            other += codes[i] != GPUMEM_OK && codes[i] != GPUMEM_EDOUBLEFREE &&
                     codes[i] != GPUMEM_EFOREIGN;
        }
    }
    fprintf(stderr, "4000 rounds: %d ok, %d double free, %d foreign, %d other\n", ok, dbl,
            foreign, other);
    EXPECT_EQ(ok, 4000);
    EXPECT_EQ(dbl, 4000);
    EXPECT_EQ(foreign, 0);
    EXPECT_EQ(other, 0);
}

/* The oldest remembered release of an address that was allocated and released again since
 * must not take the newer release with it when it is forgotten. Each shard of the registry
 * remembers its last 1 024 releases (the default quarantine of 65 536 over 64 shards). The
 * same address is released 512 times (the simulated device hands a released address out
 * again at once, as CUDA does), then 48 000 others are, about 750 in each shard: the oldest
 * entries of the address are forgotten, its newest release is not. */
static void test_fresh_release_survives_old_entry(void)
{
    void *p = gpumem_device_alloc(1, 256);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    int again = 0;
    for (int i = 1; i < 512; i++) {
        void *q = gpumem_device_alloc(1, 256);
        again += q == p;
        gpumem_free(q);
    }
    enum { N = 48000 };
    static void *h[N];
    for (int i = 0; i < N; i++)
        h[i] = gpumem_device_alloc(1, 256);
    for (int i = 0; i < N; i++)
        gpumem_free(h[i]);
    fprintf(stderr, "the same address came back %d of 511 times\n", again);
    if (strcmp(gpumem_backend(), "sim") == 0)
        EXPECT_EQ(again, 511);
    if (again == 511)
        EXPECT_EQ(gpumem_free(p), GPUMEM_EDOUBLEFREE);
}

static void test_host_malloc_never_a_device_address(void)
{
    enum { N = 2000 };
    static void *dev[N];
    for (int i = 0; i < N; i++)
        dev[i] = gpumem_device_alloc(1, (size_t)64 << (i % 8));
    for (int i = 0; i < N; i++)
        gpumem_free(dev[i]);
    int clash = 0;
    for (int i = 0; i < N; i++) {
        void *h = malloc((size_t)64 << (i % 8));
        /* "released before" would be wrong: gpumem never made it */
        clash += gpumem_free(h) == GPUMEM_EDOUBLEFREE; // gpumem-lint: ignore[GM002] a foreign pointer on purpose
        free(h);
    }
    EXPECT_EQ(clash, 0);
}

int main(int argc, char **argv)
{
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    gpumem_set_error_handler(quiet, NULL);
    test_two_threads_one_pointer();
    test_fresh_release_survives_old_entry();
    if (strcmp(gpumem_backend(), "sim") == 0)
        test_host_malloc_never_a_device_address();
    return harness_exit();
}

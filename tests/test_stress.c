/* 8 threads allocate every kind and free across threads; two threads race to free the same
 * pointers and exactly one wins each time. Same scenario on sim (host) and GPU (gpu). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>

#include "gpumem.h"
#include "harness.h"

#define THREADS 8
#define ROUNDS 2000
#define SLOTS 64

static _Atomic(void *) slots[SLOTS];
static atomic_int errors, wins, losses;

static void quiet(const gpumem_error *e, void *arg)
{
    (void)arg;
    if (e->code != GPUMEM_EDOUBLEFREE)
        atomic_fetch_add(&errors, 1);
}

static void *alloc_any(unsigned i)
{
    size_t n = 1 + (i * 7919u) % 5000;
    switch (i % 5) {
    case 0: return gpumem_device_alloc(n, 4);
    case 1: return gpumem_managed_alloc(n, 4, GPUMEM_ATTACH_GLOBAL);
    case 2: return gpumem_pinned_alloc(n, 4);
    case 3: return gpumem_host_alloc(n, 4, GPUMEM_HOST_MAPPED);
    default: return gpumem_device_alloc_async(n, 4, NULL);
    }
}

/* Each round: allocate one, swap it into a shared slot, free what was there (made by
 * whichever thread put it there). */
static void *worker(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (unsigned r = 0; r < ROUNDS; r++) {
        seed = seed * 1103515245u + 12345u;
        void *p = alloc_any(seed >> 8);
        if (!p) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        void *old = atomic_exchange(&slots[(seed >> 16) % SLOTS], p);
        if (old && gpumem_free(old) != GPUMEM_OK)
            atomic_fetch_add(&errors, 1);
    }
    return NULL;
}

static void test_cross_thread(void)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < SLOTS; i++)
        EXPECT_EQ(gpumem_free(atomic_exchange(&slots[i], NULL)), GPUMEM_OK);
    EXPECT_EQ(atomic_load(&errors), 0);
    gpumem_live l;
    gpumem_live_get(&l);
    EXPECT_EQ(l.count[0], 0);
    EXPECT_EQ(l.bytes[0], 0);
}

static void *racer(void *arg)
{
    void **ptrs = arg;
    for (int i = 0; i < 500; i++) {
        int rc = gpumem_free(ptrs[i]);
        atomic_fetch_add(rc == GPUMEM_OK ? &wins : &losses, 1);
    }
    return NULL;
}

static void test_racing_frees(void)
{
    static void *ptrs[500];
    for (int i = 0; i < 500; i++)
        ptrs[i] = gpumem_device_alloc(1, 256);
    pthread_t a, b;
    pthread_create(&a, NULL, racer, ptrs);
    pthread_create(&b, NULL, racer, ptrs);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    EXPECT_EQ(atomic_load(&wins), 500);
    EXPECT_EQ(atomic_load(&losses), 500);
    EXPECT_EQ(atomic_load(&errors), 0);
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(quiet, NULL);
    gpumem_backend_select(argc > 1 ? argv[1] : "sim");
    if (gpumem_init() != GPUMEM_OK) {
        SKIP("no usable CUDA device");
        return harness_exit();
    }
    RUN(test_cross_thread);
    RUN(test_racing_frees);
    return harness_exit();
}

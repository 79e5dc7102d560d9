/* Byte peaks of gpumem_stats, on the simulated device: exact on one thread, within the flush
 * rule's bound while another thread has bytes it has not flushed, exact again once it ended. */
#include <pthread.h>

#include "gpumem.h"
#include "harness.h"

#define MIB ((size_t)1 << 20)

static uint64_t device_peak(void)
{
    gpumem_stats_t s;
    gpumem_stats(&s);
    return s.bytes[GPUMEM_KIND_DEVICE].peak;
}

static uint64_t device_current(void)
{
    gpumem_stats_t s;
    gpumem_stats(&s);
    return s.bytes[GPUMEM_KIND_DEVICE].current;
}

/* Blocks of megabytes, allocated and released in an order whose running total peaks once in
 * the middle: the peak read after is that total, to the byte. */
static void test_one_thread_exact(void)
{
    gpumem_stats_reset_peak();
    uint64_t base = device_current();
    void *a[64], *b[24];
    uint64_t live = 0, top = 0;
    for (int i = 0; i < 64; i++) {
        a[i] = gpumem_device_alloc(1, 3 * MIB + (size_t)i * 4096);
        ASSERT_NOT_NULL(a[i]);
        live += 3 * MIB + (size_t)i * 4096;
    }
    top = live;
    for (int i = 0; i < 40; i++) {
        gpumem_free(a[i]);
        live -= 3 * MIB + (size_t)i * 4096;
    }
    for (int i = 0; i < 24; i++) {
        b[i] = gpumem_device_alloc(1, 7 * MIB + 256);
        ASSERT_NOT_NULL(b[i]);
        live += 7 * MIB + 256;
        if (live > top)
            top = live;
    }
    EXPECT_EQ(device_peak(), base + top);
    for (int i = 40; i < 64; i++)
        gpumem_free(a[i]);
    for (int i = 0; i < 24; i++)
        gpumem_free(b[i]);
    EXPECT_EQ(device_current(), base);
    EXPECT_EQ(device_peak(), base + top); /* the peak stays after the releases */
}

/* A worker allocates 512 MiB and releases it all, and waits: what it has not flushed yet is
 * missing from the peak another thread reads, within the flush rule's bound. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage;

static void wait_for(int s)
{
    pthread_mutex_lock(&lock);
    while (stage < s)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void move_to(int s)
{
    pthread_mutex_lock(&lock);
    stage = s;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
    (void)arg;
    void *held[256];
    for (int i = 0; i < 256; i++)
        held[i] = gpumem_device_alloc(1, 2 * MIB);
    for (int i = 0; i < 256; i++)
        gpumem_free(held[i]);
    move_to(1);
    wait_for(2);
    return NULL;
}

static void test_other_thread_bound(void)
{
    gpumem_stats_reset_peak();
    uint64_t base = device_current();
    stage = 0;
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, worker, NULL), 0);
    wait_for(1);
    uint64_t top = base + 256 * 2 * MIB;
    EXPECT_EQ(device_current(), base); /* current is the registry's: exact */
    /* One thread's unflushed bytes: at most 4 MiB plus a 32nd of the total it last flushed. */
    uint64_t peak = device_peak(), bound = 4 * MIB + top / 32;
    EXPECT_LE(peak, top);
    EXPECT_GE(peak + bound, top);
    move_to(2);
    pthread_join(t, NULL);
    EXPECT_EQ(device_peak(), top); /* the worker flushed as it ended */
}

int main(void)
{
    gpumem_backend_select("sim");
    RUN(test_one_thread_exact);
    RUN(test_other_thread_bound);
    return harness_exit();
}

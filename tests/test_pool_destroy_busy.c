/* Destroying a pool while another thread is inside a call on it is refused with GPUMEM_EBUSY,
 * naming where the pool was made, instead of freeing the pool under that thread (a hang or a
 * crash at random). Deterministic: the other thread is held inside gpumem_pool_alloc by its
 * error handler (the allocation is over the pool's limit) while this one destroys. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <semaphore.h>
#include <string.h>

#include "backend_arg.h"
#include "gpumem.h"
#include "harness.h"

static gpumem_pool *pool;
static sem_t inside, may_leave;
static pthread_t worker_thread;

static void hold(const gpumem_error *e, void *arg)
{
    (void)arg;
    if (pthread_equal(pthread_self(), worker_thread) && e->code == GPUMEM_ENOMEM) {
        sem_post(&inside);
        sem_wait(&may_leave);
    }
}

static void *worker(void *arg)
{
    (void)arg;
    return gpumem_pool_alloc(pool, 1, 8 << 20, NULL); /* over the 1 MiB limit */
}

static void quiet(const gpumem_error *e, void *arg)
{
    (void)e;
    (void)arg;
}

/* The failing allocation's own handler destroys the pool: refused, and said as what it is,
 * not as another thread. */
static int destroy_status;
static char destroy_message[1024];

static void destroy_here(const gpumem_error *e, void *arg)
{
    (void)arg;
    if (e->code != GPUMEM_ENOMEM)
        return; /* the destroy's own error */
    destroy_status = gpumem_pool_destroy(pool);
    snprintf(destroy_message, sizeof destroy_message, "%s", gpumem_last_error()->message);
}

static void destroy_from_own_handler(int kind)
{
    gpumem_pool_options_t o = {.limit = 1 << 20};
    pool = gpumem_pool_create(kind ? GPUMEM_KIND_PINNED : GPUMEM_KIND_DEVICE, 0, &o);
    ASSERT_NOT_NULL(pool);
    gpumem_set_error_handler(destroy_here, NULL);
    EXPECT_NULL(gpumem_pool_alloc(pool, 1, 8 << 20, NULL)); /* over the limit */
    gpumem_set_error_handler(quiet, NULL);
    EXPECT_EQ(destroy_status, GPUMEM_EBUSY);
    EXPECT_CONTAINS(destroy_message, "called from the error handler of a failing "
                                     "gpumem_pool_alloc on the ");
    EXPECT_CONTAINS(destroy_message, "test_pool_destroy_busy.c:");
    if (strstr(destroy_message, "other thread"))
        EXPECT_STR_EQ(destroy_message, "(no other thread is inside)");
    EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK); /* the call has returned */
}

int main(int argc, char **argv)
{
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    for (int kind = 0; kind < 2; kind++) {
        gpumem_pool_options_t o = {.limit = 1 << 20};
        pool = gpumem_pool_create(kind ? GPUMEM_KIND_PINNED : GPUMEM_KIND_DEVICE, 0, &o);
        if (!pool) {
            fprintf(stderr, "FAIL: cannot make a pool\n");
            return 1;
        }
        sem_init(&inside, 0, 0);
        sem_init(&may_leave, 0, 0);
        gpumem_set_error_handler(hold, NULL);
        pthread_create(&worker_thread, NULL, worker, NULL);
        sem_wait(&inside);
        gpumem_set_error_handler(quiet, NULL);
        EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_EBUSY);
        EXPECT_CONTAINS(gpumem_last_error()->message, "1 other thread is inside a call on the ");
        EXPECT_CONTAINS(gpumem_last_error()->message, "pool made at ");
        EXPECT_CONTAINS(gpumem_last_error()->message, "test_pool_destroy_busy.c:");
        sem_post(&may_leave);
        void *p = (void *)1;
        pthread_join(worker_thread, &p);
        EXPECT_NULL(p);
        EXPECT_EQ(gpumem_pool_destroy(pool), GPUMEM_OK);
        sem_destroy(&inside);
        sem_destroy(&may_leave);
        destroy_from_own_handler(kind);
    }
    return harness_exit();
}

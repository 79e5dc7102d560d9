/* docs/api.md says error handlers may call gpumem. This handler does, on every error: it reads
 * the process's and a pool's statistics, allocates a block from the pool and frees it, frees
 * another block of it, and makes and frees a device allocation. Then the test provokes every
 * error it can reach on the simulated device. A handler called with a lock held deadlocks: the
 * watchdog (alarm) turns that into a failure instead of a hang. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "backend_arg.h"
#include "gpumem.h"
#include "harness.h"

static gpumem_pool *pools[2]; /* device, pinned */
static int calls, depth;

static void reenter(const gpumem_error *err, void *arg)
{
    (void)err;
    (void)arg;
    calls++;
    if (depth++) { /* an error raised by the handler's own calls: no further re-entry */
        depth--;
        return;
    }
    gpumem_stats_t st;
    gpumem_stats(&st);
    gpumem_live live;
    gpumem_live_get(&live);
    for (int i = 0; i < 2; i++) {
        gpumem_pool_stats_t ps;
        gpumem_pool_stats(pools[i], &ps);
        void *b = gpumem_pool_alloc(pools[i], 1, 4096, NULL);
        gpumem_free(b);
    }
    gpumem_free(gpumem_device_alloc(1, 512));
    depth--;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: an error handler that calls gpumem deadlocked\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(2);
}

static void provoke_all(void)
{
    int before = calls;
    /* Pools: destroy with a live block (the handler frees a block of that same pool), a limit
     * that refuses, a NULL pool, an overflow. */
    for (int i = 0; i < 2; i++) {
        void *held = gpumem_pool_alloc(pools[i], 1, 1000, NULL);
        EXPECT_EQ(gpumem_pool_destroy(pools[i]), GPUMEM_EBUSY);
        gpumem_free(held);
    }
    gpumem_pool_options_t small = {.limit = 1 << 20};
    gpumem_pool *limited = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, &small);
    EXPECT_NULL(gpumem_pool_alloc(limited, 1, 4 << 20, NULL));
    EXPECT_EQ(gpumem_pool_destroy(limited), GPUMEM_OK);
    EXPECT_NULL(gpumem_pool_alloc(NULL, 1, 16, NULL));
    EXPECT_NULL(gpumem_pool_alloc(pools[0], SIZE_MAX, 2, NULL));
    /* Releases: double, foreign, interior, of a pool block too. */
    void *p = gpumem_device_alloc(1, 4096);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(p), GPUMEM_EDOUBLEFREE);
    /* The handler's own calls succeeded; the record is still the double free's. */
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EDOUBLEFREE);
    EXPECT_CONTAINS(gpumem_last_error()->message, "double free");
    int local;
    EXPECT_EQ(gpumem_free(&local), GPUMEM_EFOREIGN);
    p = gpumem_device_alloc(1, 4096);
    EXPECT_EQ(gpumem_free((char *)p + 256), GPUMEM_EINTERIOR);
    gpumem_free(p);
    void *b = gpumem_pool_alloc(pools[0], 1, 4096, NULL);
    gpumem_free(b);
    EXPECT_EQ(gpumem_free(b), GPUMEM_EDOUBLEFREE);
    /* Allocations: overflow, out of memory, every kind. */
    EXPECT_NULL(gpumem_device_alloc(SIZE_MAX, 2));
    EXPECT_NULL(gpumem_device_alloc(1, (size_t)1 << 50));
    EXPECT_NULL(gpumem_pinned_alloc(SIZE_MAX, 2));
    EXPECT_NULL(gpumem_managed_alloc(SIZE_MAX, 2, GPUMEM_ATTACH_GLOBAL));
    /* Copies and views. */
    EXPECT_NE(gpumem_copy(NULL, &local, 4), GPUMEM_OK);
    p = gpumem_device_alloc(1, 4096);
    EXPECT_NULL(gpumem_vec_ptr(p, 4, 16));
    gpumem_free(p);
    /* Scopes. */
    gpumem_scope s;
    gpumem_scope_init(&s);
    EXPECT_NE(gpumem_scope_release(&s, &local), GPUMEM_OK);
    gpumem_scope_close(&s);
    EXPECT_GE(calls - before, 14);
}

int main(int argc, char **argv)
{
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    pools[0] = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    pools[1] = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    if (!pools[0] || !pools[1]) {
        fprintf(stderr, "FAIL: cannot make the pools\n");
        return 1;
    }
    signal(SIGALRM, on_alarm);
    alarm(20);
    gpumem_set_error_handler(reenter, NULL);
    provoke_all();
    gpumem_set_error_handler(NULL, NULL);
    alarm(0);
    fprintf(stderr, "the handler ran %d times, calling back into gpumem each time\n", calls);
    EXPECT_EQ(gpumem_pool_destroy(pools[0]), GPUMEM_OK);
    EXPECT_EQ(gpumem_pool_destroy(pools[1]), GPUMEM_OK);
    return harness_exit();
}

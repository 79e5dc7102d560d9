/* Fault injection through pools: GPUMEM_FAIL_ALLOC=N fails the Nth allocation, pool blocks
 * included, for every N until the scenario no longer allocates that many times. Each run is a
 * child process (the option is read once); it must end normally, report the injected failure
 * as out of memory, and leave nothing live, pools destroyed. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "harness.h"

/* Two pools and plain allocations mixed; everything obtained is released on every path. */
static int scenario(void)
{
    gpumem_set_error_handler(capture, NULL);
    gpumem_pool *dev = gpumem_pool_create(GPUMEM_KIND_DEVICE, 0, NULL);
    gpumem_pool *pin = gpumem_pool_create(GPUMEM_KIND_PINNED, 0, NULL);
    void *p[6] = {0};
    int failed = 0;
    if (dev && pin) {
        p[0] = gpumem_pool_alloc(dev, 1, 4096, NULL);
        p[1] = gpumem_device_alloc(1, 4096);
        p[2] = gpumem_pool_alloc(pin, 1, 8192, NULL);
        p[3] = gpumem_pool_alloc(dev, 1, 1 << 20, NULL);
        p[4] = gpumem_pinned_alloc(1, 4096);
        p[5] = gpumem_pool_alloc(pin, 3, 1000, NULL);
        for (int i = 0; i < 6; i++)
            failed |= p[i] == NULL;
    }
    if (failed && (seen.code != GPUMEM_ENOMEM || !strstr(seen.message, "injected by GPUMEM_FAIL_ALLOC=")))
        return 4; /* a failure, but not the injected one */
    for (int i = 0; i < 6; i++)
        gpumem_free(p[i]);
    if ((dev && gpumem_pool_destroy(dev) != GPUMEM_OK) || (pin && gpumem_pool_destroy(pin) != GPUMEM_OK))
        return 5;
    if (live_total() != 0)
        return 3;
    return failed ? 1 : 0;
}

static void test_every_allocation_fails_in_turn(const char *self)
{
    int failures_seen = 0;
    for (int n = 1; n <= 20; n++) {
        pid_t pid = fork();
        if (pid == 0) {
            char value[16];
            snprintf(value, sizeof value, "%d", n);
            setenv("GPUMEM_FAIL_ALLOC", value, 1);
            execl(self, self, "child", (char *)NULL);
            _exit(127);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (code != 0 && code != 1)
            fprintf(stderr, "GPUMEM_FAIL_ALLOC=%d: exit %d\n", n, code);
        EXPECT_TRUE(code == 0 || code == 1);
        if (code == 0)
            break;
        failures_seen++;
    }
    EXPECT_EQ(failures_seen, 6); /* the scenario makes six allocations */
}

int main(int argc, char **argv)
{
    gpumem_backend_select("sim");
    if (argc == 2 && strcmp(argv[1], "child") == 0)
        return scenario();
    test_every_allocation_fails_in_turn(argv[0]);
    return harness_exit();
}

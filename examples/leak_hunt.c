/* Leak hunting with gpumem: a checkpoint around a loop, statistics, and the report at exit.
 *
 *   GPUMEM_BACKEND=sim ./gpumem_leak_hunt                      (no GPU needed)
 *   GPUMEM_LEAK_REPORT=full GPUMEM_BACKTRACE=1 ./gpumem_leak_hunt
 *
 * The loop forgets to release one buffer in every tenth iteration: the early `continue`
 * skips the release. The checkpoint names the call site and the count; the exit report shows
 * the same from the registry alone. */
#include <stdio.h>

#include <gpumem.h>

static int step(int i)
{
    float *scratch = gpumem_device_alloc(1 << 18, sizeof *scratch); /* 1 MiB */
    if (!scratch)
        return -1;
    if (i % 10 == 9)
        return 0; /* the bug: an early exit that skips the release below */ // gpumem-lint: ignore[GM006] the leak this example finds
    gpumem_free(scratch);
    return 0;
}

int main(void)
{
    if (gpumem_init() != GPUMEM_OK && gpumem_backend_select("sim") == GPUMEM_OK)
        printf("no GPU: using the simulated device\n");
    gpumem_checkpoint_t cp = gpumem_checkpoint();
    for (int i = 0; i < 100; i++)
        if (step(i) != 0)
            return 1;
    gpumem_checkpoint_diff_t d;
    gpumem_checkpoint_diff(&cp, stdout, &d);
    printf("\n");
    gpumem_stats_print(stdout);
    printf("\nleaked %llu allocations; the report at exit follows\n",
           (unsigned long long)d.count);
    return 0;
}

/* Fixed allocations for the report tests; golden files name these lines. Keep lines stable. */
#include "gpumem.h"
#include "report_scenario.h"

void scenario_leak(void *keep[6])
{
    for (int i = 0; i < 3; i++)
        keep[i] = gpumem_device_alloc(1, 1 << 20);
    keep[3] = gpumem_pinned_alloc(4096, 1);
    keep[4] = gpumem_managed_alloc(2, 1 << 20, GPUMEM_ATTACH_GLOBAL);
    keep[5] = gpumem_managed_alloc(2, 1 << 20, GPUMEM_ATTACH_GLOBAL);
}

void *scenario_leaky_step(void)
{
    return gpumem_device_alloc(1, 1 << 20);
}

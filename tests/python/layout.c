/* The C side of the Python package's mirrors, as JSON on stdout: the size and each field's
 * offset of the public structs python/gpumem/_lib.py declares again with ctypes, the constants
 * it copies, and the memory kinds of src/kinds.def with the names the library gives them.
 * test_mirror.py compares them with the Python side, so that a struct or a kind added in C and
 * not in Python fails a test instead of reading the wrong bytes. */
#include <stddef.h>
#include <stdio.h>

#include "gpumem.h"
#include "gpumem_python.h"

#define FIELD(type, f) printf("%s\"%s\": %zu", first++ ? ", " : "", #f, offsetof(type, f))

int main(void)
{
    int first = 0;
    printf("{\"kind_count\": %d, \"stats_devices\": %d, \"pool_size_ranges\": %d,\n",
           (int)GPUMEM_KIND_COUNT_, (int)GPUMEM_STATS_DEVICES, (int)GPUMEM_POOL_SIZE_RANGES);
    printf(" \"kinds\": {");
#define KIND(id, value, name) printf("%s\"%d\": \"%s\"", first++ ? ", " : "", value, gpumem_kind_name(value));
#include "kinds.def"
    printf("},\n \"Stats\": {\"size\": %zu, \"fields\": {", sizeof(gpumem_stats_t));
    first = 0;
    FIELD(gpumem_stats_t, bytes);
    FIELD(gpumem_stats_t, count);
    FIELD(gpumem_stats_t, device_bytes);
    FIELD(gpumem_stats_t, device_count);
    printf("}},\n \"PoolStats\": {\"size\": %zu, \"fields\": {", sizeof(gpumem_pool_stats_t));
    first = 0;
    FIELD(gpumem_pool_stats_t, reserved);
    FIELD(gpumem_pool_stats_t, fragmentation);
    FIELD(gpumem_pool_stats_t, peak_requested);
    FIELD(gpumem_pool_stats_t, largest_free);
    FIELD(gpumem_pool_stats_t, cached_by_size);
    FIELD(gpumem_pool_stats_t, free_fragmentation);
    FIELD(gpumem_pool_stats_t, remaps);
    FIELD(gpumem_pool_stats_t, cuda_calls);
    FIELD(gpumem_pool_stats_t, cuda_ns);
    printf("}},\n \"Checkpoint\": {\"size\": %zu}", sizeof(gpumem_checkpoint_t));
    printf(",\n \"Failure\": {\"size\": %zu, \"fields\": {", sizeof(gpumem_python_failure));
    first = 0;
    FIELD(gpumem_python_failure, code);
    FIELD(gpumem_python_failure, message);
    printf("}}}\n");
    return 0;
}

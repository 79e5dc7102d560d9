/* Arrays the registry keeps beside its shards (registry_arrays.c): table memory, and the
 * sorted array of allocations larger than 64 KiB for interior lookups. Thread-safe where said. */
#ifndef GPUMEM_REGISTRY_ARRAYS_H
#define GPUMEM_REGISTRY_ARRAYS_H

#include <stddef.h>
#include <stdint.h>

/* Zeroed memory for a table's array: arrays of 2 MiB or more are mappings of their own,
 * offered transparent huge pages. NULL when out of memory. */
void *gpumem__table_mem(size_t bytes);
/* Releases what gpumem__table_mem gave (bytes as asked), wiping heap arrays first. */
void gpumem__table_mem_free(void *p, size_t bytes);

/* The large allocations (thread-safe): add one, remove the one at base, the base of the one
 * holding a (0: none). An add without host memory for it is dropped: interior lookups of that
 * allocation then miss. */
void gpumem__large_add(uintptr_t base, size_t bytes);
void gpumem__large_remove(uintptr_t base);
uintptr_t gpumem__large_find(uintptr_t a);
/* Calls fn on the array's storage (the leak scan leaves it out). */
void gpumem__large_storage(void (*fn)(const void *p, size_t bytes, void *arg), void *arg);
/* In fork()'s child: the array's lock, started afresh. */
void gpumem__large_at_fork_child(void);

#endif

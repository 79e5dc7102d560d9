/* Where CUDA's host-visible memory lies (pinned, host-alloc, managed, registered): the test
 * that every free(), realloc() and operator delete of the checked program makes first. */
#ifndef GPUMEM_CHECK_HOSTMAP_H
#define GPUMEM_CHECK_HOSTMAP_H

#include <stddef.h>
#include <stdint.h>

/** Counts [base, base + bytes) as holding CUDA host memory. Thread-safe. Returns 0, or -1 when
 *  the map could not grow (no memory): the range is then taken for CUDA memory everywhere,
 *  which is slow for free() but never wrong. */
int check_hostmap_add(uintptr_t base, size_t bytes);

/** Undoes one check_hostmap_add of the same range. Thread-safe. */
void check_hostmap_remove(uintptr_t base, size_t bytes);

/** 0 when no CUDA host memory can lie at p: exact to the map's granule (64 KiB), a few loads
 *  and no lock, whatever CUDA host memory is live elsewhere. 1 when some may: the caller asks
 *  the registry. Async-signal-safe. */
int check_hostmap_may_hold(uintptr_t p);

#endif

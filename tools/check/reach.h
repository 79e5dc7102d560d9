/* gpumem check's leak kinds: a scan of the process's writable memory for pointers into live
 * allocations (reach.c). Nothing here calls CUDA. */
#ifndef GPUMEM_CHECK_REACH_H
#define GPUMEM_CHECK_REACH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uintptr_t lo, hi; /* [lo, hi) */
} check_span;

/* Sets reached[i] to 1 for each target i whose [lo, hi) some aligned pointer-sized word of the
 * process's writable data (the loaded objects' writable segments and the calling thread's
 * thread-local variables) or stacks points into (anywhere inside counts), else to 0. Not read: the heap and other anonymous memory (reach.c says why), the
 * spans in skip (the checker's own records of the allocations), mappings of devices and of
 * the CUDA libraries, pages never touched, on the calling thread's stack what lies below
 * stack_from (0, or anything below the scan's own frame: from the caller's frames up), and on
 * another thread's stack what lies below its stack pointer while it waits in a system call. With
 * found_at, found_at[i] is set to the address of the word that first reached target i. Returns
 * the bytes read, or -1 when the scan could not run (reached is then all 0). */
long long check_reach_scan(const check_span *targets, size_t n, unsigned char *reached,
                           uintptr_t *found_at, const check_span *skip, size_t nskip,
                           uintptr_t stack_from);

#endif

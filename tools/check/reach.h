/* gpumem check's leak kinds: a scan of the process's writable memory for pointers into live
 * allocations (reach.c). Nothing here calls CUDA. */
#ifndef GPUMEM_CHECK_REACH_H
#define GPUMEM_CHECK_REACH_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uintptr_t lo, hi; /* [lo, hi) */
} check_span;

/* Where the word that reached an allocation lies. */
typedef enum {
    CHECK_REACH_DATA = 1, /* a loaded object's data or bss: at names it (dladdr) */
    CHECK_REACH_TLS,      /* the exiting thread's thread-local variables of object */
    CHECK_REACH_STACK     /* a live frame of thread tid's stack */
} check_reach_where;

typedef struct {
    uintptr_t at;       /* the word's address */
    int where;          /* check_reach_where; 0: not reached */
    long tid;           /* STACK, TLS: the thread's id (the process id: the main thread); 0 for a
                         * stack whose thread could not be told (a thread was running) */
    const char *object; /* TLS: the object's path as the loader gives it ("": the program) */
} check_reach_found;

/* Sets reached[i] to 1 for each target i whose [lo, hi) some aligned pointer-sized word of the
 * process's writable data (the loaded objects' writable segments and the calling thread's
 * thread-local variables) or of the live threads' stacks points into (anywhere inside counts),
 * else to 0. Not read: the heap and other anonymous memory (reach.c says why), the spans in
 * skip (the checker's own records of the allocations), mappings of devices and of the CUDA
 * libraries, pages never touched, the stacks of threads that ended (glibc keeps them mapped for
 * the next thread), on the calling thread's stack what lies below stack_from (0, or anything
 * below the scan's own frame: from the caller's frames up), on another thread's stack what
 * lies below its stack pointer, and on the stack that holds stack_to (0: none) what lies at or
 * above it (the start code's frames, above main's). With found, found[i] says where the word
 * that first reached target i lies. Returns the bytes read, or -1 when the scan could not run
 * (reached is then all 0). */
long long check_reach_scan(const check_span *targets, size_t n, unsigned char *reached,
                           check_reach_found *found, const check_span *skip, size_t nskip,
                           uintptr_t stack_from, uintptr_t stack_to);

#endif

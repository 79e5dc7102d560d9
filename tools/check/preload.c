/* gpumem check's host front end, in LD_PRELOAD: free(), realloc() and operator delete of CUDA
 * memory.
 *
 * Pinned or managed memory handed to free() or delete would crash the allocator or corrupt
 * its heap. Here it is reported as a mismatched release and released with the CUDA call that
 * matches it, so that the program runs on and the report covers the whole run. Anything else
 * goes to the real free() at the cost of a few loads (hostmap.c: where CUDA host memory lies).
 * realloc() of such memory is reported the same way and keeps realloc's promise: new memory
 * with the old contents (as much as fits), the old released with its CUDA call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "front.h"
#include "internal.h"

extern void __libc_free(void *p);
extern void *__libc_realloc(void *p, size_t n);

static void (*real_free)(void *);
static void *(*real_realloc)(void *, size_t);
typedef void (*delete_fn)(void *);
typedef void (*sized_delete_fn)(void *, size_t);
static delete_fn real_delete, real_delete_array;
static sized_delete_fn real_delete_sized, real_delete_array_sized;

__attribute__((constructor)) static void resolve(void)
{
    check_tls_busy++; /* dlsym may allocate and free */
    *(void **)(&real_free) = dlsym(RTLD_NEXT, "free");
    *(void **)(&real_realloc) = dlsym(RTLD_NEXT, "realloc");
    *(void **)(&real_delete) = dlsym(RTLD_NEXT, "_ZdlPv");
    *(void **)(&real_delete_array) = dlsym(RTLD_NEXT, "_ZdaPv");
    *(void **)(&real_delete_sized) = dlsym(RTLD_NEXT, "_ZdlPvm");
    *(void **)(&real_delete_array_sized) = dlsym(RTLD_NEXT, "_ZdaPvm");
    check_tls_busy--;
    check_front_preloaded();
}

static void pass_free(void *p)
{
    if (GPUMEM__LIKELY(real_free != NULL))
        real_free(p);
    else
        __libc_free(p); /* before the constructor ran: glibc's own */
}

/* Returns 1 when p was CUDA memory, now reported and released as it should have been. */
static int cuda_memory(const char *call, void *p)
{
    if (!p || check_tls_busy)
        return 0;
    int kind = check_host_free(call, (uintptr_t)p, 0);
    if (kind == 0)
        return 0;
    if (kind > 0)
        check_front_release(kind, p, pass_free);
    /* kind < 0: inside a CUDA allocation, not its start; reported, and left alone. */
    return 1;
}

#define EXPORT __attribute__((visibility("default")))

/* main, wrapped: when it returns, the leak scan learns where the stack's live part begins. The
 * wrapper's name is one the stack module trims as start code (src/backtrace.c). */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void),
                        void *);
static main_fn program_main;

int __gpumem_check_start_main(int argc, char **argv, char **envp);
__attribute__((noinline)) int __gpumem_check_start_main(int argc, char **argv, char **envp)
{
    int rc = program_main(argc, argv, envp);
    check_main_returned((uintptr_t)__builtin_frame_address(0));
    return rc;
}

EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                             void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
    start_fn real;
    *(void **)(&real) = dlsym(RTLD_NEXT, "__libc_start_main");
    program_main = main;
    return real(__gpumem_check_start_main, argc, argv, init, fini, rtld_fini, stack_end);
}

EXPORT void free(void *p);
EXPORT void *realloc(void *p, size_t n);
EXPORT void _ZdlPv(void *p);
EXPORT void _ZdaPv(void *p);
EXPORT void _ZdlPvm(void *p, size_t n);
EXPORT void _ZdaPvm(void *p, size_t n);

void free(void *p)
{
    if (GPUMEM__UNLIKELY(cuda_memory("free", p)))
        return;
    pass_free(p);
}

static void *pass_realloc(void *p, size_t n)
{
    if (GPUMEM__LIKELY(real_realloc != NULL))
        return real_realloc(p, n);
    return __libc_realloc(p, n); /* before the constructor ran: glibc's own */
}

void *realloc(void *p, size_t n)
{
    uintptr_t base = 0;
    size_t bytes = 0;
    if (GPUMEM__LIKELY(!p || check_tls_busy ||
                       check_host_lookup((uintptr_t)p, &base, &bytes) == 0))
        return pass_realloc(p, n);
    if (base != (uintptr_t)p) {
        cuda_memory("realloc", p); /* an interior release: reported, the memory left alone */
        errno = EINVAL;
        return NULL;
    }
    /* New memory first: if there is none, realloc fails and the old memory stays as it was. */
    void *fresh = NULL;
    if (n) {
        fresh = malloc(n);
        if (!fresh)
            return NULL;
        memcpy(fresh, p, n < bytes ? n : bytes);
    }
    cuda_memory("realloc", p);
    return fresh;
}

/* operator delete and delete[], plain and sized: CUDA memory is handled as in free(),
 * anything else goes to the C++ runtime's own (or to free() where there is none). */
static void pass_delete(const char *call, void *p, delete_fn real)
{
    if (cuda_memory(call, p))
        return;
    if (real)
        real(p);
    else
        pass_free(p);
}

static void pass_sized_delete(const char *call, void *p, size_t n, sized_delete_fn real)
{
    if (cuda_memory(call, p))
        return;
    if (real)
        real(p, n);
    else
        pass_free(p);
}

void _ZdlPv(void *p)
{
    pass_delete("operator delete", p, real_delete);
}

void _ZdaPv(void *p)
{
    pass_delete("operator delete[]", p, real_delete_array);
}

void _ZdlPvm(void *p, size_t n)
{
    pass_sized_delete("operator delete", p, n, real_delete_sized);
}

void _ZdaPvm(void *p, size_t n)
{
    pass_sized_delete("operator delete[]", p, n, real_delete_array_sized);
}

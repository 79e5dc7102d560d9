/* Release hooks of the registration cache (regcache.c): free, realloc, reallocarray, munmap,
 * mremap and madvise (and exit, which tells the cache the process is ending), defined here so
 * that the process's calls come to gpumem first, and
 * passed on to the next definition (the C library's, or another allocator's loaded after
 * gpumem). Before memory goes back, a range the cache registered is unregistered; a copy
 * still using it is waited for.
 *
 * The cost while the cache holds nothing: one atomic load per call. While it holds ranges,
 * free and realloc also read the block's size (malloc_usable_size) and compare two bounds;
 * only a block that overlaps the cached ranges' span takes the cache's lock.
 *
 * The next definitions are found with dlsym(RTLD_NEXT) (see resolve_one). Where none is found,
 * a call goes to glibc's own entry (__libc_free, __libc_realloc) or to the system call. Not in
 * sanitizer builds: a sanitizer's runtime calls free before it is initialized itself, and
 * instrumented code cannot run then (src/CMakeLists.txt leaves the hooks out). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

#define HOOK __attribute__((visibility("default")))

extern void __libc_free(void *);
extern void *__libc_realloc(void *, size_t);

static void *_Atomic next_free, *_Atomic next_realloc, *_Atomic next_reallocarray,
    *_Atomic next_munmap, *_Atomic next_mremap, *_Atomic next_madvise, *_Atomic next_exit;

/* The next definitions, found when the library is loaded (before the program runs), or at the
 * first call that comes earlier, from another library's constructor. dlsym frees its thread's
 * last error string, which may be the very block the outer free is releasing: a free (or an
 * unmap) that comes from inside our own dlsym is left undone (a leak of a few bytes, once),
 * and the outer call frees the block once. resolving is volatile because glibc declares dlsym
 * a leaf function, which would let the compiler drop the store. */
static _Thread_local volatile int resolving;

static void *resolve_one(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (f || resolving)
        return f;
    resolving = 1;
    f = dlsym(RTLD_NEXT, name);
    resolving = 0;
    if (f)
        atomic_store_explicit(slot, f, memory_order_release);
    return f;
}

__attribute__((constructor(101))) static void resolve(void)
{
    resolve_one(&next_free, "free");
    resolve_one(&next_realloc, "realloc");
    resolve_one(&next_reallocarray, "reallocarray");
    resolve_one(&next_munmap, "munmap");
    resolve_one(&next_mremap, "mremap");
    resolve_one(&next_madvise, "madvise");
    resolve_one(&next_exit, "exit");
}

/* A symbol's address as a function (ISO C has no cast from an object pointer to one). */
typedef void (*any_fn)(void);
static any_fn as_fn(void *v)
{
    any_fn f;
    memcpy(&f, &v, sizeof f);
    return f;
}

static any_fn next_of(void *_Atomic *slot, const char *name)
{
    return as_fn(resolve_one(slot, name));
}

/* Whether [p, p + n) may overlap what the cache registered (the fast, lock-free test). */
static int watched(uintptr_t a, size_t n)
{
    if (!atomic_load_explicit(&gpumem__regcache_live, memory_order_acquire) ||
        gpumem__regcache_inside())
        return 0;
    uintptr_t end = a + n < a ? UINTPTR_MAX : a + n;
    return a < atomic_load_explicit(&gpumem__regcache_hi, memory_order_acquire) &&
           end > atomic_load_explicit(&gpumem__regcache_lo, memory_order_acquire);
}

static void release_block(void *p)
{
    if (!p || !atomic_load_explicit(&gpumem__regcache_live, memory_order_acquire))
        return;
    size_t n = malloc_usable_size(p);
    if (watched((uintptr_t)p, n))
        gpumem__regcache_release(p, n, 1);
}

HOOK void free(void *p)
{
    release_block(p);
    void (*f)(void *) = (void (*)(void *))next_of(&next_free, "free");
    if (f)
        f(p);
    else if (!resolving)
        __libc_free(p); /* no next definition found: glibc's own */
}

HOOK void *realloc(void *p, size_t n)
{
    release_block(p);
    void *(*f)(void *, size_t) = (void *(*)(void *, size_t))next_of(&next_realloc, "realloc");
    return f ? f(p, n) : __libc_realloc(p, n);
}

HOOK void *reallocarray(void *p, size_t m, size_t n)
{
    release_block(p);
    void *(*f)(void *, size_t, size_t) =
        (void *(*)(void *, size_t, size_t))next_of(&next_reallocarray, "reallocarray");
    if (f)
        return f(p, m, n);
    if (n && m > SIZE_MAX / n) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, m * n);
}

HOOK int munmap(void *a, size_t n)
{
    if (watched((uintptr_t)a, n))
        gpumem__regcache_release(a, n, 0);
    int (*f)(void *, size_t) = (int (*)(void *, size_t))next_of(&next_munmap, "munmap");
    if (!f && resolving)
        return 0; /* from inside our dlsym: left mapped */
    return f ? f(a, n) : (int)syscall(SYS_munmap, a, n);
}

HOOK void *mremap(void *old, size_t old_n, size_t new_n, int flags, ...)
{
    void *to = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        to = va_arg(ap, void *);
        va_end(ap);
    }
    if (watched((uintptr_t)old, old_n))
        gpumem__regcache_release(old, old_n, 0);
    if (to && watched((uintptr_t)to, new_n))
        gpumem__regcache_release(to, new_n, 0);
    void *(*f)(void *, size_t, size_t, int, ...) =
        (void *(*)(void *, size_t, size_t, int, ...))next_of(&next_mremap, "mremap");
    if (f)
        return f(old, old_n, new_n, flags, to);
    return (void *)syscall(SYS_mremap, old, old_n, new_n, flags, to);
}

HOOK int madvise(void *a, size_t n, int advice)
{
    /* The advice that replaces a range's pages (the next touch gets new ones). */
    int drops = advice == MADV_DONTNEED || advice == MADV_REMOVE;
#ifdef MADV_FREE
    drops |= advice == MADV_FREE;
#endif
#ifdef MADV_DONTNEED_LOCKED
    drops |= advice == MADV_DONTNEED_LOCKED;
#endif
    if (drops && watched((uintptr_t)a, n))
        gpumem__regcache_release(a, n, 0);
    int (*f)(void *, size_t, int) =
        (int (*)(void *, size_t, int))next_of(&next_madvise, "madvise");
    return f ? f(a, n, advice) : (int)syscall(SYS_madvise, a, n, advice);
}

static void anchor(void)
{
}

const char *gpumem__reghooks_missing(void)
{
    static const char *const names[] = {"free", "realloc", "reallocarray", "munmap", "mremap",
                                        "madvise"};
    Dl_info me, it;
    if (!dladdr((void *)(uintptr_t)anchor, &me))
        return "free";
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *f = dlsym(RTLD_DEFAULT, names[i]);
        if (!f || !dladdr(f, &it) || it.dli_fbase != me.dli_fbase)
            return names[i];
    }
    return NULL;
}

/* exit: the cache learns that the process is ending before the first exit handler runs, not
 * at its own handler, which runs after every handler registered later than it. A release
 * from those (a C++ destructor, an atexit function) then never calls into the driver: when
 * exit() comes from a signal handler, the thread it interrupted may be inside the driver,
 * holding the driver's lock (measured with the simulated device: 2 children of 45,000 hung in
 * cuMemHostUnregister's lock at such a release before this hook). Where no next definition
 * is found (a fully static program), the exit handlers and the streams are run and flushed
 * by hand, as exit() would. */
extern void __cxa_finalize(void *);

HOOK void exit(int status)
{
    gpumem__regcache_exiting();
    void (*f)(int) = (void (*)(int))next_of(&next_exit, "exit");
    if (f)
        f(status);
    __cxa_finalize(NULL);
    fflush(NULL);
    _exit(status);
}

/* Release hooks of the registration cache (regcache.c): free, realloc, reallocarray, munmap,
 * mremap and madvise, defined here so that the process's calls come to gpumem first, and
 * passed on to the next definition (the C library's, or another allocator's loaded after
 * gpumem). Before memory goes back, a range the cache registered is unregistered; a copy
 * still using it is waited for.
 *
 * The cost while the cache holds nothing: one atomic load per call. While it holds ranges,
 * free and realloc also read the block's size (malloc_usable_size) and compare two bounds;
 * only a block that overlaps the cached ranges' span takes the cache's lock.
 *
 * The next definitions are found with dlsym(RTLD_NEXT) when the library is loaded. A call that
 * comes earlier (from another library's constructor) goes to glibc's own entry (__libc_free,
 * __libc_realloc) or to the system call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
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
    *_Atomic next_munmap, *_Atomic next_mremap, *_Atomic next_madvise;

/* The next definitions, found once when the library is loaded, before the program runs. Never
 * from inside a hook: dlsym frees its thread's last error string, and a free that came from
 * the dynamic loader itself would then free it twice. */
__attribute__((constructor(101))) static void resolve(void)
{
    atomic_store(&next_free, dlsym(RTLD_NEXT, "free"));
    atomic_store(&next_realloc, dlsym(RTLD_NEXT, "realloc"));
    atomic_store(&next_reallocarray, dlsym(RTLD_NEXT, "reallocarray"));
    atomic_store(&next_munmap, dlsym(RTLD_NEXT, "munmap"));
    atomic_store(&next_mremap, dlsym(RTLD_NEXT, "mremap"));
    atomic_store(&next_madvise, dlsym(RTLD_NEXT, "madvise"));
}

/* A symbol's address as a function (ISO C has no cast from an object pointer to one). */
typedef void (*any_fn)(void);
static any_fn as_fn(void *v)
{
    any_fn f;
    memcpy(&f, &v, sizeof f);
    return f;
}

static any_fn next_of(void *_Atomic *slot)
{
    return as_fn(atomic_load_explicit(slot, memory_order_acquire));
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
    void (*f)(void *) = (void (*)(void *))next_of(&next_free);
    if (f)
        f(p);
    else
        __libc_free(p);
}

HOOK void *realloc(void *p, size_t n)
{
    release_block(p);
    void *(*f)(void *, size_t) = (void *(*)(void *, size_t))next_of(&next_realloc);
    return f ? f(p, n) : __libc_realloc(p, n);
}

HOOK void *reallocarray(void *p, size_t m, size_t n)
{
    release_block(p);
    void *(*f)(void *, size_t, size_t) =
        (void *(*)(void *, size_t, size_t))next_of(&next_reallocarray);
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
    int (*f)(void *, size_t) = (int (*)(void *, size_t))next_of(&next_munmap);
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
        (void *(*)(void *, size_t, size_t, int, ...))next_of(&next_mremap);
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
        (int (*)(void *, size_t, int))next_of(&next_madvise);
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

/* LD_PRELOAD library for test_host_oom: the Nth call (FAIL_MALLOC_AT=N) to malloc,
 * calloc, realloc, aligned_alloc, memalign or posix_memalign fails as out of memory, in the
 * process FAIL_MALLOC_PID (when set) only. At exit
 * it says when N was never reached, so the driver knows it has tried every call. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long calls;
static long fail_at = -1;
static pid_t top; /* forked children (which may stop early) do not speak for the program */

__attribute__((constructor)) static void setup(void)
{
    const char *v = getenv("FAIL_MALLOC_AT"), *pid = getenv("FAIL_MALLOC_PID");
    top = getpid();
    /* Only the program itself: not the shells and helpers it runs with the same environment. */
    fail_at = v && (!pid || atol(pid) == (long)top) ? atol(v) : 0;
}

__attribute__((destructor)) static void report(void)
{
    if (fail_at > 0 && atomic_load(&calls) < fail_at && getpid() == top) {
        static const char msg[] = "fail_malloc: never reached\n";
        ssize_t n = write(2, msg, sizeof msg - 1);
        (void)n;
    }
}

static int fail_now(void)
{
    if (fail_at <= 0)
        return 0;
    if (atomic_fetch_add(&calls, 1) + 1 != fail_at)
        return 0;
    errno = ENOMEM;
    return 1;
}

void *malloc(size_t n)
{
    return fail_now() ? NULL : __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
    return fail_now() ? NULL : __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __libc_realloc(p, n);
}
void *aligned_alloc(size_t align, size_t n)
{
    return fail_now() ? NULL : __libc_memalign(align, n);
}
void *memalign(size_t align, size_t n)
{
    return fail_now() ? NULL : __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n)
{
    if (fail_now())
        return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

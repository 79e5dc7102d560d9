/* gpumem check's host front end, in LD_PRELOAD: free(), realloc() and operator delete of CUDA
 * memory, and the ways a process ends without its exit handlers (_exit, _Exit, quick_exit) or
 * replaces its program (the exec family): a process that used CUDA writes its report first.
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
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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
    check_main_entered((uintptr_t)__builtin_frame_address(0));
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

/* ---- the ends exit handlers do not see ----
 *
 * _exit and _Exit end the process without exit handlers, and may be called in a signal
 * handler: the report is the async-signal-safe one made after a fatal signal (engine.h).
 * quick_exit runs its own handlers only. An exec replaces the program, and the CUDA memory
 * goes with it: the report is made first, and the next program, if it uses CUDA, writes its
 * own to files of its own (GPUMEM_CHECK_IMAGE). glibc's own exit() ends in its internal _exit,
 * which no preloaded library sees: exit() is reported by its exit handler. */
EXPORT void _exit(int status);
EXPORT void _Exit(int status);
EXPORT void quick_exit(int status);

__attribute__((noreturn)) static void end_now(int status)
{
    check_front_ending("_exit", status);
    syscall(SYS_exit_group, status);
    for (;;)
        ;
}

void _exit(int status)
{
    end_now(status);
}

void _Exit(int status)
{
    end_now(status);
}

void quick_exit(int status)
{
    check_front_ending("exited", status);
    void (*real)(int);
    *(void **)(&real) = dlsym(RTLD_NEXT, "quick_exit");
    if (real)
        real(status);
    end_now(status);
}

/* The environment for the next program: envp with GPUMEM_CHECK_IMAGE replaced (malloc'd; the
 * strings are envp's), or envp itself when there is no memory. */
static char **next_env(char *const envp[])
{
    const char *image = check_exec_env();
    size_t n = 0, name = (size_t)(strchr(image, '=') - image) + 1;
    while (envp && envp[n])
        n++;
    char **env = malloc((n + 2) * sizeof *env);
    if (!env)
        return (char **)envp;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(envp[i], image, name) != 0)
            env[o++] = envp[i];
    env[o++] = (char *)image;
    env[o] = NULL;
    return env;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* Each exec: report first (when CUDA was used here), then the real call with the next
 * program's environment; if it fails, the process goes on. */
#define EXEC_BODY(real_type, name, call_real)                                                    \
    int ended = check_front_ending("exec", 0);                                               \
    char **env = ended ? next_env(envp) : (char **)envp;                                     \
    real_type real;                                                                          \
    *(void **)(&real) = dlsym(RTLD_NEXT, name);                                              \
    int rc = real ? (call_real) : (errno = ENOSYS, -1);                                      \
    int e = errno;                                                                           \
    if (env != (char **)envp)                                                                \
        free(env);                                                                           \
    if (ended)                                                                               \
        check_front_exec_failed();                                                           \
    errno = e;                                                                               \
    return rc;

EXPORT int execve(const char *path, char *const argv[], char *const envp[]);
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]);
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]);
EXPORT int execv(const char *path, char *const argv[]);
EXPORT int execvp(const char *file, char *const argv[]);
EXPORT int execl(const char *path, const char *arg, ...);
EXPORT int execlp(const char *file, const char *arg, ...);
EXPORT int execle(const char *path, const char *arg, ...);

int execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_BODY(execve_fn, "execve", real(path, argv, env))
}

int execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_BODY(execvpe_fn, "execvpe", real(file, argv, env))
}

int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_BODY(fexecve_fn, "fexecve", real(fd, argv, env))
}

int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* The list forms: their arguments, up to the NULL, as an array on the stack. */
#define EXEC_LIST_MAX 4096
#define COLLECT_ARGS(first, argv, ap)                                                            \
    const char *argv[EXEC_LIST_MAX];                                                         \
    size_t argc_ = 0;                                                                        \
    argv[argc_++] = (first);                                                                 \
    while (argv[argc_ - 1] && argc_ < EXEC_LIST_MAX)                                         \
        argv[argc_++] = va_arg(ap, const char *);                                            \
    if (argv[argc_ - 1]) {                                                                   \
        va_end(ap);                                                                          \
        errno = E2BIG;                                                                       \
        return -1;                                                                           \
    }

int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    COLLECT_ARGS(arg, argv, ap)
    va_end(ap);
    return execve(path, (char *const *)argv, environ);
}

int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    COLLECT_ARGS(arg, argv, ap)
    va_end(ap);
    return execvpe(file, (char *const *)argv, environ);
}

int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    COLLECT_ARGS(arg, argv, ap)
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, (char *const *)argv, envp);
}

/* gpumem check's crash-time report shows the stacks of leaks whose stacks were never shown
 * before: it symbolizes them in a child process, which it waits for at most 2 s.
 *
 * Each round starts three children that leak one device block from planted_leak_site() and
 * then abort(), with the handler the injected library installs (check_finish("signaled"),
 * then the default action):
 *   leak        the log and the JSON report show planted_leak_site;
 *   suppressed  the same with a suppression naming planted_leak_site: the leak is
 *               suppressed (matched against the frames the child symbolized);
 *   heap_held   another thread holds the heap's lock when abort() is called (this program
 *               replaces malloc with a locked wrapper of glibc's), so the symbolizing child
 *               blocks in its first malloc: the report waits 2 s, falls back to "(stack not
 *               shown ...)", and the process still ends by SIGABRT. The report itself must not
 *               allocate either, or it would hang here too.
 * Every child must die of SIGABRT within 5 s.
 *
 * `test_check_crash_stacks [ROUNDS]` (default 20; heap_held runs every 5th round);
 * `test_check_crash_stacks MODE` is a child. Under sanitizers malloc cannot be replaced, so
 * heap_held is left out there. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "gpumem.h"
#include "harness.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HEAP_HELD 0
#else
#define HEAP_HELD 1
/* malloc and calloc, each call under one lock that a thread can hold on purpose: the child's
 * first allocation blocks. free and realloc stay the library's (gpumem defines them for its
 * registration cache, and they pass on to glibc's). */
static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
void *malloc(size_t n);
void *calloc(size_t n, size_t m);
void *malloc(size_t n)
{
    pthread_mutex_lock(&heap_lock);
    void *p = __libc_malloc(n);
    pthread_mutex_unlock(&heap_lock);
    return p;
}
void *calloc(size_t n, size_t m)
{
    pthread_mutex_lock(&heap_lock);
    void *p = __libc_calloc(n, m);
    pthread_mutex_unlock(&heap_lock);
    return p;
}

static int held[2];

static void *hold_heap(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&heap_lock);
    char c = 'h';
    if (write(held[1], &c, 1) != 1)
        _exit(13);
    for (;;)
        pause();
    return NULL;
}
#endif

static void on_fatal(int sig)
{
    check_finish("signaled", sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((noinline)) static void planted_leak_site(void)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, 0x7d0000000000ull, 65536, 0, 0,
                gpumem__stack_capture(0));
    __asm__ volatile("" ::: "memory");
}

static int child(const char *mode)
{
    check_setup();
    planted_leak_site();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(SIGABRT, &sa, NULL);
    if (strcmp(mode, "heap_held") == 0) {
#if HEAP_HELD
        pthread_t t;
        if (pipe(held) != 0 || pthread_create(&t, NULL, hold_heap, NULL) != 0)
            return 11;
        char c;
        if (read(held[0], &c, 1) != 1)
            return 12;
#else
        return 77;
#endif
    }
    abort();
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    ssize_t got = read(fd, buf, n - 1);
    close(fd);
    buf[got > 0 ? got : 0] = '\0';
    return buf;
}

static const char *self;
static char dir[] = "/tmp/gpumem-check-crash-stacks-XXXXXX";
static int hung, odd;
static double worst, slowest_held;

/* Runs one child; returns its pid, or 0 when it did not die of SIGABRT within 5 s. */
static pid_t run_child(const char *mode, int round, double *took)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, mode, (char *)NULL);
        _exit(127);
    }
    double start = now_s();
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && now_s() - start < 5.0) {
        struct timespec d = {0, 1000000};
        nanosleep(&d, NULL);
    }
    *took = now_s() - start;
    worst = *took > worst ? *took : worst;
    if (w == 0) {
        if (++hung <= 3)
            fprintf(stderr, "round %d: %s child %ld hung\n", round, mode, (long)pid);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return 0;
    }
    if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT)) {
        if (++odd <= 3)
            fprintf(stderr, "round %d: %s child ended with status 0x%x\n", round, mode, status);
        return 0;
    }
    return pid;
}

static int contains(const char *path, const char *what)
{
    static char buf[1 << 16];
    const char *r = slurp(path, buf, sizeof buf);
    return r && strstr(r, what) != NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1 && (argv[1][0] < '0' || argv[1][0] > '9'))
        return child(argv[1]);
    self = argv[0];
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    if (!mkdtemp(dir))
        return 1;
    char pattern[128], path[256];
    snprintf(pattern, sizeof pattern, "%s/log.%%p", dir);
    setenv("GPUMEM_CHECK_LOG", pattern, 1);
    snprintf(pattern, sizeof pattern, "%s/json.%%p", dir);
    setenv("GPUMEM_CHECK_JSON", pattern, 1);
    setenv("GPUMEM_CHECK_STACKS", "1", 1);
#ifdef __SANITIZE_THREAD__
    /* The report's symbolizing child is a process of its own, free to allocate; to
     * ThreadSanitizer its malloc is still a call inside the signal handler. */
    {
        const char *t = getenv("TSAN_OPTIONS");
        char opts[1024];
        snprintf(opts, sizeof opts, "%s%sreport_signal_unsafe=0", t ? t : "", t && *t ? ":" : "");
        setenv("TSAN_OPTIONS", opts, 1);
    }
#endif
    int shown = 0, shown_json = 0, suppressed = 0, fell_back = 0, held_rounds = 0;
    for (int round = 0; round < rounds; round++) {
        double took;
        unsetenv("GPUMEM_CHECK_SUPPRESSIONS");
        pid_t pid = run_child("leak", round, &took);
        if (pid) {
            snprintf(path, sizeof path, "%s/log.%ld", dir, (long)pid);
            int ok = contains(path, "still live at exit\n") &&
                     contains(path, "planted_leak_site (") &&
                     !contains(path, "stack not shown") &&
                     contains(path, "ERROR SUMMARY: 1 error (1 leak), 0 suppressed\n");
            shown += ok;
            if (!ok && shown + 3 > round)
                fprintf(stderr, "round %d: the log does not show planted_leak_site:\n%s", round,
                        slurp(path, (char[1 << 16]){0}, 1 << 16));
            unlink(path);
            snprintf(path, sizeof path, "%s/json.%ld", dir, (long)pid);
            shown_json += contains(path, "\"alloc_stack\": [{\"function\": \"planted_leak_site\"");
            unlink(path);
        }

        snprintf(path, sizeof path, "%s/supp", dir);
        FILE *f = fopen(path, "w");
        fprintf(f, "{\n   planted\n   gpumem:leak\n   fun:planted_leak_site\n}\n");
        fclose(f);
        setenv("GPUMEM_CHECK_SUPPRESSIONS", path, 1);
        pid = run_child("suppressed", round, &took);
        unsetenv("GPUMEM_CHECK_SUPPRESSIONS");
        if (pid) {
            snprintf(path, sizeof path, "%s/log.%ld", dir, (long)pid);
            suppressed += contains(path, "used suppression:      1 planted\n") &&
                          contains(path, "ERROR SUMMARY: 0 errors (0 leaks), 1 suppressed\n");
            unlink(path);
            snprintf(path, sizeof path, "%s/json.%ld", dir, (long)pid);
            suppressed += contains(path, "\"suppressed\": \"planted\"") &&
                          contains(path, "\"summary\": {\"errors\": 0, \"leaks\": 0");
            unlink(path);
        }
        snprintf(path, sizeof path, "%s/supp", dir);
        unlink(path);

        if (!HEAP_HELD || round % 5 != 0)
            continue;
        held_rounds++;
        pid = run_child("heap_held", round, &took);
        if (pid) {
            slowest_held = took > slowest_held ? took : slowest_held;
            snprintf(path, sizeof path, "%s/log.%ld", dir, (long)pid);
            int ok = contains(path, "(stack not shown: it cannot be symbolized safely while "
                                    "the process is ending by a signal)\n") &&
                     contains(path, "ERROR SUMMARY: 1 error (1 leak), 0 suppressed\n");
            fell_back += ok;
            if (!ok)
                fprintf(stderr, "round %d: heap_held log:\n%s", round,
                        slurp(path, (char[1 << 16]){0}, 1 << 16));
            unlink(path);
            snprintf(path, sizeof path, "%s/json.%ld", dir, (long)pid);
            unlink(path);
            /* the bound cut it: the child was waited for, not killed at once */
            EXPECT_GE(took * 1000, 1900);
        }
    }
    rmdir(dir);
    fprintf(stderr,
            "%d rounds: %d hung, %d odd exits; stack shown %d (JSON %d), suppressed %d of %d; "
            "heap held: fell back %d of %d, slowest %.3f s; slowest child %.3f s\n",
            rounds, hung, odd, shown, shown_json, suppressed, 2 * rounds, fell_back,
            held_rounds, slowest_held, worst);
    EXPECT_EQ(hung, 0);
    EXPECT_EQ(odd, 0);
    EXPECT_EQ(shown, rounds);
    EXPECT_EQ(shown_json, rounds);
    EXPECT_EQ(suppressed, 2 * rounds);
    EXPECT_EQ(fell_back, held_rounds);
    EXPECT_LE(slowest_held * 1000, 4000); /* 2 s of waiting, on a loaded 2-core machine */
    return harness_exit();
}

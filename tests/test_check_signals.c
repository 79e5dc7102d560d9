/* gpumem check's crash-time report under signals: a child feeds the engine allocations and
 * releases from two threads and prints progress, the parent sends SIGTERM at a random moment,
 * and the child's handler does what the injected library's does (check_finish("signaled"),
 * then the default action). Every child must die of its signal within a bound, and its log
 * must end with the error summary.
 *
 * With GPUMEM_CHECK_STACKS=1 the allocations carry stacks that were never shown, so the report
 * symbolizes the leaks' stack in a child process of its own, at whatever point the signal
 * landed: the log must show it (a frame in child()) or say it was not shown, and the 4 s bound
 * holds with the 2 s the report may wait for that child.
 *
 * With CHECK_SIGNAL_EXIT=1 the handler calls exit(7) instead, as programs' handlers do, and the
 * report is the exit's (gpumem check's on_exit handler): the signal may have interrupted the
 * engine on the main thread holding its own locks, so the report must not wait for them; every
 * child must exit 7 within the bound, its log ending with the error summary.
 *
 * `test_check_signals [ROUNDS]` (default 300); `test_check_signals child` is the child. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "gpumem.h"
#include "child_rounds.h"
#include "harness.h"

static void on_fatal(int sig)
{
    check_finish("signaled", sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

static int stacks;
static int exit_mode; /* CHECK_SIGNAL_EXIT=1: the handler calls exit() */

static void on_term_exit(int sig)
{
    (void)sig;
    exit(7);
}

static void report_at_exit(int status, void *arg)
{
    (void)arg;
    check_finish("exited", status);
}

static void churn(uintptr_t base)
{
    check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, base, 4096, 0, 0,
                stacks ? gpumem__stack_capture(0) : 0);
    if (check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, base, 0) == CHECK_GO)
        check_release_end(base, 1);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;)
        churn(0x7e0000000000ull);
    return NULL;
}

static int child(void)
{
    check_setup();
    stacks = strcmp(getenv("GPUMEM_CHECK_STACKS"), "0") != 0;
    for (int i = 0; i < 3; i++) /* these stay live: leaks at the end */
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, 0x7d0000000000ull + (uintptr_t)i * 65536,
                    1 << 20, 0, 0, stacks ? gpumem__stack_capture(0) : 0);
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 11;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = exit_mode ? on_term_exit : on_fatal;
    sigaction(SIGTERM, &sa, NULL);
    if (exit_mode)
        on_exit(report_at_exit, NULL);
    /* The stream and its buffer exist before the parent may signal: the signal lands in the
     * engine or in the program's printing, never in the program's malloc. A handler's exit()
     * from inside malloc is beyond any exit handler that allocates (docs/reliability.md). */
    FILE *noise = fopen("/dev/null", "w");
    static char noise_buf[BUFSIZ];
    if (!noise || setvbuf(noise, noise_buf, _IOFBF, sizeof noise_buf) != 0)
        return 13;
    if (write(STDOUT_FILENO, "r", 1) != 1)
        return 12;
    for (unsigned long i = 0;; i++) {
        churn(0x7c0000000000ull);
        fprintf(noise, "progress %lu\n", i);
        if (i % 16 == 0)
            fflush(noise);
    }
}

int main(int argc, char **argv)
{
    exit_mode = getenv("CHECK_SIGNAL_EXIT") && strcmp(getenv("CHECK_SIGNAL_EXIT"), "1") == 0;
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child();
    int rounds = argc > 1 ? atoi(argv[1]) : 300;
    char dir[] = "/tmp/gpumem-check-signals-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char log[128];
    snprintf(log, sizeof log, "%s/log.%%p", dir);
    setenv("GPUMEM_CHECK_LOG", log, 1);
    char json[128];
    snprintf(json, sizeof json, "%s/json.%%p", dir);
    setenv("GPUMEM_CHECK_JSON", json, 1);
    setenv("GPUMEM_CHECK_STACKS", "0", 0);
    stacks = strcmp(getenv("GPUMEM_CHECK_STACKS"), "0") != 0;
    int shown = 0, not_shown = 0;
#ifdef __SANITIZE_THREAD__
    /* The report's symbolizing child is a process of its own, free to allocate; to
     * ThreadSanitizer its malloc is still a call inside the signal handler. */
    {
        const char *t = getenv("TSAN_OPTIONS");
        char opts[1024];
        snprintf(opts, sizeof opts, "%s%sreport_signal_unsafe=0", t ? t : "", t && *t ? ":" : "");
        setenv("TSAN_OPTIONS", opts, 1);
    }
    if (stacks)
        rounds = (rounds + 4) / 5; /* symbolizing takes the child about 1 s under TSan */
#endif
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int hung = 0, broken = 0, odd = 0;
    double worst = 0;
    for (int round = 0; round < rounds; round++) {
        int ready;
        pid_t pid = rounds_start(argv[0], &ready);
        if (pid < 0)
            return 1;
        kill(pid, SIGTERM);
        int status;
        double took;
        int ended = rounds_wait(pid, 5.0, &status, &took);
        worst = took > worst ? took : worst;
        char path[256];
        snprintf(path, sizeof path, "%s/log.%ld", dir, (long)pid);
        if (!ended) {
            if (hung == 0)
                rounds_show_stacks(pid);
            if (++hung <= 3)
                fprintf(stderr, "round %d: child %ld hung in its crash report\n", round,
                        (long)pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        } else if (exit_mode) {
            const char *r = rounds_slurp(path);
            if (!(WIFEXITED(status) && WEXITSTATUS(status) == 7)) {
                if (++odd <= 3)
                    fprintf(stderr, "round %d: child ended with status 0x%x\n", round, status);
            } else if ((!r || !strstr(r, "ERROR SUMMARY: ") || r[strlen(r) - 1] != '\n') &&
                       ++broken <= 3) {
                fprintf(stderr, "round %d: log not whole:\n---\n%s---\n", round, r ? r : "(none)\n");
            }
            snprintf(path, sizeof path, "%s/json.%ld", dir, (long)pid);
            unlink(path);
            snprintf(path, sizeof path, "%s/log.%ld", dir, (long)pid);
        } else if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM)) {
            if (++odd <= 3)
                fprintf(stderr, "round %d: child ended with status 0x%x\n", round, status);
        } else {
            const char *r = rounds_slurp(path);
            int whole = r && strstr(r, "Process terminating with the default action of signal "
                                       "15 (SIGTERM)") &&
                        strstr(r, "LEAK SUMMARY: ") &&
                        strstr(r, "ERROR SUMMARY: ") && r[strlen(r) - 1] == '\n';
            int incomplete = r && strstr(r, "report incomplete:") && strstr(r, "ERROR SUMMARY: ");
            if (!whole && !incomplete && ++broken <= 3)
                fprintf(stderr, "round %d: log not whole:\n---\n%s---\n", round,
                        r ? r : "(none)\n");
            if (stacks && r && strstr(r, "still live at exit\n")) {
                int here = strstr(r, "   at child (") != NULL;
                int said = strstr(r, "   (stack not shown: ") != NULL;
                shown += here;
                not_shown += said;
                if (here == said && ++broken <= 3)
                    fprintf(stderr, "round %d: the leak's stack neither shown nor said not to "
                                    "be:\n---\n%s---\n", round, r);
            }
            snprintf(path, sizeof path, "%s/json.%ld", dir, (long)pid);
            r = rounds_slurp(path);
            if ((!r || !strstr(r, "\"status\": \"signaled\", \"signal\": 15") ||
                 !strstr(r, "{\"kind\": \"leak\", \"alloc_call\": \"cudaMalloc\"") ||
                 strcmp(r + strlen(r) - 2, "}\n") != 0) &&
                ++broken <= 3)
                fprintf(stderr, "round %d: JSON not whole:\n---\n%s---\n", round,
                        r ? r : "(none)\n");
            unlink(path);
            snprintf(path, sizeof path, "%s/log.%ld", dir, (long)pid);
        }
        unlink(path);
    }
    rmdir(dir);
    fprintf(stderr, "%d rounds: %d hung, %d logs not whole, %d odd exits; slowest %.3f s\n",
            rounds, hung, broken, odd, worst);
    if (stacks) {
        fprintf(stderr, "leak stacks: %d shown, %d not shown\n", shown, not_shown);
        EXPECT_GE(shown, 1);
    }
    EXPECT_EQ(hung, 0);
    EXPECT_EQ(broken, 0);
    EXPECT_EQ(odd, 0);
    EXPECT_LE(worst * 1000, 4000); /* seconds on a loaded 2-core machine */
    return harness_exit();
}

/* Running the analyzer: one clang process per translation unit, -j at a time, each with a
 * deadline, its SARIF written to a private temporary folder and its stderr kept for the
 * first error. Results land in the unit's slot, so the report does not depend on -j or on
 * which process finished first. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"
#include "analyzer/engine-config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#ifndef GPUMEM_LINT_PRELUDE_INSTALLED
#define GPUMEM_LINT_PRELUDE_INSTALLED ""
#endif
#ifndef GPUMEM_LINT_PRELUDE_SOURCE
#define GPUMEM_LINT_PRELUDE_SOURCE ""
#endif

/** cuda-prelude.h (nvcc's value of __CUDACC__), where it is installed or in the source tree;
 *  NULL when neither is there. */
static const char *cuda_prelude(void)
{
    const char *cands[] = {GPUMEM_LINT_PRELUDE_INSTALLED, GPUMEM_LINT_PRELUDE_SOURCE};
    for (size_t i = 0; i < 2; i++)
        if (cands[i][0] && access(cands[i], R_OK) == 0)
            return cands[i];
    return NULL;
}

/* Clang's checkers that are off (engine-config.h says which and why); the results of those
 * that stay are dropped with every result that is not a gpumem checker's. */
#define LINT_DISABLED "-analyzer-disable-checker=" GPUMEM_LINT_DISABLED_CHECKERS

static void add_xclang(struct lint_strlist *a, const char *arg)
{
    lint_strlist_add(a, "-Xclang");
    lint_strlist_add(a, arg);
}

static void add_config(struct lint_strlist *a, const char *key, const struct lint_strlist *vals)
{
    if (!vals->n)
        return;
    size_t n = strlen(key) + 2;
    for (size_t i = 0; i < vals->n; i++)
        n += strlen(vals->v[i]) + 1;
    char *s = malloc(n);
    if (!s)
        return;
    size_t k = (size_t)snprintf(s, n, "%s=", key);
    for (size_t i = 0; i < vals->n; i++)
        k += (size_t)snprintf(s + k, n - k, "%s%s", i ? "," : "", vals->v[i]);
    add_xclang(a, "-analyzer-config");
    add_xclang(a, s);
    free(s);
}

/* What GCC 12 (nvcc's host compiler here) and nvcc's front end warn about and clang 22 stops
 * at, by language: old C's implicit declarations, implicit int and loose pointer conversions,
 * C++17's `register`, and C++98's string literal followed by a macro with no space between
 * ("%"PRIu64, a user-defined literal suffix to C++11: GCC warns and expands the macro, and so
 * does clang when the error is a warning). Given before the user's flags, which can make them
 * errors again (GCC 14 and later stop at the C ones too). */
static const struct {
    const char *lang, *flag;
} lenient[] = {
    {"c", "-Wno-error=implicit-function-declaration"},
    {"c", "-Wno-error=implicit-int"},
    {"c", "-Wno-error=incompatible-pointer-types"},
    {"c", "-Wno-error=int-conversion"},
    {"c++", "-Wno-register"},
    {"c++", "-Wno-error=reserved-user-defined-literal"},
    {"cuda", "-Wno-register"},
    {"cuda", "-Wno-error=reserved-user-defined-literal"},
};

static void lenient_flags(const char *lang, struct lint_strlist *a)
{
    for (size_t i = 0; i < sizeof lenient / sizeof lenient[0]; i++)
        if (strcmp(lenient[i].lang, lang) == 0)
            lint_strlist_add(a, lenient[i].flag);
}

/** CUDA's flags for a host-only analysis, the cuda-prelude.h included first. */
static void cuda_flags(const char *cuda, struct lint_strlist *a)
{
    char buf[4200];
    lint_strlist_add(a, "--cuda-host-only");
    if (cuda) {
        snprintf(buf, sizeof buf, "--cuda-path=%s", cuda);
        lint_strlist_add(a, buf);
    }
    lint_strlist_add(a, "-nocudalib");
    lint_strlist_add(a, "-Wno-unknown-cuda-version");
    /* A launch from device code needs relocatable device code, as with nvcc -rdc=true;
     * for host-side analysis it changes nothing else (measured on tests/lint/corpus). */
    lint_strlist_add(a, "-fgpu-rdc");
    /* Errors in device code are reported only where that code is emitted, never in a
     * host-only run. Clang sees a __host__ and a __device__ function of one name as two
     * overloads, so a kernel that calls one declared for the host and defined for the
     * device later (nvcc takes the later definition) stops clang at once: "no matching
     * function" (XSBench, RSBench, gpp). Only host code is analyzed. */
    lint_strlist_add(a, "-fgpu-defer-diag");
    const char *prelude = cuda_prelude();
    if (prelude) {
        lint_strlist_add(a, "-include");
        lint_strlist_add(a, prelude);
    }
}

/** The unit's own flags and the user's, then CUDA's include folder. Include folders are
 *  searched in the order given: the user's flags, then (without a database) the folders
 *  derived from the tree, then CUDA's. A database's flags are the unit's own and come before
 *  the user's, as clang-tidy has them. */
static void include_flags(const struct lint_run *r, const struct lint_unit *u, const char *cuda,
                          int cu, struct lint_strlist *a)
{
    char buf[4200];
    const struct lint_strlist *lead = u->from_db ? &u->args : &r->extra;
    const struct lint_strlist *rest = u->from_db ? &r->extra : &u->args;
    for (size_t i = 0; i < lead->n; i++)
        lint_strlist_add(a, lead->v[i]);
    for (size_t i = 0; i < rest->n; i++)
        lint_strlist_add(a, rest->v[i]);
    if (cu && cuda) {
        /* A system folder, as nvcc has it: CUB's and Thrust's code is a library's. */
        snprintf(buf, sizeof buf, "%s/include/cccl", cuda);
        lint_strlist_add(a, "-isystem");
        lint_strlist_add(a, buf);
    } else if (!cu && cuda && strcmp(cuda, "/usr") != 0) {
        /* Host code that includes cuda_runtime.h, as nvcc and CMake's CUDA::cudart give it. */
        snprintf(buf, sizeof buf, "%s/include", cuda);
        lint_strlist_add(a, "-isystem");
        lint_strlist_add(a, buf);
    }
}

/** The checkers to run: all of gpumem's, or the enabled ones by name. */
static void checker_flags(const struct lint_options *o, struct lint_strlist *a)
{
    char buf[4200];
    int all = 1;
    for (int k = 0; k < LINT_RULE_COUNT; k++)
        all &= o->enabled[k];
    if (all) {
        add_xclang(a, "-analyzer-checker=gpumem");
        return;
    }
    size_t k = (size_t)snprintf(buf, sizeof buf, "-analyzer-checker=");
    int first = 1;
    for (int rr = 0; rr < LINT_RULE_COUNT; rr++)
        if (o->enabled[rr]) {
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", first ? "" : ",",
                                  lint_rules[rr].checker);
            first = 0;
        }
    if (!first)
        add_xclang(a, buf);
}

/** The facts files of gpumem.Memory, which is loaded only with a rule of its family. */
static void facts_flags(const struct lint_options *o, const char *facts_out,
                        const char *facts_in, struct lint_strlist *a)
{
    int memory = 0;
    for (int rr = 0; rr < LINT_RULE_COUNT; rr++)
        memory |= o->enabled[rr] && lint_rules[rr].memory;
    if (!memory)
        facts_out = facts_in = NULL;
    struct lint_strlist one = {0};
    if (facts_out && lint_strlist_add(&one, facts_out) == 0)
        add_config(a, "gpumem.Memory:FactsOut", &one);
    lint_strlist_free(&one);
    if (facts_in && lint_strlist_add(&one, facts_in) == 0)
        add_config(a, "gpumem.Memory:FactsIn", &one);
    lint_strlist_free(&one);
}

/** The plugin, its checkers and their options. */
static void plugin_flags(const struct lint_options *o, const struct lint_run *r,
                         const char *facts_out, const char *facts_in, struct lint_strlist *a)
{
    add_xclang(a, "-load");
    add_xclang(a, r->plugin);
    checker_flags(o, a);
    add_xclang(a, LINT_DISABLED);
    add_xclang(a, "-analyzer-config");
    add_xclang(a, GPUMEM_LINT_ENGINE_CONFIG);
    add_config(a, "gpumem.Memory:ReleaseFunctions", &o->release_fns);
    add_config(a, "gpumem.Memory:OwnerFunctions", &o->owner_fns);
    if (o->noreturn_fns.n) {
        /* Added to the plugin's own list, which the option would otherwise replace. */
        struct lint_strlist fns = {0};
        lint_strlist_add_split(&fns, "error fatal fatal_error die panic");
        for (size_t i = 0; i < o->noreturn_fns.n; i++)
            lint_strlist_add(&fns, o->noreturn_fns.v[i]);
        add_config(a, "gpumem.Memory:NoReturnFunctions", &fns);
        lint_strlist_free(&fns);
    }
    add_config(a, "gpumem.UncheckedStatus:LaunchChecks", &o->launch_checks);
    if (o->pedantic) {
        add_xclang(a, "-analyzer-config");
        add_xclang(a, "gpumem.VectorAlignment:Pedantic=true");
    }
    facts_flags(o, facts_out, facts_in, a);
}

void lint_unit_argv(const struct lint_options *o, const struct lint_run *r,
                    const struct lint_unit *u, const char *sarif_out, const char *facts_out,
                    const char *facts_in, struct lint_strlist *a)
{
    const char *cuda = lint_cuda_root();
    lint_strlist_add(a, r->clang);
    lint_strlist_add(a, "--analyze");
    lint_strlist_add(a, "-x");
    lint_strlist_add(a, u->lang);
    int cu = strcmp(u->lang, "cuda") == 0;
    if (cu)
        cuda_flags(cuda, a);
    lenient_flags(u->lang, a);
    include_flags(r, u, cuda, cu, a);
    if (r->plugin)
        plugin_flags(o, r, facts_out, facts_in, a);
    lint_strlist_add(a, "--analyzer-output");
    lint_strlist_add(a, "sarif");
    lint_strlist_add(a, "-o");
    lint_strlist_add(a, sarif_out);
    lint_strlist_add(a, u->abs);
}

struct slot {
    pid_t pid;
    size_t unit;
    double start;
};

/** Clang's first error line in @p err ("file:line:col: error: ..."), malloc'd, or NULL. */
static char *first_error(const char *err)
{
    for (const char *p = err; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        int hit = 0;
        for (size_t k = 0; k + 7 <= n && !hit; k++)
            hit = memcmp(p + k, "error: ", 7) == 0;
        if (hit) {
            char *s = malloc(n + 1);
            if (s) {
                memcpy(s, p, n);
                s[n] = '\0';
            }
            return s;
        }
        p = eol ? eol + 1 : NULL;
    }
    return NULL;
}

static void collect(const char *tmp, size_t i, int wstatus, int timed_out, int timeout,
                    struct lint_unit_result *res)
{
    char path[4200], why_buf[128];
    const char *why;
    char *err = NULL, *sarif = NULL;
    size_t len;
    snprintf(path, sizeof path, "%s/%zu.err", tmp, i);
    if (lint_read_file(path, (size_t)16 << 20, &err, &len, &why, why_buf, sizeof why_buf) != 0)
        err = NULL;
    unlink(path);
    snprintf(path, sizeof path, "%s/%zu.sarif", tmp, i);
    if (lint_read_file(path, (size_t)1 << 30, &sarif, &len, &why, why_buf, sizeof why_buf) == 0) {
        res->sarif = sarif;
        res->sarif_len = len;
    }
    unlink(path);
    char msg[160];
    if (timed_out) {
        res->status = 1;
        snprintf(msg, sizeof msg, "timed out after %d s (raise --timeout)", timeout);
        res->error = strdup(msg);
    } else if (WIFSIGNALED(wstatus)) {
        res->status = 1;
        snprintf(msg, sizeof msg, "the analyzer crashed (signal %d)", WTERMSIG(wstatus));
        res->error = strdup(msg);
    } else if (WEXITSTATUS(wstatus) != 0 || !res->sarif) {
        res->status = 1;
        if (err && strstr(err, "unable to load plugin"))
            res->status = 2;
        res->error = first_error(err);
        if (!res->error) {
            snprintf(msg, sizeof msg, "the analyzer failed (exit status %d) without an error "
                                      "message",
                     WEXITSTATUS(wstatus));
            res->error = strdup(msg);
        }
    }
    free(err);
}

/** Removes the temporary folder and what is left in it. */
static void remove_tmp(const char *tmp, size_t n)
{
    char path[4200];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%zu.err", tmp, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/%zu.sarif", tmp, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/%zu.facts", tmp, i);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/facts", tmp);
    unlink(path);
    rmdir(tmp);
}

static pid_t spawn(const struct lint_options *o, const struct lint_run *r,
                   const struct lint_unit *u, const char *tmp, size_t i, const char *facts_in)
{
    char out[4200], err[4200], facts[4200];
    snprintf(out, sizeof out, "%s/%zu.sarif", tmp, i);
    snprintf(err, sizeof err, "%s/%zu.err", tmp, i);
    snprintf(facts, sizeof facts, "%s/%zu.facts", tmp, i);
    struct lint_strlist argv = {0};
    lint_unit_argv(o, r, u, out, facts_in ? NULL : facts, facts_in, &argv);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    pid_t pid = -1;
    int rc = argv.v ? posix_spawnp(&pid, argv.v[0], &fa, NULL, argv.v, environ) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    lint_strlist_free(&argv);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

/* Ctrl-C, a SIGTERM or a hang-up while units are analysed: the clang processes started are
 * stopped and the temporary folder removed, then the signal takes its course. */
static volatile sig_atomic_t stop_signal;
static const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

static void catch_stop_signals(struct sigaction old[3])
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal; /* no SA_RESTART: the waits below end early */
    sigemptyset(&sa.sa_mask);
    for (int k = 0; k < 3; k++) {
        sigaction(stop_signals[k], NULL, &old[k]);
        if (old[k].sa_handler != SIG_IGN) /* nohup and background jobs keep theirs ignored */
            sigaction(stop_signals[k], &sa, NULL);
    }
}

static void restore_stop_signals(const struct sigaction old[3])
{
    for (int k = 0; k < 3; k++)
        sigaction(stop_signals[k], &old[k], NULL);
}

/* Stops every clang still running (TERM, then KILL after a second), removes the folder, and
 * dies of the signal that asked for it, with its default action. */
static void stop_all(struct slot *run, int jobs, const char *tmp, size_t n,
                     const struct sigaction old[3])
{
    for (int k = 0; k < jobs; k++)
        if (run[k].pid)
            kill(run[k].pid, SIGTERM);
    double t0 = lint_now();
    for (int k = 0; k < jobs; k++) {
        while (run[k].pid && waitpid(run[k].pid, NULL, WNOHANG) == 0 && lint_now() - t0 < 1.0) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (run[k].pid && waitpid(run[k].pid, NULL, WNOHANG) == 0) {
            kill(run[k].pid, SIGKILL);
            waitpid(run[k].pid, NULL, 0);
        }
    }
    remove_tmp(tmp, n);
    restore_stop_signals(old);
    fprintf(stderr, "\ngpumem lint: stopped by signal %d; the clang processes it started are "
                    "gone, and so is its temporary folder\n",
            (int)stop_signal);
    raise((int)stop_signal);
}

/** One pass: runs the analyzer on the units @p todo marks, o->jobs at a time, into their
 *  slots of @p res; with @p facts_in, the other units' facts are given to each. */
static void run_pass(const struct lint_options *o, const struct lint_run *r,
                     const struct lint_units *u, const unsigned char *todo, const char *tmp,
                     const char *facts_in, struct slot *run, int jobs,
                     const struct sigaction old[3], struct lint_unit_result *res)
{
    size_t next = 0, done = 0, started = 0, total = 0;
    int active = 0;
    for (size_t i = 0; i < u->n; i++)
        total += todo[i];
    done = u->n - total;
    while (done < u->n) {
        if (stop_signal)
            stop_all(run, jobs, tmp, u->n, old);
        while (active < jobs && next < u->n) {
            size_t i = next++;
            if (!todo[i])
                continue;
            started++;
            if (r->progress) {
                fprintf(stderr, "\r\033[K[%zu/%zu]%s %s", started, total,
                        facts_in ? " again, with other files' facts:" : "", u->v[i].path);
                fflush(stderr);
            }
            double t0 = lint_now();
            pid_t pid = spawn(o, r, &u->v[i], tmp, i, facts_in);
            if (pid < 0) {
                res[i].status = 1;
                char buf[600];
                snprintf(buf, sizeof buf, "cannot start %s: %s", r->clang, strerror(errno));
                res[i].error = strdup(buf);
                done++;
                continue;
            }
            for (int k = 0; k < jobs; k++)
                if (!run[k].pid) {
                    run[k] = (struct slot){pid, i, t0};
                    break;
                }
            active++;
        }
        int reaped = 0;
        for (int k = 0; k < jobs; k++) {
            if (!run[k].pid)
                continue;
            int st = 0, timed_out = 0;
            pid_t w = waitpid(run[k].pid, &st, WNOHANG);
            if (w == 0 && lint_now() - run[k].start > o->timeout) {
                kill(run[k].pid, SIGKILL);
                while (waitpid(run[k].pid, &st, 0) < 0 && errno == EINTR)
                    ;
                timed_out = 1;
                w = run[k].pid;
            }
            if (w == 0 || (w < 0 && errno == EINTR))
                continue;
            size_t i = run[k].unit;
            res[i].seconds += lint_now() - run[k].start;
            if (w < 0)
                st = 127 << 8;
            collect(tmp, i, st, timed_out, o->timeout, &res[i]);
            run[k].pid = 0;
            active--;
            done++;
            reaped = 1;
        }
        if (!reaped && active) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

/** The second pass (facts.c): the units that call functions other units define, analyzed
 *  again with those functions' facts. A unit whose second analysis fails keeps the first. */
static void run_with_facts(const struct lint_options *o, const struct lint_run *r,
                           const struct lint_units *u, const char *tmp, struct slot *run,
                           int jobs, const struct sigaction old[3],
                           struct lint_unit_result *res)
{
    unsigned char *analyzed = calloc(u->n ? u->n : 1, 1);
    unsigned char *again = calloc(u->n ? u->n : 1, 1);
    struct lint_unit_result *second = calloc(u->n ? u->n : 1, sizeof *second);
    char facts[4200];
    snprintf(facts, sizeof facts, "%s/facts", tmp);
    for (size_t i = 0; analyzed && i < u->n; i++)
        analyzed[i] = !u->v[i].skip && res[i].status == 0;
    if (analyzed && again && second && lint_facts_merge(tmp, u->n, analyzed, facts, again) > 0) {
        run_pass(o, r, u, again, tmp, facts, run, jobs, old, second);
        for (size_t i = 0; i < u->n; i++) {
            if (!again[i])
                continue;
            res[i].seconds += second[i].seconds;
            if (second[i].status == 0) {
                free(res[i].sarif);
                res[i].sarif = second[i].sarif;
                res[i].sarif_len = second[i].sarif_len;
            } else {
                free(second[i].sarif);
            }
            free(second[i].error);
        }
    }
    free(analyzed);
    free(again);
    free(second);
}

int lint_run_units(const struct lint_options *o, const struct lint_run *r,
                   const struct lint_units *u, struct lint_unit_result *res)
{
    const char *base = getenv("TMPDIR");
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/gpumem-lint.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp)) {
        fprintf(stderr,
                "gpumem lint: error: cannot make a temporary folder in %s: %s (set TMPDIR to a "
                "writable folder)\n",
                base && *base ? base : "/tmp", strerror(errno));
        return -1;
    }
    int jobs = o->jobs < 1 ? 1 : o->jobs;
    struct slot *run = calloc((size_t)jobs, sizeof *run);
    unsigned char *todo = calloc(u->n ? u->n : 1, 1);
    if (!run || !todo) {
        free(run);
        free(todo);
        rmdir(tmp);
        return -1;
    }
    struct sigaction old[3];
    catch_stop_signals(old);
    for (size_t i = 0; i < u->n; i++)
        todo[i] = !u->v[i].skip;
    run_pass(o, r, u, todo, tmp, NULL, run, jobs, old, res);
    if (r->plugin && !stop_signal)
        run_with_facts(o, r, u, tmp, run, jobs, old, res);
    if (r->progress) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    if (stop_signal)
        stop_all(run, jobs, tmp, u->n, old); /* it came as the last unit finished */
    restore_stop_signals(old);
    free(run);
    free(todo);
    remove_tmp(tmp, u->n);
    return 0;
}

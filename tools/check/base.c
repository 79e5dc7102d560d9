/* gpumem check's base: what every piece of the engine uses, and nothing above it. The options
 * `gpumem check` set (settings.def), read once; the log, opened at the first output, and the lock
 * every line of it goes through; the names of the report's files (%p, %r, children, later
 * programs); whether this process runs unchecked; stacks captured. The events (events.c,
 * vmm.c, calls.c, graphs.c), the findings (findings.c), the leaks (leaks.c) and the renderers
 * use it; the report at the end (engine.c) and after a signal (crash.c) stand above them all. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backtrace.h"
#include "check_trace.h"
#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "settings.h"
#include "sigsafe.h"
#include "suppress.h"

_Thread_local int check_tls_busy __attribute__((tls_model("initial-exec")));
_Thread_local unsigned check_tls_reports __attribute__((tls_model("initial-exec")));
/* ---- options (settings.def, set by `gpumem check`, launch.c) ---- */

check__options check__opt;

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

/* Output goes through one lock; the prefix is valgrind's "==PID== ". */
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out_file;
static int out_fd = -1; /* out_file's descriptor, for the crash-time report */
int check__report_started;
char check__prefix[32];

/* The trace's writer thread is gpumem check's own: what it does (allocate, write) is not the
 * program's and is not watched. */
static void trace_writer_is_ours(void)
{
    check_tls_busy++;
}

static void setup(void)
{
    check_tls_busy++;
    check_trace_setup(trace_writer_is_ours);
    gpumem__init_once();
    gpumem__report_at_exit_disable();
    snprintf(check__prefix, sizeof check__prefix, "==%ld== ", (long)getpid());
    /* The choices' order in settings.def is LEAK_NO, LEAK_SUMMARY, LEAK_FULL's. */
    check__opt.leak = check_setting_choice(CHECK_SET_LEAK);
    check__opt.show_kinds = (unsigned)check_leak_kinds_parse(check_setting_value(CHECK_SET_SHOW_LEAK_KINDS));
    check__opt.error_kinds = (unsigned)check_leak_kinds_parse(check_setting_value(CHECK_SET_ERRORS_FOR_LEAK_KINDS));
    check__opt.gen_supp = check_setting_choice(CHECK_SET_GEN_SUPPRESSIONS) == 1;
    check__opt.stacks = check_setting_choice(CHECK_SET_STACKS) == 1;
    check__opt.quiet = check_setting_choice(CHECK_SET_QUIET) == 1;
    check__opt.root = strtol(check_setting_value(CHECK_SET_ROOT), NULL, 10);
    check__opt.log = check_setting_path(CHECK_SET_LOG);
    check__opt.json = check_setting_path(CHECK_SET_JSON);
    check__opt.status = check_setting_path(CHECK_SET_STATUS);
    check__opt.image = atoi(check_setting_value(CHECK_SET_IMAGE));
    check_rank_read(&check__opt.rank);
    gpumem__command_line(check__opt.command, sizeof check__opt.command);
    /* Suppression files, separated by newlines (the launcher checked them already). */
    const char *files = check_setting_get(CHECK_SET_SUPPRESSIONS, NULL);
    if (files) {
        char *copy = strdup(files), *save = NULL;
        for (char *f = copy ? strtok_r(copy, "\n", &save) : NULL; f; f = strtok_r(NULL, "\n", &save)) {
            char err[512];
            if (check_supp_load(f, err, sizeof err) != 0)
                fprintf(stderr, "%sgpumem check: error: %s\n", check__prefix, err);
        }
        free(copy);
    }
    check_tls_busy--;
}

void check_setup(void)
{
    pthread_once(&setup_once, setup);
}
/* PATTERN with %p replaced by the pid and %r by the rank; a child of the checked program (pid
 * other than the root's) gets ".PID" appended when PATTERN has neither, so that it writes its
 * own file. */
int check__expand_path(const char *pattern, char *path, size_t n)
{
    long pid = (long)getpid();
    return check_path_expand(pattern, pid, check__opt.rank.rank,
                             check__opt.root && check__opt.root != pid, check__opt.image, path, n);
}

/* Opens one of the report's files for writing, never blocking: a FIFO no process reads is
 * refused (ENXIO) rather than waited on for ever. Returns the descriptor, or -1 with why in
 * errno (ENAMETOOLONG: the name does not fit once %p and %r are expanded; path is then the
 * pattern). */
int check__open_output(const char *pattern, char *path, size_t n)
{
    if (check__expand_path(pattern, path, n) != 0) {
        snprintf(path, n, "%s", pattern);
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd;
    do
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0)
            fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    return fd;
}

void check__status_path(char *path, size_t n)
{
    /* By hand: the crash-time report names it too. */
    char digits[21];
    size_t len = strlen(check__opt.status), o = 0;
    if (len + 48 > n) {
        path[0] = '\0';
        return;
    }
    memcpy(path, check__opt.status, len);
    o = len;
    path[o++] = '/';
    gpumem__fmt_u64((uint64_t)getpid(), digits);
    memcpy(path + o, digits, strlen(digits) + 1);
    o += strlen(digits);
    if (check__opt.image > 0) {
        memcpy(path + o, ".exec", 6);
        gpumem__fmt_u64((uint64_t)check__opt.image, path + o + 5);
    }
}

/* Why check__open_output failed, in words. */
const char *check__open_failure(int e)
{
    return e == ENXIO          ? "it is a FIFO no process reads"
           : e == ENAMETOOLONG ? "the name is too long once %p and %r are expanded"
                               : strerror(e);
}

/* The log, opened at the first output; under out_lock. */
FILE *check__log(void)
{
    if (out_file)
        return out_file;
    out_file = stderr;
    if (check__opt.log) {
        char path[4096];
        int fd = check__open_output(check__opt.log, path, sizeof path);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        /* A buffer of its own: writing the log never allocates one from the heap (which an
         * exit() from a signal handler may find locked). It cannot fail before a write. */
        static char log_buf[BUFSIZ];
        if (f)
            (void)setvbuf(f, log_buf, _IOFBF, sizeof log_buf);
        if (f) {
            out_file = f;
            out_fd = fd;
        } else {
            int e = errno;
            if (fd >= 0)
                close(fd);
            fprintf(stderr, "%sgpumem check: warning: cannot write the log to %s (%s); writing "
                            "it here\n", check__prefix, path, check__open_failure(e));
        }
    }
    check__report_started = 1;
    if (!check__opt.quiet) { /* a rank's report says whose it is, before anything else */
        gpumem__sink o;
        gpumem__sink_file(&o, out_file);
        check__text_rank_header(&o);
        gpumem__sink_flush(&o);
    }
    return out_file;
}

static int log_errno; /* why the first write to the log failed */

void check__say(const char *fmt, ...)
{
    FILE *f = check__log();
    int before = errno;
    errno = 0;
    fputs(check__prefix, f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    if (errno && ferror(f) && !log_errno)
        log_errno = errno;
    errno = before;
}

/* A problem with gpumem check's own files: said in the log and, when the log is a file (which
 * may be the very file that failed), on stderr too. */
void check__say_both(const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    check__say("%s", text);
    if (check__log() != stderr) {
        fprintf(stderr, "%s%s\n", check__prefix, text);
        fflush(stderr); /* stderr may have been reopened, and buffered, by the program */
    }
}
uint32_t check__capture(void)
{
    return check__opt.stacks ? gpumem__stack_capture(1) : 0;
}
static const char *unchecked_why;
void check_unchecked(const char *why)
{
    check_setup();
    unchecked_why = why;
    pthread_mutex_lock(&out_lock);
    check__say("gpumem check: %s; this process runs unchecked", why);
    fflush(check__log());
    pthread_mutex_unlock(&out_lock);
}

const char *check__unchecked(void)
{
    return unchecked_why;
}

int check__crash_log_fd(void)
{
    if (out_file && out_file != stderr)
        return out_fd;
    return !out_file && check__opt.log ? -1 : STDERR_FILENO;
}
/* The log's end: a full disk fails a write only when the buffer goes out, so the stream and the
 * close are checked, and a failure is said where it can be read. */
void check__close_log(void)
{
    errno = 0;
    int flush_errno = fflush(check__log()) != 0 ? errno : 0;
    if (out_file && out_file != stderr) {
        int failed = ferror(out_file);
        int e = flush_errno ? flush_errno : log_errno;
        if (fclose(out_file) != 0 && !e)
            e = errno;
        if (failed || e) {
            char path[4096];
            check__expand_path(check__opt.log, path, sizeof path);
            fprintf(stderr, "%sgpumem check: error: the log %s was not written completely (%s); "
                            "its findings are lost: run again with room on the disk, or "
                            "without --log-file\n",
                    check__prefix, path, e ? strerror(e) : "write error");
            fflush(stderr);
        }
    }
    out_file = NULL;
}

void check__out_lock(void)
{
    pthread_mutex_lock(&out_lock);
}

int check__out_trylock(long *budget_ns)
{
    return gpumem__trylock_for(&out_lock, budget_ns);
}

void check__out_unlock(void)
{
    pthread_mutex_unlock(&out_lock);
}

/* "rank 1 (pid 1234" without the closing parenthesis. */
void check__rank_pid(gpumem__sink *o)
{
    gpumem__sink_str(o, "rank ");
    gpumem__sink_i64(o, check__opt.rank.rank);
    gpumem__sink_str(o, " (pid ");
    gpumem__sink_i64(o, (int64_t)getpid());
}

void check__text_rank_header(gpumem__sink *o)
{
    if (check__opt.rank.rank < 0)
        return;
    check__text_line(o, "gpumem check: ");
    check__rank_pid(o);
    if (check__opt.rank.local_rank >= 0) {
        gpumem__sink_str(o, ", local rank ");
        gpumem__sink_i64(o, check__opt.rank.local_rank);
    }
    gpumem__sink_str(o, ", from ");
    gpumem__sink_str(o, check__opt.rank.from);
    gpumem__sink_str(o, "): ");
    gpumem__sink_str(o, check__opt.command);
    gpumem__sink_str(o, "\n");
}


/* One line of the report through a sink: the prefix, then text. */
void check__text_line(gpumem__sink *o, const char *text)
{
    gpumem__sink_str(o, check__prefix);
    gpumem__sink_str(o, text);
}

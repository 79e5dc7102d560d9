/* gpumem check's report of a process that a fatal signal ends (engine_int.h): what only a crash
 * adds to the report at exit. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "sigsafe.h"
#include "suppress.h"

/* ---- the crash-time report ----
 *
 * A fatal signal may land anywhere: inside the engine holding a registry shard or the output
 * lock, inside printf holding stdio's locks, inside malloc. So this report is
 * async-signal-safe by construction (sigsafe.h): registry shards are try-locked with a
 * bounded wait and the report says when some stayed busy; groups live in mmap'd memory;
 * output is formatted by hand and written with write(2) to the log's own descriptor; peaks
 * are read from their atomics. Stacks symbolized before are shown from their cache; the
 * others are symbolized in a child process (crash_symbolize below), because symbolizing
 * allocates and takes locks that the signal may have interrupted. */

static int crash_open(const char *pattern)
{
    char path[4096];
    return check__open_output(pattern, path, sizeof path);
}

/* ---- stacks symbolized in a child for the crash-time report ----
 *
 * A leak's stack that was never shown before has only its return addresses. Symbolizing them
 * allocates and takes the symbolizer's, the heap's and the dynamic loader's locks, any of which
 * the fatal signal may have interrupted, so the report does not do it itself: it forks a child
 * with _Fork (which runs no atfork handlers and takes no lock), and the child, a copy of the
 * process with only this thread, symbolizes them and sends the text back through a pipe. If
 * a lock it needs was held at the signal it blocks for ever; the report waits for it at most
 * CRASH_SYMBOLIZE_MS in all, with poll, then kills and reaps it and uses what arrived: a
 * stack whose text did not arrive whole says it was not shown. The child also matches the
 * suppressions against the whole stack, and says which one matched.
 *
 * The child's records, one a group: the group's index in decimal, the stack as text lines,
 * the stack as a JSON array, the matching suppression's name (empty for none), each ended by
 * a NUL byte. */
#define CRASH_SYMBOLIZE_MS 2000
#define CRASH_SYMBOLIZE_BYTES ((size_t)16 << 20) /* the records' room, from mmap */

typedef struct {
    const char *text, *json; /* from the child; NULL when its record did not arrive */
    const char *supp;        /* the suppression that matched; NULL for none */
} crash_stack;

typedef struct {
    crash_stack *of; /* one per group, from mmap; NULL when no child ran */
    size_t of_bytes;
    char *buf; /* the records, from mmap */
    size_t len;
} crash_syms;

static int crash_needs_child(const gpumem__group *g)
{
    gpumem__frame f[1];
    return g->stack && gpumem__stack_frames_cached(g->stack, f, 1) < 0;
}

static void crash_symbolize_child(int fd, const gpumem__group *g, long ng, const char *indent)
{
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM,
                                SIGQUIT};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        sigaction(fatal[i], &dfl, NULL);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) { /* what a symbolizer says about missing debug information */
        dup2(null, STDERR_FILENO);
        close(null);
    }
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    for (long i = 0; i < ng; i++) {
        if (!crash_needs_child(&g[i]))
            continue;
        gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
        int nf = gpumem__stack_frames(g[i].stack, frames, GPUMEM__STACK_MAX_FRAMES);
        gpumem__sink_i64(&o, i);
        gpumem__sink_mem(&o, "", 1);
        gpumem__sink_stack(&o, g[i].stack, indent, 1);
        gpumem__sink_mem(&o, "", 1);
        check__json_stack(&o, g[i].stack, 1);
        gpumem__sink_mem(&o, "", 1);
        const char *supp =
            check_supp_match(CHECK_LEAK, g[i].site.func ? g[i].site.func : "?", frames, nf);
        gpumem__sink_str(&o, supp ? supp : "");
        gpumem__sink_mem(&o, "", 1);
    }
    gpumem__sink_flush(&o);
    _exit(0);
}

static long crash_ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)(t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static void crash_read_child(crash_syms *cs, int fd, pid_t pid, const struct timespec *t0);
static void crash_parse_records(crash_syms *cs, long ng);

/* Sets cs->of up, one entry a group (NULL when there is no memory for it), and fills it with
 * the child's records for the groups whose stacks are not symbolized yet. */
static void crash_symbolize(crash_syms *cs, const gpumem__group *g, long ng, const char *indent)
{
    memset(cs, 0, sizeof *cs);
    if (ng <= 0)
        return;
    cs->of_bytes = (size_t)ng * sizeof *cs->of;
    void *of = mmap(NULL, cs->of_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                    0);
    if (of == MAP_FAILED)
        return;
    cs->of = of;
    long need = 0;
    for (long i = 0; i < ng; i++)
        need += crash_needs_child(&g[i]);
    if (!need)
        return;
    void *buf = mmap(NULL, CRASH_SYMBOLIZE_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (buf == MAP_FAILED)
        return;
    cs->buf = buf;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = _Fork();
    if (pid == 0) {
        close(p[0]);
        crash_symbolize_child(p[1], g, ng, indent);
    }
    close(p[1]);
    crash_read_child(cs, p[0], pid, &t0);
    crash_parse_records(cs, ng);
}

/* Reads the child's records from fd into cs->buf until the child has finished or
 * CRASH_SYMBOLIZE_MS after t0 have passed; then kills it (unless it finished) and reaps it. */
static void crash_read_child(crash_syms *cs, int fd, pid_t pid, const struct timespec *t0)
{
    int done = 0; /* the child closed its end: it has finished */
    while (pid > 0 && cs->len < CRASH_SYMBOLIZE_BYTES - 1) {
        long left = CRASH_SYMBOLIZE_MS - crash_ms_since(t0);
        if (left <= 0)
            break;
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        int r = poll(&pf, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ssize_t n = read(fd, cs->buf + cs->len, CRASH_SYMBOLIZE_BYTES - 1 - cs->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            done = n == 0;
            break;
        }
        cs->len += (size_t)n;
    }
    close(fd);
    if (pid > 0) {
        /* Not after it finished: a handler of the program's own may have reaped it already,
         * and its pid may be another process's now. */
        if (!done)
            kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
    }
}

/* Fills cs->of from the records that arrived whole: index, text, JSON and suppression, each
 * ended by a NUL. */
static void crash_parse_records(crash_syms *cs, long ng)
{
    size_t at = 0;
    for (;;) {
        const char *field[4];
        size_t end = at;
        int k = 0;
        for (; k < 4; k++) {
            field[k] = cs->buf + end;
            const char *nul = memchr(cs->buf + end, '\0', cs->len - end);
            if (!nul)
                break;
            end = (size_t)(nul - cs->buf) + 1;
        }
        if (k < 4)
            break;
        long i = 0;
        for (const char *c = field[0]; *c >= '0' && *c <= '9'; c++)
            i = i * 10 + (*c - '0');
        if (i < ng) {
            cs->of[i].text = field[1];
            cs->of[i].json = field[2];
            cs->of[i].supp = *field[3] ? check_supp_use(field[3]) : NULL;
        }
        at = end;
    }
}

static void crash_syms_unmap(crash_syms *cs)
{
    if (cs->of)
        munmap(cs->of, cs->of_bytes);
    if (cs->buf)
        munmap(cs->buf, CRASH_SYMBOLIZE_BYTES);
}

/* The JSON report of a process ended by signal sig (render_json.c, as at exit): no pointer
 * scan, so no leak kinds, and no "devices" (the statistics cannot be read safely), but
 * "complete" says whether every finding is in it. */
/* The peaks by kind: the statistics' (this thread's bytes not yet added to the shared
 * counters added first), and never less than what is live now, which the groups hold: a
 * program that ends by a signal after allocating less than the statistics' flush threshold
 * has a peak no counter has seen yet. Async-signal-safe. */
static void crash_peaks(const gpumem__group *g, long ng, uint64_t *peak)
{
    uint64_t live[GPUMEM_KIND_COUNT_] = {0};
    for (long i = 0; i < ng; i++)
        if (g[i].kind > 0 && g[i].kind < GPUMEM_KIND_COUNT_)
            live[g[i].kind] += g[i].bytes;
    peak[0] = 0;
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
        peak[k] = gpumem__stats_peak_now(k);
        if (live[k] > peak[k])
            peak[k] = live[k];
    }
}

/* How the process ends: by signal sig, or (sig 0) by _exit(code). */
typedef struct {
    int sig, code;
    const char *how; /* without a signal: "_exit", or "exit" where the engine was busy */
} crash_end;

static const char *crash_status_word(crash_end e)
{
    return check__unchecked() ? "unchecked" : e.sig ? "signaled" : "exited";
}

static void crash_json(crash_end e, const gpumem__group *g, long ng, const crash_syms *cs,
                       int skipped, uint64_t leaks, uint64_t leaked_bytes)
{
    int fd = crash_open(check__opt.json);
    if (fd < 0)
        return;
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    check__json_head(&o, crash_status_word(e), e.sig ? "signal" : "exit_code",
                     e.sig ? e.sig : e.code,
                     e.sig || strcmp(e.how, "_exit") != 0 ? NULL : "_exit");
    long budget = 20 * 1000 * 1000;
    size_t nfindings = 0, shown = 0;
    const finding *findings = NULL;
    int have = check__findings_trylock(&findings, &nfindings, &budget);
    for (size_t i = 0; have && i < nfindings; i++, shown++) {
        check__json_next_finding(&o, shown);
        check__json_finding(&o, &findings[i], NULL, 1);
    }
    if (have)
        check__findings_unlock();
    for (long i = 0; check__opt.leak != LEAK_NO && i < ng; i++, shown++) {
        const crash_stack *c = cs->of ? &cs->of[i] : NULL;
        finding f = {.kind = CHECK_LEAK, .call = g[i].site.func ? g[i].site.func : "?",
                     .memory = g[i].kind, .bytes = g[i].bytes, .count = g[i].count,
                     .stack = g[i].stack, .suppressed = c ? c->supp : NULL, .counted = 1,
                     .device = g[i].device};
        check__json_next_finding(&o, shown);
        check__json_finding(&o, &f, c ? c->json : NULL, 1);
    }
    uint64_t peak[GPUMEM_KIND_COUNT_];
    crash_peaks(g, ng, peak);
    check__json_sums sum = {.leaks = leaks, .leaked_bytes = leaked_bytes,
                            .complete = !skipped && have};
    check__json_tail(&o, shown, peak, &sum);
    gpumem__sink_flush(&o);
    close(fd);
}

/* The status file for `gpumem check`'s summary of many processes (as write_status at exit,
 * engine.c): errors, the signal or exit status, the leaks and whose process this is. */
static void crash_status(crash_end e, uint64_t leaks, uint64_t leaked_bytes)
{
    char path[4096];
    check__status_path(path, sizeof path);
    if (!path[0])
        return;
    int fd;
    do
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return;
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    check__status_lines(&o, crash_status_word(e), check_error_count(), e.sig ? e.sig : e.code,
                        leaks, leaked_bytes, -1);
    gpumem__sink_flush(&o);
    close(fd);
}

/* What the leaks reported after a signal add up to (the suppressed ones left out). */
typedef struct {
    uint64_t leaks, leaked_bytes, blocks;
    uint64_t by_kind_bytes[GPUMEM_KIND_COUNT_], by_kind_count[GPUMEM_KIND_COUNT_];
} crash_sums;

/* The suppression that matches group i's leak, or NULL: the child's answer when it
 * symbolized the stack, else matched here against the frames symbolized before. */
static const char *crash_leak_supp(const gpumem__group *g, crash_syms *cs, long i)
{
    if (cs->of && cs->of[i].text)
        return cs->of[i].supp;
    gpumem__frame frames[GPUMEM__STACK_MAX_FRAMES];
    int nf = g->stack ? gpumem__stack_frames_cached(g->stack, frames, GPUMEM__STACK_MAX_FRAMES)
                      : 0;
    const char *supp = check_supp_match(CHECK_LEAK, g->site.func ? g->site.func : "?", frames,
                                        nf < 0 ? 0 : nf);
    if (cs->of)
        cs->of[i].supp = supp; /* for the JSON report */
    return supp;
}

/* One leak with its stack (--leak-check=full), as at exit but for its kind. */
static void crash_leak(gpumem__sink *o, const gpumem__group *g, const crash_stack *from_child,
                       const char *indent)
{
    check__text_leak_args a = {.bytes = g->bytes, .count = g->count, .memory = g->kind,
                               .device = -1, .call = g->site.func ? g->site.func : "?",
                               .stack = g->stack, .indent = indent, .cached = 1,
                               .stack_text = from_child ? from_child->text : NULL};
    check__text_leak(o, &a);
    check__text_line(o, "\n");
}

/* Counts each leak group as an error or as suppressed, adds them up in s and, with
 * --leak-check=full, reports each. */
static void crash_leaks(gpumem__sink *o, const gpumem__group *g, long ng, crash_syms *cs,
                        const char *indent, crash_sums *s)
{
    for (long i = 0; i < ng; i++) {
        if (crash_leak_supp(&g[i], cs, i)) {
            check__count_finding(1);
            continue;
        }
        check__count_finding(0);
        s->leaks++;
        s->leaked_bytes += g[i].bytes;
        s->blocks += g[i].count;
        s->by_kind_bytes[g[i].kind] += g[i].bytes;
        s->by_kind_count[g[i].kind] += g[i].count;
        if (check__opt.leak == LEAK_FULL)
            crash_leak(o, &g[i], cs->of && cs->of[i].text ? &cs->of[i] : NULL, indent);
    }
}

/* The LEAK SUMMARY lines, and what the report lacks when registry shards stayed busy. */
static void crash_leak_summary(gpumem__sink *o, const crash_sums *s, long ng, int skipped)
{
    if (s->leaks) {
        check__text_leak_summary(o, NULL, s->leaked_bytes, s->blocks, s->leaks, s->by_kind_bytes,
                                 s->by_kind_count);
        gpumem__sink_str(o, "\n");
        if (check__opt.leak == LEAK_SUMMARY)
            check__text_line(o, "   --leak-check=full shows where each was allocated\n");
    } else if (ng >= 0) {
        check__text_line(o, "LEAK SUMMARY: no CUDA memory left allocated at exit\n");
    }
    if (ng < 0)
        check__text_line(o, "LEAK SUMMARY: not available (no memory to group the leaks)\n");
    if (skipped) {
        check__text_line(o, "   gpumem check: report incomplete: ");
        gpumem__sink_i64(o, skipped);
        gpumem__sink_str(o, skipped == 1 ? " registry shard" : " registry shards");
        gpumem__sink_str(o, " busy (held by the code the signal interrupted); their "
                            "allocations are not counted\n");
    }
}

/* The PEAK line, the suppressions used and the ERROR SUMMARY line. */
static void crash_report_end(gpumem__sink *o, const gpumem__group *g, long ng, uint64_t leaks)
{
    uint64_t peak[GPUMEM_KIND_COUNT_];
    crash_peaks(g, ng, peak);
    check__text_peak(o, peak);
    check_supp_sink_used(o, check__prefix);
    check__text_errors(o, check_error_count(), leaks, check__suppressed_count());
}

void check__finish_safe(int sig, int code, const char *how)
{
    crash_end end = {sig, code, how};
    int fd = check__crash_log_fd(), opened = 0;
    if (fd < 0) { /* --log-file, not opened yet */
        fd = crash_open(check__opt.log);
        opened = fd >= 0;
        if (fd < 0)
            fd = STDERR_FILENO;
    }
    gpumem__sink o;
    gpumem__sink_fd(&o, fd);
    if (!check__report_started && !check__opt.quiet) /* the report starts here: whose it is */
        check__text_rank_header(&o);
    if (sig) {
        const char *abbrev = sigabbrev_np(sig);
        check__text_line(&o, "Process terminating with the default action of signal ");
        gpumem__sink_i64(&o, sig);
        gpumem__sink_str(&o, " (SIG");
        gpumem__sink_str(&o, abbrev ? abbrev : "?");
        gpumem__sink_str(&o, ")\n");
    } else if (strcmp(how, "_exit") == 0) {
        check__text_line(&o, "Process ending by _exit(");
        gpumem__sink_i64(&o, code);
        gpumem__sink_str(&o, "), which runs no exit handlers: the report is made as after a "
                             "signal (no pointer scan)\n");
    } else {
        check__text_line(&o, "Process ending by exit(");
        gpumem__sink_i64(&o, code);
        gpumem__sink_str(&o, ") while gpumem check was busy on its thread or another (a signal "
                             "handler that calls exit()): the report is made as after a signal "
                             "(no pointer scan)\n");
    }

    gpumem__group *g = NULL;
    size_t map_bytes = 0;
    int skipped = 0;
    long ng = gpumem__group_live_mapped(&g, &map_bytes, &skipped);
    char indent[64];
    size_t pl = strlen(check__prefix);
    memcpy(indent, check__prefix, pl);
    memcpy(indent + pl, "   ", 4);
    crash_syms cs;
    crash_symbolize(&cs, g, check__opt.leak != LEAK_NO ? ng : 0, indent);
    crash_sums sums;
    memset(&sums, 0, sizeof sums);
    if (check__opt.leak != LEAK_NO) {
        crash_leaks(&o, g, ng, &cs, indent, &sums);
        crash_leak_summary(&o, &sums, ng, skipped);
    }
    crash_report_end(&o, g, ng, sums.leaks);
    gpumem__sink_flush(&o);
    if (opened)
        close(fd);
    if (check__opt.json)
        crash_json(end, g, ng, &cs, skipped, sums.leaks, sums.leaked_bytes);
    if (check__opt.status)
        crash_status(end, sums.leaks, sums.leaked_bytes);
    crash_syms_unmap(&cs);
    gpumem__group_unmap(g, map_bytes);
}

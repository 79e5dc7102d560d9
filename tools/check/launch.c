/* `gpumem check [options] -- PROGRAM [ARGS...]`: runs PROGRAM with libgpumem_check.so injected
 * into CUDA (CUDA_INJECTION64_PATH) and preloaded (LD_PRELOAD, for host free/delete), and
 * exits as PROGRAM did, or with --error-exitcode when something was found.
 *
 * The options reach the library through GPUMEM_CHECK_* variables, which children of PROGRAM
 * inherit with the rest: each process that uses CUDA writes its own report, and a status file
 * ("errors N") into a private folder that is read here once PROGRAM has ended. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "engine.h"
#include "gpumem.h"
#include "rank.h"
#include "settings.h"
#include "sigsafe.h"
#include "suppress.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpumem check [options] -- PROGRAM [ARGS...]\n"
            "\n"
            "Runs PROGRAM, unmodified, and reports what it does wrong with CUDA memory: leaks\n"
            "(at exit, and at cudaDeviceReset), mismatched releases (cudaFree of pinned memory,\n"
            "free() of cudaMallocHost memory, ...), double, invalid and interior releases\n"
            "(virtual memory handles by their references and mappings), failed allocations and\n"
            "every other CUDA call that failed, each with the stacks of the calls involved; then\n"
            "peak usage by memory kind. CUDA's calls are watched through CUPTI\n"
            "(CUDA_INJECTION64_PATH), free, delete and friends through LD_PRELOAD; kernels are\n"
            "not instrumented, so PROGRAM runs at native speed. Build it with -g for file:line\n"
            "in the stacks. It needs a GPU and its driver.\n"
            "\n"
            "options (each as --opt VALUE or --opt=VALUE):\n"
            "  --leak-check=no|summary|full  leaks at exit: none, one summary line, or each\n"
            "                                with its allocation stack (default: full)\n"
            "  --show-leak-kinds=KINDS       leaks to list: definite (no pointer reaches them),\n"
            "                                reachable (a pointer does; the report says where),\n"
            "                                all, none; comma-separated (default: all)\n"
            "  --errors-for-leak-kinds=KINDS leaks that count as errors (default: all; definite\n"
            "                                for valgrind's rule, reachable memory no error)\n"
            "  --failed-calls=error|note|no  CUDA calls that returned an error (but for queries\n"
            "                                whose failure is their answer, such as\n"
            "                                cudaStreamQuery's not ready): errors, notes (shown,\n"
            "                                not counted), or not watched (default: error)\n"
            "  --watch-calls=most|all        all: watch the failures of the calls frameworks make\n"
            "                                for every operation too (launches through the\n"
            "                                driver API, context and stream queries), at a\n"
            "                                cost on every call (default: most)\n"
            "  --error-exitcode=N            exit with N when errors were found (default: exit\n"
            "                                as PROGRAM did)\n"
            "  --log-file=PATH               write the report to PATH instead of stderr; %%p is the\n"
            "                                process id, %%r its rank in a parallel job (below)\n"
            "  --json=PATH                   also write a JSON report (schema gpumem-check/1);\n"
            "                                %%p and %%r as for --log-file\n"
            "  --trace=PATH                  record every allocation and release over time to PATH\n"
            "                                (Chrome trace JSON: Perfetto, `gpumem report`); %%p and\n"
            "                                %%r as for --log-file\n"
            "  --suppressions=FILE           ignore findings that FILE describes (repeatable;\n"
            "                                format in docs/check.md)\n"
            "  --gen-suppressions=no|yes     print a suppression for each finding\n"
            "  --default-suppressions=yes|no read the suppressions installed with gpumem for\n"
            "                                frameworks' caching allocators (default: yes)\n"
            "  -q, --quiet                   print findings only: no summaries when nothing was\n"
            "                                found, no note when PROGRAM used no CUDA\n"
            "  -h, --help, --version\n"
            "\n"
            "Children PROGRAM starts are checked too, each with its own report: without %%p or\n"
            "%%r in --log-file or --json their files get the suffix .PID. In a parallel job\n"
            "(gpumem check -- torchrun ..., gpumem check -- mpirun ..., mpirun gpumem check --\n"
            "...) each process's report names its rank, from RANK, OMPI_COMM_WORLD_RANK,\n"
            "PMI_RANK or SLURM_PROCID; %%r is that rank (norank-PID in a process without one).\n"
            "At the end, one line per rank and the total; a launcher that allocated no CUDA\n"
            "memory is listed apart and not counted.\n"
            "\n"
            "exit status: PROGRAM's; --error-exitcode's when errors were found (in any process\n"
            "PROGRAM started too); 128+N when PROGRAM was killed by signal N; 2 for a usage\n"
            "error; 77 when it cannot run here (no NVIDIA driver); 127 when PROGRAM cannot run.\n");
}

/* The library: $GPUMEM_CHECK_LIBRARY, else beside this executable (build tree), else where
 * `make install` puts it relative to the installed executable. */
static int find_library(char out[PATH_MAX])
{
    const char *env = getenv("GPUMEM_CHECK_LIBRARY");
    if (env && *env) {
        if (!realpath(env, out) || access(out, R_OK) != 0) {
            fprintf(stderr, "gpumem check: error: GPUMEM_CHECK_LIBRARY=%s cannot be read\n", env);
            return -1;
        }
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return -1;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    const char *rel[] = {"check/libgpumem_check.so", GPUMEM_CHECK_INSTALL_REL "/libgpumem_check.so"};
    for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", exe, rel[i]);
        if (access(path, R_OK) == 0 && realpath(path, out))
            return 0;
    }
    fprintf(stderr,
            "gpumem check: error: libgpumem_check.so not found beside %s or in %s/%s; set "
            "GPUMEM_CHECK_LIBRARY to its path\n",
            exe, exe, GPUMEM_CHECK_INSTALL_REL);
    return -1;
}

static pid_t child;

static void forward(int sig)
{
    if (child > 0)
        kill(child, sig);
}

/* One checked process, from its status file. */
typedef struct {
    long pid, errors, code, rank, local_rank;
    long long allocations; /* -1: not known (the process ended by a signal) */
    int missing;           /* it started CUDA and left no report (SIGKILL, _exit) */
    unsigned long long leaks, leaked_bytes;
    char status[32], command[256];
} proc_status;

/* A launcher (torchrun's parent, a program that starts the workers): no rank, no CUDA memory
 * allocated, nothing found. It is listed apart and not counted with the ranks. */
static int is_launcher(const proc_status *p)
{
    return p->rank < 0 && p->allocations == 0 && p->errors == 0;
}

/* What the processes left on each device, from the status files' device lines (a launcher
 * with a worker per GPU: each worker's device). */
#define LAUNCH_DEVICES 16
static struct {
    unsigned long long allocations, leaks, leaked_bytes, peak;
    int processes;
} by_device[LAUNCH_DEVICES];

static void add_device_line(const char *line)
{
    int d;
    unsigned long long allocs, leaks, bytes, peak;
    if (sscanf(line, "device %d allocations %llu leaks %llu leaked_bytes %llu peak %llu", &d,
               &allocs, &leaks, &bytes, &peak) != 5 || d < 0)
        return;
    if (d >= LAUNCH_DEVICES)
        d = LAUNCH_DEVICES - 1;
    by_device[d].allocations += allocs;
    by_device[d].leaks += leaks;
    by_device[d].leaked_bytes += bytes;
    if (peak > by_device[d].peak)
        by_device[d].peak = peak;
    by_device[d].processes++;
}

/* The ranks first, by rank; then the other processes, by pid; the launchers last. */
static int by_rank(const void *a, const void *b)
{
    const proc_status *x = a, *y = b;
    if (is_launcher(x) != is_launcher(y))
        return is_launcher(x) - is_launcher(y);
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* 8192 -> "8,192". */
static const char *grouped_num(unsigned long long v, char *buf, size_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%llu", v);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < n; i++) {
        if (i && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* A process as the summary names it: "rank 1 (pid 1234, ./app)", or without the command
 * "rank 1 (pid 1234)"; one without a rank "pid 1234 (./app)" either way. */
static const char *proc_name(const proc_status *p, int with_command, char *buf, size_t n)
{
    if (p->rank < 0)
        snprintf(buf, n, "pid %ld (%s)", p->pid, p->command);
    else if (with_command)
        snprintf(buf, n, "rank %ld (pid %ld, %s)", p->rank, p->pid, p->command);
    else
        snprintf(buf, n, "rank %ld (pid %ld)", p->rank, p->pid);
    return buf;
}

/* "exited 0", "killed by SIGSEGV", "unchecked, exited 0". */
static const char *how_ended(const proc_status *p, char *buf, size_t n)
{
    if (strcmp(p->status, "signaled") == 0) {
        const char *abbrev = sigabbrev_np((int)p->code);
        snprintf(buf, n, "killed by SIG%s", abbrev ? abbrev : "?");
    } else if (strcmp(p->status, "exec") == 0) {
        snprintf(buf, n, "replaced its program (exec)");
    } else {
        snprintf(buf, n, "%sexited %ld",
                 strcmp(p->status, "unchecked") == 0 ? "unchecked, " : "", p->code);
    }
    return buf;
}

/* One line of the list: "rank 1 (pid 1234, ./app): 1 error (...), exited 0". */
static void print_process(const proc_status *p)
{
    char name[320], how[64], b[32];
    proc_name(p, 1, name, sizeof name);
    if (p->missing)
        fprintf(stderr, "gpumem check:   %s: no report\n", name);
    else if (is_launcher(p))
        fprintf(stderr, "gpumem check:   %s: launcher, no CUDA memory allocated; not counted\n",
                name);
    else
        fprintf(stderr, "gpumem check:   %s: %ld error%s (%llu leak%s, %s bytes), %s\n", name,
                p->errors, p->errors == 1 ? "" : "s", p->leaks, p->leaks == 1 ? "" : "s",
                grouped_num(p->leaked_bytes, b, sizeof b), how_ended(p, how, sizeof how));
}

/* After the total, each process that did not end well: "rank 1 (pid 1234) killed by
 * SIGSEGV", "pid 1235 (./app) exited with status 3", or left no report. */
static void print_failures(const proc_status *p, int n)
{
    char name[320], how[64];
    for (int i = 0; i < n; i++) {
        int signaled = strcmp(p[i].status, "signaled") == 0;
        proc_name(&p[i], 0, name, sizeof name);
        if (p[i].missing)
            fprintf(stderr, "gpumem check: %s wrote no report: it was killed by SIGKILL (which "
                            "cannot be caught), ended by _exit(), or is still running; what it "
                            "did with CUDA is unknown\n", name);
        else if (signaled)
            fprintf(stderr, "gpumem check: %s %s\n", name, how_ended(&p[i], how, sizeof how));
        else if (p[i].code != 0)
            fprintf(stderr, "gpumem check: %s exited with status %ld\n", name, p[i].code);
    }
}

/* With more than one device among them: the total by device. */
static void print_devices(void)
{
    char b[32];
    int devices = 0;
    for (int d = 0; d < LAUNCH_DEVICES; d++)
        devices += by_device[d].processes != 0;
    for (int d = 0; devices > 1 && d < LAUNCH_DEVICES; d++) {
        if (!by_device[d].processes)
            continue;
        char peak[32];
        fprintf(stderr, "gpumem check: device %d%s: %llu leak%s (%s bytes) in %d process%s, "
                        "%llu allocation%s made, largest peak of one process %s\n",
                d, d == LAUNCH_DEVICES - 1 ? "+" : "", by_device[d].leaks,
                by_device[d].leaks == 1 ? "" : "s",
                grouped_num(by_device[d].leaked_bytes, b, sizeof b), by_device[d].processes,
                by_device[d].processes == 1 ? "" : "es", by_device[d].allocations,
                by_device[d].allocations == 1 ? "" : "s",
                gpumem_format_bytes(by_device[d].peak, peak, sizeof peak));
    }
}

/* Several processes were checked (a launcher such as mpirun or torchrun, its ranks): one line
 * for each, ranks by rank, the total over all but the launchers, and each process that was
 * killed or failed. p is sorted (by_rank). */
static void print_processes(const proc_status *p, int n)
{
    long errors = 0;
    unsigned long long leaks = 0, bytes = 0;
    int counted = 0, ranked = 0;
    char b[32];
    for (int i = 0; i < n; i++) {
        if (is_launcher(&p[i]) || p[i].missing)
            continue;
        counted++;
        ranked += p[i].rank >= 0;
        errors += p[i].errors;
        leaks += p[i].leaks;
        bytes += p[i].leaked_bytes;
    }
    const char *what = ranked == counted ? (counted == 1 ? "rank" : "ranks")
                                         : (counted == 1 ? "process" : "processes");
    fprintf(stderr, "gpumem check: %d %s checked, each with its report above:\n", counted, what);
    for (int i = 0; i < n; i++)
        print_process(&p[i]);
    fprintf(stderr, "gpumem check: total: %ld error%s (%llu leak%s, %s bytes) in %d %s\n",
            errors, errors == 1 ? "" : "s", leaks, leaks == 1 ? "" : "s",
            grouped_num(bytes, b, sizeof b), counted, what);
    print_devices();
    print_failures(p, n);
}

/* text as a JSON string with the library's escaper: a program's path need not be UTF-8. */
static void json_puts(FILE *f, const char *text)
{
    fputc('"', f);
    while (*text) {
        char piece[GPUMEM__JSON_PIECE_MAX];
        size_t took, n = gpumem__json_piece(text, piece, &took);
        fwrite(piece, 1, n, f);
        text += took;
    }
    fputc('"', f);
}

/* The file a --log-file or --json pattern names for the program's own process, pid: %p is
 * its pid, %r its rank (which it inherits from gpumem check: `mpirun gpumem check -- ./app`).
 * No suffix: the program's own process gets the path as given (engine.c). */
static void expand_pid(const char *pattern, pid_t pid, char *path, size_t size)
{
    check_rank r;
    check_rank_read(&r);
    check_path_expand(pattern, (long)pid, r.rank, 0, 0, path, size);
}

/* The JSON report of a program that ended without writing its own (status "killed", code its
 * signal; or "exited", code its exit status): PATH with %p as the program's pid; an existing
 * file is the program's own report (an earlier run's was removed before the program started:
 * remove_stale_reports) and is left alone. */
static void write_unreported_json(const char *pattern, pid_t pid, const char *status, int code,
                                  const char *program)
{
    int sig = code;
    char path[4096];
    expand_pid(pattern, pid, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return;
    }
    int killed = strcmp(status, "killed") == 0;
    char why[4200];
    if (killed)
        snprintf(why, sizeof why, "%s was killed by signal %d before its report could be written",
                 program, sig);
    else
        snprintf(why, sizeof why, "%s started CUDA and exited %d without writing its report",
                 program, code);
    fprintf(f, "{\n  \"schema\": \"gpumem-check/1\",\n  \"tool\": \"gpumem check\",\n"
               "  \"version\": \"%s\",\n  \"pid\": %ld,\n", gpumem_version(), (long)pid);
    check_rank r; /* the program's own process inherits gpumem check's rank */
    check_rank_read(&r);
    if (r.rank >= 0) {
        fprintf(f, "  \"rank\": %ld,\n", r.rank);
        if (r.local_rank >= 0)
            fprintf(f, "  \"local_rank\": %ld,\n", r.local_rank);
        fprintf(f, "  \"rank_from\": \"%s\",\n", r.from);
    }
    fprintf(f, "  \"status\": \"%s\",\n  \"%s\": %d,\n  \"complete\": false,\n"
               "  \"%s\": ", killed ? "killed" : "unreported", killed ? "signal" : "exit_code",
            code, killed ? "killed_because" : "unreported_because");
    json_puts(f, why);
    fprintf(f, ",\n  \"findings\": []\n}\n");
    if (fclose(f) != 0)
        fprintf(stderr, "gpumem check: error: cannot write the JSON report to %s (%s)\n", path,
                strerror(errno));
}

/* One status file into *ps (errors -1 when it has no result: a process that started and never
 * ended its report, whose status is "running"). */
static void read_one(const char *path, proc_status *ps)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "command ", 8) == 0)
            snprintf(ps->command, sizeof ps->command, "%.255s", line + 8);
        else if (strncmp(line, "device ", 7) == 0)
            add_device_line(line);
        else if (sscanf(line, "errors %ld", &ps->errors) == 1 ||
                 sscanf(line, "status %31s", ps->status) == 1 ||
                 sscanf(line, "code %ld", &ps->code) == 1 ||
                 sscanf(line, "leaks %llu", &ps->leaks) == 1 ||
                 sscanf(line, "leaked_bytes %llu", &ps->leaked_bytes) == 1 ||
                 sscanf(line, "allocations %lld", &ps->allocations) == 1 ||
                 sscanf(line, "rank %ld", &ps->rank) == 1 ||
                 sscanf(line, "local_rank %ld", &ps->local_rank) == 1)
            continue;
    }
    fclose(f);
}

/* Sums the status files, and lists the processes when there were several or one left no
 * report; returns the number of processes that reported, in *root_reported whether the
 * program's own process (root) was one of them, in *missing how many others started CUDA and
 * left no report (SIGKILL), and in *root_started whether the program's own process started
 * CUDA (whether or not it reported). */
static int read_status(const char *dir, long root, long *errors, int *unchecked,
                       int *root_reported, int *missing, int *root_started)
{
    DIR *d = opendir(dir);
    int n = 0, cap = 0, reported = 0;
    proc_status *procs = NULL;
    *errors = 0;
    *unchecked = *root_reported = *missing = *root_started = 0;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        proc_status ps = {.pid = strtol(e->d_name, NULL, 10), .errors = -1, .rank = -1,
                          .local_rank = -1, .allocations = -1};
        read_one(path, &ps);
        unlink(path);
        if (ps.errors < 0) {
            /* The program's own process: finish() says what its wait status tells. */
            *root_started |= ps.pid == root && strcmp(ps.status, "running") == 0;
            if (strcmp(ps.status, "running") != 0 || ps.pid == root)
                continue;
            ps.missing = 1;
            (*missing)++;
        } else {
            *errors += ps.errors;
            *unchecked += strcmp(ps.status, "unchecked") == 0;
            *root_reported |= ps.pid == root;
            reported++;
        }
        if (n == cap) {
            int ncap = cap ? cap * 2 : 16;
            proc_status *grown = realloc(procs, (size_t)ncap * sizeof *grown);
            if (grown) {
                procs = grown;
                cap = ncap;
            }
        }
        if (n < cap)
            procs[n] = ps;
        n++;
    }
    closedir(d);
    rmdir(dir);
    if ((reported > 1 || *missing) && n <= cap) {
        qsort(procs, (size_t)n, sizeof *procs, by_rank);
        print_processes(procs, n);
    }
    free(procs);
    return reported;
}

static int set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        fprintf(stderr, "gpumem check: error: cannot set %s: %s\n", name, strerror(errno));
        return -1;
    }
    return 0;
}

/* What the command line asked for. */
typedef struct {
    const char *leak, *log, *json, *gen, *trace, *show_kinds, *error_kinds, *failed_calls, *watch_calls;
    char log_abs[PATH_MAX * 2], json_abs[PATH_MAX * 2], trace_abs[PATH_MAX * 2];
    int default_supp, quiet;
    long error_exitcode;
    char *supp; /* the suppression files, newline-separated */
    size_t supp_len;
} check_opts;

enum { OPT_LEAK, OPT_EXITCODE, OPT_LOG, OPT_JSON, OPT_SUPP, OPT_GEN, OPT_QUIET, OPT_TRACE,
       OPT_SHOW_KINDS, OPT_ERROR_KINDS, OPT_DEFAULT_SUPP, OPT_FAILED_CALLS, OPT_WATCH_CALLS };

static const cli_opt check_opt_table[] = {
    {"--leak-check", 0, CLI_VALUE, OPT_LEAK},     {"--error-exitcode", 0, CLI_VALUE, OPT_EXITCODE},
    {"--log-file", 0, CLI_VALUE, OPT_LOG},        {"--json", 0, CLI_VALUE, OPT_JSON},
    {"--suppressions", 0, CLI_VALUE, OPT_SUPP},   {"--gen-suppressions", 0, CLI_VALUE, OPT_GEN},
    {"--quiet", 'q', CLI_FLAG, OPT_QUIET},        {"--trace", 0, CLI_VALUE, OPT_TRACE},
    {"--show-leak-kinds", 0, CLI_VALUE, OPT_SHOW_KINDS},
    {"--errors-for-leak-kinds", 0, CLI_VALUE, OPT_ERROR_KINDS},
    {"--default-suppressions", 0, CLI_VALUE, OPT_DEFAULT_SUPP},
    {"--failed-calls", 0, CLI_VALUE, OPT_FAILED_CALLS},
    {"--watch-calls", 0, CLI_VALUE, OPT_WATCH_CALLS}};

/* Appends path and a newline to the suppression files passed on. Returns 0, or -1 without
 * memory. */
static int add_supp_path(check_opts *o, const char *path)
{
    size_t add = strlen(path) + 1;
    char *grown = realloc(o->supp, o->supp_len + add + 1);
    if (!grown)
        return -1;
    o->supp = grown;
    snprintf(o->supp + o->supp_len, add + 1, "%s\n", path);
    o->supp_len += add;
    return 0;
}

/* --suppressions=FILE: checked here, passed on by its full path. */
static int option_supp(cli *c, check_opts *o, const char *v)
{
    char err[512];
    if (check_supp_load(v, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem check: error: %s\n", err);
        return 2;
    }
    char full[PATH_MAX];
    if (!realpath(v, full))
        snprintf(full, sizeof full, "%s", v);
    return add_supp_path(o, full) == 0 ? 0 : cli_usage_error(c, "%s", "out of memory");
}

/* --log-file, --json and --trace's PATH, made absolute into abs (PATH_MAX * 2 bytes): the
 * program may change its folder before it writes them. */
static int option_path(cli *c, const char **dst, char *abs, const char *v)
{
    char cwd[PATH_MAX];
    if (!*v)
        return cli_usage_error(c, "%s needs a path", c->opt);
    if (v[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(abs, PATH_MAX * 2, "%s/%s", cwd, v);
    else
        snprintf(abs, PATH_MAX * 2, "%s", v);
    /* The longest name it can become: %p a pid (10 digits at most), %r a rank (20) or
     * norank-PID, and the suffixes of a child (.PID) and of a later program (.execN). A name is
     * never cut: one that would not fit is refused here rather than lost later. */
    size_t longest = strlen(abs) + 12 + 8;
    for (const char *p = abs; (p = strchr(p, '%')) != NULL; p++)
        if (p[1] == 'p' || p[1] == 'r')
            longest += p[1] == 'p' ? 8 : 25;
    if (longest >= PATH_MAX)
        return cli_usage_error(c, "%s: the name can be %zu bytes long once %%p and %%r are "
                                  "expanded, more than a path may be (%d)", c->opt, longest,
                               PATH_MAX - 1);
    *dst = abs;
    return 0;
}

/* An option whose value is a word of its setting's choices (settings.def): the list checked
 * and said from the one row the engine reads too. */
static int option_choice(cli *c, check_setting s, const char **dst, const char *v)
{
    const char *choices = check_setting_choices(s);
    *dst = v;
    if (check_choice_index(choices, v) >= 0)
        return 0;
    char said[128] = "";
    size_t n = 0;
    for (int i = 0; choices[i] && n < sizeof said - 8; i++) {
        if (choices[i] != '|') {
            said[n++] = choices[i];
            continue;
        }
        const char *sep = strchr(choices + i + 1, '|') ? ", " : " or ";
        n += (size_t)snprintf(said + n, sizeof said - n, "%s", sep);
    }
    said[n] = '\0';
    return cli_usage_error(c, "%s takes %s, not '%s'", c->opt, said, v);
}

/* One option of check_opt_table with its value. Returns 0, or the exit status of a usage
 * error. */
static int option(cli *c, int id, check_opts *o)
{
    const char *v = c->value;
    switch (id) {
    case OPT_LEAK:
        return option_choice(c, CHECK_SET_LEAK, &o->leak, v);
    case OPT_SHOW_KINDS:
    case OPT_ERROR_KINDS:
        *(id == OPT_SHOW_KINDS ? &o->show_kinds : &o->error_kinds) = v;
        if (check_leak_kinds_parse(v) < 0)
            return cli_usage_error(c, "%s takes definite, reachable, all or none "
                                      "(comma-separated), not '%s'", c->opt, v);
        return 0;
    case OPT_EXITCODE: {
        char *end;
        errno = 0;
        o->error_exitcode = strtol(v, &end, 10);
        if (!*v || *end || errno || o->error_exitcode < 0 || o->error_exitcode > 255)
            return cli_usage_error(c, "--error-exitcode takes a number from 0 to 255, not '%s'", v);
        return 0;
    }
    case OPT_LOG:
        return option_path(c, &o->log, o->log_abs, v);
    case OPT_JSON:
        return option_path(c, &o->json, o->json_abs, v);
    case OPT_TRACE:
        return option_path(c, &o->trace, o->trace_abs, v);
    case OPT_SUPP:
        return option_supp(c, o, v);
    case OPT_GEN:
        o->gen = strcmp(v, "no") ? "yes" : "no";
        if (strcmp(v, "no") && strcmp(v, "yes") && strcmp(v, "all"))
            return cli_usage_error(c, "--gen-suppressions takes no or yes, not '%s'", v);
        return 0;
    case OPT_DEFAULT_SUPP:
        o->default_supp = strcmp(v, "yes") == 0;
        if (strcmp(v, "yes") && strcmp(v, "no"))
            return cli_usage_error(c, "--default-suppressions takes yes or no, not '%s'", v);
        return 0;
    case OPT_FAILED_CALLS:
        return option_choice(c, CHECK_SET_FAILED_CALLS, &o->failed_calls, v);
    case OPT_WATCH_CALLS:
        return option_choice(c, CHECK_SET_WATCH_CALLS, &o->watch_calls, v);
    case OPT_QUIET:
        o->quiet = 1;
        return 0;
    }
    return 0;
}

/* A trace that cannot be written is found out before the program runs. Returns 0, or 2. */
static int trace_writable(const char *trace)
{
    char folder[PATH_MAX * 2];
    snprintf(folder, sizeof folder, "%s", trace);
    char *slash = strrchr(folder, '/');
    if (slash)
        *(slash == folder ? slash + 1 : slash) = '\0';
    if (access(folder, W_OK | X_OK) == 0)
        return 0;
    fprintf(stderr, "gpumem check: error: --trace=%s cannot be written: %s: %s\n", trace, folder,
            strerror(errno));
    return 2;
}

/* The default suppressions lie beside the library (build tree and installation alike).
 * Returns 0, or an exit status. */
static int add_default_supp(check_opts *o, const char *lib)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s", lib);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
             "default.supp");
    char err[512];
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "gpumem check: warning: the default suppressions (%s) are missing: "
                        "leaks of frameworks' caching allocators will be reported; "
                        "--default-suppressions=no silences this\n", path);
        return 0;
    }
    if (check_supp_load(path, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem check: error: %s\n", err);
        return 2;
    }
    if (add_supp_path(o, path) != 0) {
        fprintf(stderr, "gpumem check: error: out of memory\n");
        return 1;
    }
    return 0;
}

/* The variables that inject the library into the program's processes and tell it what was
 * asked (read by the engine's setup, engine.c). Returns 0, or -1 (said). */
static int set_program_env(const check_opts *o, const char *lib, const char *status_dir)
{
    const char *old_injection = getenv("CUDA_INJECTION64_PATH");
    if (old_injection && *old_injection && strcmp(old_injection, lib) != 0)
        fprintf(stderr, "gpumem check: warning: CUDA_INJECTION64_PATH=%s is replaced by gpumem "
                        "check's own\n", old_injection);
    char preload[PATH_MAX * 2];
    const char *old_preload = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", lib, old_preload && *old_preload ? ":" : "",
             old_preload ? old_preload : "");
    if (set_env("CUDA_INJECTION64_PATH", lib) || set_env("LD_PRELOAD", preload))
        return -1;
    /* Only what was asked: an unset variable is the library's default (settings.def). */
    const struct {
        check_setting s;
        const char *value;
    } settings[] = {{CHECK_SET_LEAK, o->leak},
                    {CHECK_SET_GEN_SUPPRESSIONS, o->gen},
                    {CHECK_SET_SHOW_LEAK_KINDS, o->show_kinds},
                    {CHECK_SET_ERRORS_FOR_LEAK_KINDS, o->error_kinds},
                    {CHECK_SET_FAILED_CALLS, o->failed_calls},
                    {CHECK_SET_WATCH_CALLS, o->watch_calls},
                    {CHECK_SET_STATUS, status_dir},
                    {CHECK_SET_QUIET, o->quiet ? "1" : NULL},
                    {CHECK_SET_LOG, o->log},
                    {CHECK_SET_JSON, o->json},
                    {CHECK_SET_TRACE, o->trace},
                    {CHECK_SET_SUPPRESSIONS, o->supp}};
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
        if (settings[i].value && set_env(check_setting_name(settings[i].s), settings[i].value))
            return -1;
    return 0;
}

/* Whether path is a report gpumem check wrote: a JSON report opens with its schema, a log
 * with valgrind's "==PID== " prefix (or the line of a rank's header). */
static int is_check_report(const char *path)
{
    char head[64] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n <= 0)
        return n == 0; /* empty: a report begun and cut, or nothing at all */
    static const char schema[] = "{\n  \"schema\": \"gpumem-check/";
    if (strncmp(head, schema, sizeof schema - 1) == 0)
        return 1;
    size_t digits = head[0] == '=' && head[1] == '=' ? strspn(head + 2, "0123456789") : 0;
    return digits && strncmp(head + 2 + digits, "== ", 3) == 0;
}

/* Removes the report files an earlier run left under the names this run's --log-file and
 * --json patterns give (every pid and rank, and children's .PID and .execN suffixes), so that
 * no report of an earlier run survives to be read as this run's: a process killed before it
 * writes its report (SIGKILL), or a rank that does not run this time, leaves no clean report
 * behind. Only regular files that read as gpumem check's reports. A gpumem check that is
 * itself one rank of a job (mpirun gpumem check ...) removes only its own rank's files: the
 * others are other ranks' checks, running now. */
static void remove_stale_reports(const check_opts *o)
{
    check_rank r;
    check_rank_read(&r);
    const char *patterns[] = {o->log, o->json};
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
        if (!patterns[i])
            continue;
        char glob_pattern[4096 + 8];
        size_t g = 0;
        for (const char *c = patterns[i]; *c && g + 24 < sizeof glob_pattern; c++) {
            if (c[0] == '%' && (c[1] == 'p' || c[1] == 'r')) {
                g += (size_t)(c[1] == 'r' && r.rank >= 0
                                  ? snprintf(glob_pattern + g, sizeof glob_pattern - g, "%ld", r.rank)
                                  : snprintf(glob_pattern + g, sizeof glob_pattern - g, "*"));
                c++;
            } else if (strchr("*?[\\", *c)) {
                glob_pattern[g++] = '\\';
                glob_pattern[g++] = *c;
            } else {
                glob_pattern[g++] = *c;
            }
        }
        for (int suffixed = 0; suffixed < 2; suffixed++) {
            glob_pattern[g] = '\0';
            if (suffixed)
                snprintf(glob_pattern + g, sizeof glob_pattern - g, ".*");
            glob_t found;
            if (glob(glob_pattern, GLOB_NOSORT, NULL, &found) != 0)
                continue;
            for (size_t k = 0; k < found.gl_pathc; k++) {
                struct stat sb;
                if (lstat(found.gl_pathv[k], &sb) == 0 && S_ISREG(sb.st_mode) &&
                    is_check_report(found.gl_pathv[k]))
                    unlink(found.gl_pathv[k]);
            }
            globfree(&found);
        }
    }
}

/* Runs the program, signals forwarded to it; its wait status in *st. Returns 0, or 1. */
static int run_program(const check_opts *o, char **argv, int *st)
{
    remove_stale_reports(o);
    fflush(NULL);
    child = fork();
    if (child < 0) {
        fprintf(stderr, "gpumem check: error: fork: %s\n", strerror(errno));
        return 1;
    }
    if (child == 0) {
        char root[32];
        snprintf(root, sizeof root, "%ld", (long)getpid());
        setenv(check_setting_name(CHECK_SET_ROOT), root, 1);
        execvp(argv[0], argv);
        fprintf(stderr, "gpumem check: error: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    while (waitpid(child, st, 0) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "gpumem check: error: waitpid: %s\n", strerror(errno));
            return 1;
        }
    return 0;
}

/* After the program: the processes' status files summed up, what is said of a program that
 * reported nothing, and gpumem check's exit status. */
static int finish(const check_opts *o, const char *status_dir, const char *program, int st)
{
    long errors;
    int unchecked, root_reported, missing, root_started;
    int reported = read_status(status_dir, (long)child, &errors, &unchecked, &root_reported,
                               &missing, &root_started);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && reported == 0)
        return 127;
    if (root_started && !root_reported && !WIFSIGNALED(st)) {
        /* It started CUDA and ended without the report its exit, _exit, exec or crash would
         * have written (a static program's raw exit system call, say): what it did with CUDA
         * is unknown, which is no clean run. */
        fprintf(stderr, "gpumem check: %s (pid %ld) started CUDA and ended without writing its "
                        "report (it exited %d by a way gpumem check does not see); what it did "
                        "with CUDA is unknown%s\n",
                program, (long)child, WEXITSTATUS(st),
                o->error_exitcode ? ": counted as an error" : "");
        if (o->json)
            write_unreported_json(o->json, child, "exited", WEXITSTATUS(st), program);
        errors++;
    } else if (reported == 0 && WIFSIGNALED(st)) {
        /* SIGKILL (and a signal the program handles itself) ends it before its report is
         * written: say so rather than that it used no CUDA, and leave a JSON report that says
         * the same, so that a CI job reading it does not see a clean run. */
        int sig = WTERMSIG(st);
        const char *abbrev = sigabbrev_np(sig);
        fprintf(stderr, "gpumem check: %s was killed by signal %d (SIG%s) and left no report: "
                        "either it used no CUDA, or the signal ended it before its report could "
                        "be written%s\n",
                program, sig, abbrev ? abbrev : "?",
                sig == SIGKILL ? " (SIGKILL cannot be caught); what it did with CUDA is unknown"
                               : "");
        if (o->json)
            write_unreported_json(o->json, child, "killed", sig, program);
    } else if (reported == 0 && !missing && !o->quiet) {
        fprintf(stderr, "gpumem check: %s used no CUDA, so there was nothing to check\n", program);
    } else if (!root_reported && !o->quiet) {
        /* A launcher, or a parent that forks its workers: only they were checked. */
        fprintf(stderr, "gpumem check: %s (pid %ld) used no CUDA; %d process%s it started %s\n",
                program, (long)child, reported, reported == 1 ? "" : "es",
                reported == 1 ? "was checked, with its report above"
                              : "were checked, each with its report above");
    }
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    if (errors > 0 && o->error_exitcode)
        return (int)o->error_exitcode;
    return WEXITSTATUS(st);
}

/* Whether PROGRAM can be run as execvp would find it: a path with a '/' as it is, a bare name
 * in a folder of PATH. If not, says why and returns 0: this comes first, so that a typo in the
 * program's name is not answered with what the machine lacks. */
static int program_found(const char *program)
{
    struct stat st;
    if (strchr(program, '/')) {
        if (stat(program, &st) != 0) {
            fprintf(stderr, "gpumem check: error: cannot run %s: %s\n", program, strerror(errno));
            return 0;
        }
        if (S_ISDIR(st.st_mode) || access(program, X_OK) != 0) {
            fprintf(stderr, "gpumem check: error: cannot run %s: %s\n", program,
                    S_ISDIR(st.st_mode) ? "it is a folder" : "not executable");
            return 0;
        }
        return 1;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        char cand[PATH_MAX];
        int len = snprintf(cand, sizeof cand, "%.*s/%s", (int)n, n ? p : ".", program);
        if (len > 0 && (size_t)len < sizeof cand && stat(cand, &st) == 0 &&
            !S_ISDIR(st.st_mode) && access(cand, X_OK) == 0)
            return 1;
        if (!colon)
            break;
        p = colon + 1;
    }
    fprintf(stderr, "gpumem check: error: cannot run %s: no such program in PATH\n", program);
    return 0;
}

/* Reads the options; returns -1 to go on (the program is argv[*next]), else the exit status. */
static int parse_options(int argc, char **argv, check_opts *o, int *next)
{
    static const cli_cmd cmd = {"check", check_opt_table, CLI_COUNT(check_opt_table), usage,
                                CLI_STOP_OPERAND};
    cli c;
    cli_start(&c, &cmd, argc, argv);
    for (int id; (id = cli_next(&c)) != CLI_DONE;) {
        if (id == CLI_EXIT)
            return c.status;
        int bad = option(&c, id, o);
        if (bad)
            return bad;
    }
    *next = c.next;
    check_supp_clear();
    if (o->trace && trace_writable(o->trace) != 0)
        return 2;
    if (*next >= argc)
        return cli_usage_error(&c, "%s",
                               "no PROGRAM to run (gpumem check [options] -- PROGRAM [ARGS...])");
    if (!program_found(argv[*next]))
        return 127;
    return -1;
}

/* Prepares the library, the suppressions and the status folder. Returns -1 to go on, else the
 * exit status. */
static int prepare(check_opts *o, char *lib, char *status_dir)
{
    if (!cli_have_driver("check", "gpumem check needs a GPU to run a program"))
        return CLI_EXIT_UNAVAILABLE;
    if (find_library(lib) != 0)
        return 2;
    int rc = o->default_supp ? add_default_supp(o, lib) : 0;
    if (rc)
        return rc;
    check_supp_clear(); /* only checked here; the program's processes read them */
    /* A library the loader cannot load (CUPTI missing, say) would be skipped with a warning
     * and the program would run unchecked: find out here. It stays loaded in this process,
     * where it only waits to see whether CUDA was used, which it is not. */
    if (!dlopen(lib, RTLD_NOW | RTLD_LOCAL)) {
        fprintf(stderr, "gpumem check: error: cannot load %s: %s\n", lib, dlerror());
        return 2;
    }
    if (!mkdtemp(status_dir)) {
        fprintf(stderr, "gpumem check: error: cannot make a folder in /tmp: %s\n", strerror(errno));
        return 1;
    }
    return set_program_env(o, lib, status_dir) == 0 ? -1 : 1;
}

int gpumem_check_main(int argc, char **argv)
{
    check_opts o = {.leak = "full", .gen = "no", .show_kinds = "all", .error_kinds = "all",
                    .default_supp = 1};
    char lib[PATH_MAX], status_dir[] = "/tmp/gpumem-check.XXXXXX";
    int next = 0, st = 0;
    int rc = parse_options(argc, argv, &o, &next);
    if (rc < 0)
        rc = prepare(&o, lib, status_dir);
    free(o.supp);
    if (rc >= 0)
        return rc;
    if (run_program(&o, argv + next, &st) != 0)
        return 1;
    return finish(&o, status_dir, argv[next], st);
}

/* Where reports go when things are not simple: GPUMEM_REPORT_FILE naming a FIFO without a
 * reader, a parent and its children (made by fork(), or started with exec) sharing one report
 * file, names at the length a path may have, call sites whose file names are not UTF-8, and
 * streams on a full disk. No report may be lost without a word, wrong, or a hang.
 *
 * `test_report_files child MODE` is the program the exit-report tests run. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef GPUMEM_HAVE_JANSSON
#include <jansson.h>
#endif

#include "child_rounds.h"
#include "gpumem.h"
#include "harness.h"

static const char *self;
static char dir[] = "/tmp/gpumem-report-files-XXXXXX";

/* ---- the programs that leak ---- */

static void write_pid(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", getenv("TEST_DIR"), name);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%ld", (long)getpid());
        fclose(f);
    }
}

/* One allocation still live at exit, from a call site named by the mode. */
static int leak(void)
{
    return gpumem_device_alloc(1, 1 << 20) ? 0 : 3;
}

/* A child made by fork() leaks and ends with exit(), then the parent does. */
static int fork_leak(void)
{
    gpumem_device_alloc(1, 1 << 20);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        write_pid("forked.pid");
        gpumem_device_alloc(1, 4096);
        exit(0);
    }
    waitpid(pid, NULL, 0);
    return 0;
}

/* A child started with exec (this program again) leaks and ends first, then the parent. */
static int spawn_leak(void)
{
    gpumem_device_alloc(1, 1 << 20);
    write_pid("spawner.pid");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "child", "leak", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
    return 0;
}

static int latin1_leak(void)
{
    gpumem_site site = {"caf\xe9.c", "r\xe9sum\xe9", 7};
    return gpumem_device_alloc_at(1, 64, site) ? 0 : 3;
}

static int child(const char *mode)
{
    if (strcmp(mode, "leak") == 0)
        return leak();
    if (strcmp(mode, "fork-leak") == 0)
        return fork_leak();
    if (strcmp(mode, "spawn-leak") == 0)
        return spawn_leak();
    if (strcmp(mode, "latin1-leak") == 0)
        return latin1_leak();
    return 2;
}

/* Runs `self child MODE` with GPUMEM_REPORT_FILE=report (and env, "NAME=VALUE" or NULL) and
 * its stderr in err; waits up to 10 s. Its exit status, or -1 when it hung (killed then). */
static int run(const char *mode, const char *report, const char *env, const char *err)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(err, "w", stderr))
            _exit(126);
        setenv("GPUMEM_REPORT_FILE", report, 1);
        setenv("TEST_DIR", dir, 1);
        if (env)
            putenv((char *)env);
        execl(self, self, "child", mode, (char *)NULL);
        _exit(127);
    }
    int status;
    double took;
    if (!rounds_wait(pid, 10.0, &status, &took)) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static char *in_dir(const char *name)
{
    static char path[2][512];
    static int which;
    which ^= 1;
    snprintf(path[which], sizeof path[which], "%s/%s", dir, name);
    return path[which];
}

static const char *slurp(const char *path)
{
    const char *text = rounds_slurp(path);
    return text ? text : "(no file)";
}

/* ---- the tests ---- */

static char last_message[2048];

static void keep_message(const gpumem_error *e, void *arg)
{
    (void)arg;
    snprintf(last_message, sizeof last_message, "%s", e->message);
}

/* A full disk is an error, with the reason, not GPUMEM_OK. Before: GPUMEM_OK from both. */
static void test_full_disk_streams(void)
{
    FILE *full = fopen("/dev/full", "w");
    ASSERT_NOT_NULL(full);
    gpumem_set_error_handler(keep_message, NULL);
    void *p = gpumem_device_alloc(1, 4096);
    EXPECT_EQ(gpumem_stats_print(full), GPUMEM_EIO);
    EXPECT_CONTAINS(last_message, "gpumem: error: gpumem_stats_print could not write to the "
                                  "stream it was given (No space left on device)");
    gpumem_checkpoint_t cp = gpumem_checkpoint();
    void *q = gpumem_device_alloc(1, 4096);
    gpumem_checkpoint_diff_t d;
    clearerr(full);
    last_message[0] = '\0';
    EXPECT_EQ(gpumem_checkpoint_diff(&cp, full, &d), GPUMEM_EIO);
    EXPECT_CONTAINS(last_message, "gpumem_checkpoint_diff could not write");
    EXPECT_EQ(d.count, 1); /* the figures are right all the same */
    EXPECT_EQ(gpumem_checkpoint_diff(&cp, NULL, &d), GPUMEM_OK);
    FILE *null = fopen("/dev/null", "w");
    EXPECT_EQ(gpumem_stats_print(null), GPUMEM_OK);
    fclose(null);
    gpumem_set_error_handler(NULL, NULL);
    fclose(full);
    gpumem_free(q);
    gpumem_free(p);
}

/* A FIFO that no process reads: the exit report goes to stderr with a warning instead of
 * blocking the exit. Before: the program never ended. */
static void test_fifo_without_reader(void)
{
    char *fifo = in_dir("fifo"), *err = in_dir("fifo.err");
    ASSERT_EQ(mkfifo(fifo, 0600), 0);
    EXPECT_EQ(run("leak", fifo, NULL, err), 0);
    EXPECT_CONTAINS(slurp(err), "(a FIFO that no process reads); writing it here\n"
                                "gpumem: 1 allocation (1.0 MiB) still live at exit");
}

static long read_pid(const char *name)
{
    const char *text = rounds_slurp(in_dir(name));
    return text ? strtol(text, NULL, 10) : -1;
}

/* A parent and its child made by fork() share GPUMEM_REPORT_FILE without %p: the child's
 * report is in FILE.PID. Before: the parent's report truncated it away. */
static void test_fork_child_keeps_report(void)
{
    char report[512], err[512], childs[600];
    snprintf(report, sizeof report, "%s", in_dir("forked.txt"));
    snprintf(err, sizeof err, "%s", in_dir("forked.err"));
    EXPECT_EQ(run("fork-leak", report, NULL, err), 0);
    EXPECT_CONTAINS(slurp(report), "gpumem: 1 allocation (1.0 MiB) still live at exit");
    snprintf(childs, sizeof childs, "%s.%ld", report, read_pid("forked.pid"));
    EXPECT_CONTAINS(slurp(childs), "still live at exit");
}

/* A child started with exec writes FILE first; the parent, finding it written by another
 * process since it started, writes FILE.PID and says so. Before: the child's report was lost. */
static void test_exec_child_keeps_report(void)
{
    char report[512], err[512], parents[600];
    snprintf(report, sizeof report, "%s", in_dir("spawned.txt"));
    snprintf(err, sizeof err, "%s", in_dir("spawned.err"));
    EXPECT_EQ(run("spawn-leak", report, NULL, err), 0);
    snprintf(parents, sizeof parents, "%s.%ld", report, read_pid("spawner.pid"));
    EXPECT_CONTAINS(slurp(report), "gpumem: 1 allocation (1.0 MiB) still live at exit");
    EXPECT_CONTAINS(slurp(parents), "gpumem: 1 allocation (1.0 MiB) still live at exit");
    EXPECT_CONTAINS(slurp(err), "(another process wrote its report there); writing it ");
    EXPECT_CONTAINS(slurp(err), "hint: put %p in GPUMEM_REPORT_FILE to give each process");
}

/* A folder under dir deep enough that a name of len bytes fits in it with a last part of
 * 100 bytes; returns the folder. */
static char *deep_folder(size_t len)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/deep", dir);
    mkdir(path, 0700);
    while (strlen(path) + 1 + 100 < len) {
        size_t room = len - strlen(path) - 1 - 100, part = room - 1 < 200 ? room - 1 : 200;
        size_t o = strlen(path);
        path[o++] = '/';
        memset(path + o, 'd', part ? part : 1);
        path[o + (part ? part : 1)] = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return NULL;
    }
    return path;
}

static int holds_file_of(const char *folder, char c)
{
    DIR *d = opendir(folder);
    int found = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        found |= e->d_name[0] == c;
    if (d)
        closedir(d);
    return found;
}

/* A name of 4 090 bytes is used as it is; one that %p makes longer than a path may be is
 * refused with a warning (the report goes to stderr). Before: both were cut at 4 072 bytes. */
static void test_long_names(void)
{
    char *folder = deep_folder(4090);
    ASSERT_NOT_NULL(folder);
    char name[4200], err[512];
    snprintf(err, sizeof err, "%s", in_dir("long.err"));
    size_t n = strlen(folder);
    memcpy(name, folder, n);
    name[n] = '/';
    memset(name + n + 1, 'x', 4090 - n - 1);
    name[4090] = '\0';
    EXPECT_EQ(run("leak", name, NULL, err), 0);
    EXPECT_CONTAINS(slurp(name), "gpumem: 1 allocation (1.0 MiB) still live at exit");

    memset(name + n + 1, 'y', 4095 - n - 1 - 2);
    memcpy(name + 4093, "%p", 3); /* 4 095 bytes; with the pid in place of %p, more */
    EXPECT_EQ(run("leak", name, NULL, err), 0);
    EXPECT_CONTAINS(slurp(err), "gpumem: warning: cannot write the report to "
                                "GPUMEM_REPORT_FILE (the name is longer than a path may be, "
                                "with %p replaced); writing it here\n"
                                "  hint: choose a shorter name\n"
                                "gpumem: 1 allocation (1.0 MiB) still live at exit");
    EXPECT_TRUE(!holds_file_of(folder, 'y'));
}

#ifdef GPUMEM_HAVE_JANSSON
/* The file's "file" of the first site, from a JSON report that must load. */
static void expect_latin1_site(json_t *root)
{
    ASSERT_NOT_NULL(root);
    json_t *site = json_array_get(json_object_get(root, "sites"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(site, "file")), "caf\xef\xbf\xbd.c");
    EXPECT_STR_EQ(json_string_value(json_object_get(site, "function")),
                  "r\xef\xbf\xbdsum\xef\xbf\xbd");
    json_decref(root);
}

/* A call site whose file name is Latin-1 (a non-UTF-8 __FILE__): the JSON reports, on demand
 * and at exit, are still JSON, with U+FFFD in its place. Before: not JSON at all. */
static void test_json_not_utf8(void)
{
    char *report = in_dir("latin1.json"), *err = in_dir("latin1.err");
    EXPECT_EQ(run("latin1-leak", report, "GPUMEM_REPORT_FORMAT=json", err), 0);
    json_error_t jerr;
    json_t *root = json_load_file(report, 0, &jerr);
    if (!root)
        fprintf(stderr, "%s: %s\n", report, jerr.text);
    expect_latin1_site(root);

    gpumem_site site = {"caf\xe9.c", "r\xe9sum\xe9", 7};
    void *p = gpumem_device_alloc_at(1, 64, site);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    EXPECT_EQ(gpumem_report(f, GPUMEM_REPORT_JSON | GPUMEM_REPORT_FULL), 1);
    fclose(f);
    expect_latin1_site(json_loads(text, 0, &jerr));
    free(text);
    gpumem_free(p);
}
#endif

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    if (!mkdtemp(dir))
        return 1;
    RUN(test_full_disk_streams);
    RUN(test_fifo_without_reader);
    RUN(test_fork_child_keeps_report);
    RUN(test_exec_child_keeps_report);
    RUN(test_long_names);
#ifdef GPUMEM_HAVE_JANSSON
    RUN(test_json_not_utf8);
#endif
    int rc = harness_exit();
    if (rc == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        if (system(cmd) != 0)
            return 1;
    }
    return rc;
}

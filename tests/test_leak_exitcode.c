/* GPUMEM_LEAK_EXITCODE sets a leaking process's exit status without cutting exit short: exit
 * handlers registered before gpumem's (which run after it), destructors and stdio buffers all
 * still run. Values that are not an exit status (outside 1 to 255, e.g. 256 or 1k, whose low
 * 8 bits are 0) are refused with a warning and leave the status alone. A report that cannot
 * be written (a full disk) is said on stderr, and gpumem_report returns GPUMEM_EIO.
 *
 * `test_leak_exitcode child DIR` is the child: it leaks, and its handlers write files in DIR. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpumem.h"
#include "harness.h"

static char marker_dir[256];

static void touch(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", marker_dir, name);
    FILE *f = fopen(path, "w");
    if (f)
        fclose(f);
}

static void early_handler(void)
{
    touch("atexit");
}

__attribute__((destructor)) static void on_unload(void)
{
    if (*marker_dir)
        touch("destructor");
}

static int child(const char *dir)
{
    snprintf(marker_dir, sizeof marker_dir, "%s", dir);
    atexit(early_handler); /* before gpumem's: it runs after gpumem's report */
    printf("buffered output of the program\n"); /* stdout is a file: fully buffered */
    if (!gpumem_device_alloc(1, 4096))
        return 10;
    return 0;
}

static int exists(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static char *slurp(const char *path)
{
    static char buf[8192];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Runs the child with GPUMEM_LEAK_EXITCODE=value; returns its exit status (-1: not exited). */
static int run_with(const char *self, const char *dir, const char *value, const char *file)
{
    char out[512];
    snprintf(out, sizeof out, "%s/out", dir);
    unlink(out);
    char marker[512];
    snprintf(marker, sizeof marker, "%s/atexit", dir);
    unlink(marker);
    snprintf(marker, sizeof marker, "%s/destructor", dir);
    unlink(marker);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(out, "w", stdout) || !freopen(out, "a", stderr))
            _exit(126);
        setenv("GPUMEM_LEAK_EXITCODE", value, 1);
        if (file)
            setenv("GPUMEM_REPORT_FILE", file, 1);
        execl(self, self, "child", dir, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run(const char *self, const char *dir, const char *value)
{
    return run_with(self, dir, value, NULL);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "child") == 0)
        return child(argv[2]);
    char dir[] = "/tmp/gpumem-exitcode-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char out[512];
    snprintf(out, sizeof out, "%s/out", dir);

    EXPECT_EQ(run(argv[0], dir, "23"), 23);
    EXPECT_TRUE(exists(dir, "atexit"));
    EXPECT_TRUE(exists(dir, "destructor"));
    EXPECT_CONTAINS(slurp(out), "buffered output of the program\n");
    EXPECT_CONTAINS(slurp(out), "1 allocation (4.0 KiB) still live at exit");

    const char *refused[] = {"256", "512", "1k"};
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(run(argv[0], dir, refused[i]), 0);
        EXPECT_CONTAINS(slurp(out), "is not an exit status (1 to 255");
        EXPECT_TRUE(exists(dir, "atexit"));
    }
    EXPECT_EQ(run(argv[0], dir, "0"), 0);

    /* A full disk: the report that could not be written is said on stderr. */
    EXPECT_EQ(run_with(argv[0], dir, "0", "/dev/full"), 0);
    EXPECT_CONTAINS(slurp(out), "gpumem: error: the exit report was not written completely to "
                                "/dev/full (no space left on device); it would have said: 1 "
                                "allocation still live at exit\n");
    void *p = gpumem_device_alloc(1, 4096);
    FILE *full = fopen("/dev/full", "w");
    if (p && full) {
        EXPECT_EQ(gpumem_report(full, GPUMEM_REPORT_FULL), GPUMEM_EIO);
        EXPECT_EQ(gpumem_report(full, GPUMEM_REPORT_JSON), GPUMEM_EIO);
    } else {
        EXPECT_TRUE(p && full);
    }
    if (full)
        fclose(full);
    gpumem_free(p);
    remove(out);
    char m[512];
    snprintf(m, sizeof m, "%s/atexit", dir);
    remove(m);
    snprintf(m, sizeof m, "%s/destructor", dir);
    remove(m);
    rmdir(dir);
    return harness_exit();
}

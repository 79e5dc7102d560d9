/* Suppression files that a hostile or careless hand wrote: many '...' lines, globs full of
 * '*', and a FIFO given as the file. Matching must stay linear (the recursive walk took about
 * 2 s a finding at six '...' lines and doubled with each more), and loading must refuse what
 * is not a regular file instead of blocking. Also: the matcher's answers on ordinary cases. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "harness.h"
#include "suppress.h"

static char dir[] = "/tmp/gpumem-supp-XXXXXX";

static const char *write_supp(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static gpumem__frame frames[64];

static void make_stack(void)
{
    static char names[64][16];
    for (int i = 0; i < 64; i++) {
        snprintf(names[i], sizeof names[i], "f%d", i);
        frames[i] = (gpumem__frame){names[i], "kernel.cu", 100 + i, 0, "/usr/lib/libx.so", 0};
    }
}

static void test_ordinary_matches(void)
{
    char err[512];
    check_supp_clear();
    ASSERT_EQ(check_supp_load(write_supp("a.supp",
                                         "{\n inner\n gpumem:leak\n fun:f0\n fun:f1\n}\n"
                                         "{\n deep\n gpumem:*\n call:cuda*\n ...\n fun:f4[0-9]\n"
                                         " src:kernel.cu:14?\n}\n"
                                         "{\n set\n gpumem:double-free\n fun:[!a-e]9\n}\n"),
                              err, sizeof err),
              0);
    EXPECT_STR_EQ(check_supp_match(CHECK_LEAK, "cudaMalloc", frames, 64), "inner");
    EXPECT_STR_EQ(check_supp_match(CHECK_INVALID, "cudaFree", frames + 2, 62), "deep");
    EXPECT_NULL(check_supp_match(CHECK_INVALID, "cuMemFree", frames + 2, 62)); /* call */
    EXPECT_NULL(check_supp_match(CHECK_INVALID, "cudaFree", frames + 50, 14)); /* no f4x */
    EXPECT_STR_EQ(check_supp_match(CHECK_DOUBLE, "cuMemFree", frames + 9, 55), "set");
    EXPECT_NULL(check_supp_match(CHECK_DOUBLE, "cuMemFree", frames + 8, 56));
}

static void test_many_ellipses_are_linear(void)
{
    char text[4096] = "{\n hostile\n gpumem:*\n";
    for (int i = 0; i < 30; i++)
        strcat(text, " ...\n fun:f*\n");
    strcat(text, " fun:nowhere\n}\n{\n stars\n gpumem:*\n fun:*f*f*f*f*f*f*f*f*f*f*f*f*x\n}\n");
    char err[512];
    check_supp_clear();
    ASSERT_EQ(check_supp_load(write_supp("hostile.supp", text), err, sizeof err), 0);
    double start = now_s();
    int matched = 0;
    for (int i = 0; i < 100; i++)
        matched += check_supp_match(CHECK_LEAK, "cudaMalloc", frames, 64) != NULL;
    double took = now_s() - start;
    fprintf(stderr, "100 matches against 30 '...' lines and a 14-star glob: %.3f s\n", took);
    EXPECT_EQ(matched, 0);
    EXPECT_LE(took * 1000, 1000);
}

static void test_fifo_is_refused(void)
{
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/fifo.supp", dir);
    ASSERT_EQ(mkfifo(path, 0600), 0);
    alarm(10); /* a blocking open would hang here: fail instead */
    EXPECT_EQ(check_supp_load(path, err, sizeof err), -1);
    alarm(0);
    EXPECT_CONTAINS(err, "fifo.supp: not a regular file (a FIFO); give a suppression file");
    unlink(path);
    EXPECT_EQ(check_supp_load(dir, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "not a regular file (a folder)");
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    make_stack();
    RUN(test_ordinary_matches);
    RUN(test_many_ellipses_are_linear);
    RUN(test_fifo_is_refused);
    check_supp_clear();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return harness_exit();
}

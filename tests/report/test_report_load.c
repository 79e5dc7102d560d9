/* report_load on a trace it refuses: -1, the reason, and nothing left in the trace for the
 * caller to free (what was read before the damaged line is freed by report_load). Sizes near
 * the ends of int64 summed without overflow, by the loader and by the Perfetto writer (an
 * overflow there is undefined behaviour, which the sanitizer builds stop at). An id released
 * twice without its allocation releases nothing else. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "report.h"

static void test_refused_trace_holds_nothing(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/gpumem-report-load-%d.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"app\"}},\n"
          "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":1.0,\"cat\":\"device\",\"name\":\"a.c:1\","
          "\"id\":\"0x1\",\"args\":{\"bytes\":64,\"device\":0}},\n"
          "{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":2.0,\"name\":\"out of memory\","
          "\"args\":{\"site\":\"a.c:2\"}},\n"
          "not json\n"
          "{\"ph\":\"e\",\"pid\":1,\"tid\":1,\"ts\":3.0,\"cat\":\"device\",\"name\":\"a.c:1\","
          "\"id\":\"0x1\",\"args\":{\"bytes\":64,\"device\":0}},\n",
          f);
    fclose(f);
    report_trace t;
    char err[400] = "";
    EXPECT_EQ(report_load(path, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, ":5: not a JSON event");
    EXPECT_NULL(t.process);
    EXPECT_NULL(t.sites);
    EXPECT_NULL(t.failures);
    EXPECT_EQ(t.nsites, 0);
    EXPECT_EQ(t.nfailures, 0);
    remove(path);
}

static void test_huge_sizes(void)
{
    EXPECT_EQ(report_add_sat(INT64_MAX - 1, 5), INT64_MAX);
    EXPECT_EQ(report_add_sat(INT64_MIN + 1, -5), INT64_MIN);
    EXPECT_EQ(report_add_sat(-3, 5), 2);
    char path[256], out[280];
    snprintf(path, sizeof path, "%s/gpumem-report-huge-%d.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    snprintf(out, sizeof out, "%s.pftrace", path);
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"gpumem_trace\",\"args\":{}},\n", f);
    for (int i = 1; i <= 3; i++)
        fprintf(f, "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":%d.0,\"cat\":\"device\","
                   "\"name\":\"a.c:1\",\"id\":\"0x%d\",\"args\":{\"bytes\":%lld,"
                   "\"device\":0}},\n",
                i, i, (long long)(INT64_MAX - 10));
    fputs("{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"gpumem_end\",\"args\":{}}\n]}\n", f);
    fclose(f);
    report_trace t;
    char err[400] = "";
    ASSERT_EQ(report_load(path, &t, err, sizeof err), 0);
    EXPECT_EQ(t.peak_bytes, INT64_MAX);
    EXPECT_EQ(t.leaked_bytes, INT64_MAX);
    const char *names[] = {path};
    EXPECT_EQ(report_perfetto(&t, names, 1, out, err, sizeof err), 0);
    report_free(&t);
    remove(path);
    remove(out);
}

/* Two releases of an id the trace never allocated (a trace that began late) are two
 * unmatched releases, and release nothing else: allocation 0x1 is still live at the end. */
static void test_unknown_id_released_twice(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/gpumem-report-twice-%d.json",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
          "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"gpumem_trace\",\"args\":{}},\n"
          "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":1.0,\"cat\":\"device\",\"name\":\"a.c:1\","
          "\"id\":\"0x1\",\"args\":{\"bytes\":64,\"device\":0}},\n"
          "{\"ph\":\"e\",\"pid\":1,\"tid\":1,\"ts\":2.0,\"cat\":\"device\",\"name\":\"a.c:9\","
          "\"id\":\"0x9\",\"args\":{\"bytes\":32,\"device\":0}},\n"
          "{\"ph\":\"e\",\"pid\":1,\"tid\":1,\"ts\":3.0,\"cat\":\"device\",\"name\":\"a.c:9\","
          "\"id\":\"0x9\",\"args\":{\"bytes\":32,\"device\":0}},\n"
          "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"gpumem_end\",\"args\":{}}\n]}\n",
          f);
    fclose(f);
    report_trace t;
    char err[400] = "";
    ASSERT_EQ(report_load(path, &t, err, sizeof err), 0);
    EXPECT_EQ(t.unmatched_releases, 2);
    EXPECT_EQ(t.leaked_count, 1);
    EXPECT_EQ(t.leaked_bytes, 64);
    report_free(&t);
    remove(path);
}

int main(void)
{
    RUN(test_refused_trace_holds_nothing);
    RUN(test_huge_sizes);
    RUN(test_unknown_id_released_twice);
    return harness_exit();
}

/* report_load on a trace it refuses: -1, the reason, and nothing left in the trace for the
 * caller to free (what was read before the damaged line is freed by report_load). Sizes near
 * the ends of int64 summed without overflow, by the loader and by the Perfetto writer (an
 * overflow there is undefined behaviour, which the sanitizer builds stop at). An id released
 * twice without its allocation releases nothing else. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "report.h"
#include "temp_file.h"

/* A trace's first lines, with the event that makes it gpumem's, and its last. */
#define TRACE_HEAD                                                                                 \
    "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"                                              \
    "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"gpumem_trace\",\"args\":{}},\n"
#define TRACE_END "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"gpumem_end\",\"args\":{}}\n]}\n"
/* A device allocation ('b') or release ('e') of id at ts us. */
#define SPAN(ph, ts, id, bytes)                                                                    \
    "{\"ph\":\"" ph "\",\"pid\":1,\"tid\":1,\"ts\":" ts ",\"cat\":\"device\","                    \
    "\"name\":\"a.c:1\",\"id\":\"" id "\",\"args\":{\"bytes\":" bytes ",\"device\":0}},\n"

static void test_refused_trace_holds_nothing(void)
{
    char path[256];
    ASSERT_NOT_NULL(temp_file(path, sizeof path, "refused.json",
                              TRACE_HEAD
                              "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\","
                              "\"args\":{\"name\":\"app\"}},\n" SPAN("b", "1.0", "0x1", "64")
                              "{\"ph\":\"i\",\"pid\":1,\"tid\":1,\"ts\":2.0,\"name\":\"out of "
                              "memory\",\"args\":{\"site\":\"a.c:2\"}},\n"
                              "not json\n" SPAN("e", "3.0", "0x1", "64")));
    report_trace t;
    char err[400] = "";
    EXPECT_EQ(report_load(path, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, ":6: not a JSON event");
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
#define HUGE "9223372036854775797" /* INT64_MAX - 10 */
    char path[256], out[256];
    ASSERT_NOT_NULL(temp_file(path, sizeof path, "huge.json",
                              TRACE_HEAD SPAN("b", "1.0", "0x1", HUGE) SPAN("b", "2.0", "0x2", HUGE)
                                  SPAN("b", "3.0", "0x3", HUGE) TRACE_END));
#undef HUGE
    ASSERT_NOT_NULL(temp_path(out, sizeof out, "huge.pftrace"));
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
    ASSERT_NOT_NULL(temp_file(path, sizeof path, "twice.json",
                              TRACE_HEAD SPAN("b", "1.0", "0x1", "64") SPAN("e", "2.0", "0x9", "32")
                                  SPAN("e", "3.0", "0x9", "32") TRACE_END));
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

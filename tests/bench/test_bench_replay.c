/* `gpumem bench --replay`'s reading and writing, no CUDA (tools/bench/replay_load.c,
 * replay_report.c): a replay log and a gpumem trace read into operations (order, slots,
 * streams, the peak requested, releases of allocations made before the recording, events
 * out of time order); the log written back and read again the same; the table and the JSON
 * of made-up results, and the fragmentation at the peak; a gzipped log read as the plain one,
 * and one cut short or damaged refused; an id allocated again while live, or an event whose
 * time is no time, refused at its line; a zero-byte allocation and its release dropped;
 * releases long after their allocations. The command itself runs on the simulated device in
 * the bench_replay_* tests (tests/bench/CMakeLists.txt). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "temp_file.h"
#include "replay.h"

#ifdef GPUMEM_HAVE_ZLIB
#include <zlib.h>
#endif

static void test_log(void)
{
    char p_path[256];
    const char *p = temp_file(p_path, sizeof p_path, "a.log",
                              "gpumem-replay 1\n"
                              "# a comment\n"
                              "a 7 1000 0 1 0\n"
                              "a 9 3000 7f00 2 10\n"
                              "f 7 1 20\n"
                              "f 42 1 25\n" /* allocated before the recording */
                              "a 7 500 0 1 30\n" /* id 7 again, after its release */
                              "f 9 2 40\n");
    ASSERT_NOT_NULL(p);
    replay_trace t;
    char err[200] = "";
    ASSERT_EQ(replay_load(p, &t, err, sizeof err), 0);
    EXPECT_EQ(t.n, 5);
    EXPECT_EQ(t.allocs, 3);
    EXPECT_EQ(t.skipped, 1);
    EXPECT_EQ(t.nslots, 3);
    EXPECT_EQ(t.peak_requested, 4000);
    EXPECT_EQ(t.nstreams, 2);
    EXPECT_EQ(t.streams[1], 0x7f00);
    EXPECT_EQ(t.ops[1].stream, 1);
    EXPECT_EQ(t.ops[2].alloc, 0);
    EXPECT_EQ(t.ops[2].slot, t.ops[0].slot); /* the release names its allocation */
    EXPECT_EQ(t.ops[2].bytes, 1000);
    EXPECT_NE(t.ops[3].slot, t.ops[0].slot); /* a reused id is a new allocation */
    EXPECT_EQ(t.ops[4].slot, t.ops[1].slot);
    EXPECT_EQ(t.ops[4].stream, 1);

    /* Written and read back: the same operations. */
    char q_path[256];
    const char *q = temp_file(q_path, sizeof q_path, "b.log", "");
    FILE *f = fopen(q, "w");
    ASSERT_NOT_NULL(f);
    EXPECT_EQ(replay_write_log(f, &t), 0);
    fclose(f);
    replay_trace u;
    ASSERT_EQ(replay_load(q, &u, err, sizeof err), 0);
    EXPECT_EQ(u.n, t.n);
    EXPECT_EQ(u.peak_requested, t.peak_requested);
    for (size_t i = 0; i < t.n && i < u.n; i++) {
        EXPECT_EQ(u.ops[i].alloc, t.ops[i].alloc);
        EXPECT_EQ(u.ops[i].bytes, t.ops[i].bytes);
        EXPECT_EQ(u.ops[i].stream, t.ops[i].stream);
    }
    replay_free(&u);
    replay_free(&t);
    remove(p);
    remove(q);
}

/* A trace: device allocations and releases (pinned ones are not a device allocator's), out
 * of time order as threads' buffers write them. */
static void test_trace(void)
{
    char p_path[256];
    const char *p = temp_file(p_path, sizeof p_path, "t.json",
        "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
        "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"x\"}},\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":2,\"ts\":30.000,\"cat\":\"device\",\"name\":\"b.c:2\","
        "\"id\":\"0x2\",\"args\":{\"bytes\":2048,\"device\":0,\"address\":\"0x7000\","
        "\"stream\":\"0x0\",\"stack\":0}},\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":10.000,\"cat\":\"device\",\"name\":\"a.c:1\","
        "\"id\":\"0x1\",\"args\":{\"bytes\":4096,\"device\":0,\"address\":\"0x8000\","
        "\"stream\":\"0x1000\",\"stack\":0}},\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":15.000,\"cat\":\"pinned\",\"name\":\"a.c:9\","
        "\"id\":\"0x5\",\"args\":{\"bytes\":999,\"device\":0,\"address\":\"0x9000\","
        "\"stream\":\"0x0\",\"stack\":0}},\n"
        "{\"ph\":\"C\",\"pid\":1,\"tid\":1,\"ts\":10.000,\"name\":\"device memory, device 0\","
        "\"args\":{\"bytes\":4096}},\n"
        "{\"ph\":\"e\",\"pid\":1,\"tid\":1,\"ts\":20.000,\"cat\":\"device\",\"name\":\"a.c:1\","
        "\"id\":\"0x1\",\"args\":{\"bytes\":4096,\"device\":0,\"address\":\"0x8000\","
        "\"released_at\":\"a.c:5\"}},\n");
    ASSERT_NOT_NULL(p);
    replay_trace t;
    char err[200] = "";
    ASSERT_EQ(replay_load(p, &t, err, sizeof err), 0);
    EXPECT_EQ(t.n, 3);
    EXPECT_EQ(t.allocs, 2);
    EXPECT_EQ(t.ops[0].bytes, 4096); /* the earliest first */
    EXPECT_EQ(t.ops[1].alloc, 0);
    EXPECT_EQ(t.ops[2].bytes, 2048);
    EXPECT_EQ(t.peak_requested, 4096);
    EXPECT_EQ(t.ops[0].ns, 0); /* from the first event */
    EXPECT_EQ(t.ops[2].ns, 20000);
    EXPECT_EQ(t.npids, 1);
    EXPECT_EQ(t.ndevices, 1);
    replay_free(&t);
    remove(p);

    /* Two processes, one on two devices (a job's merged trace): counted */
    char job_path[256];
    const char *job = temp_file(job_path, sizeof job_path, "job.json",
        "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
        "{\"ph\":\"b\",\"pid\":0,\"tid\":1,\"ts\":1.0,\"cat\":\"device\",\"id\":\"0x1\","
        "\"args\":{\"bytes\":64,\"device\":0,\"stream\":\"0x0\"}},\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":2.0,\"cat\":\"device\",\"id\":\"0x2\","
        "\"args\":{\"bytes\":64,\"device\":0,\"stream\":\"0x0\"}},\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":3.0,\"cat\":\"device\",\"id\":\"0x3\","
        "\"args\":{\"bytes\":64,\"device\":1,\"stream\":\"0x0\"}},\n");
    ASSERT_NOT_NULL(job);
    ASSERT_EQ(replay_load(job, &t, err, sizeof err), 0);
    EXPECT_EQ(t.npids, 2);
    EXPECT_EQ(t.ndevices, 2);
    replay_free(&t);
    remove(job);

    char empty_path[256];
    const char *empty = temp_file(empty_path, sizeof empty_path, "e.log", "gpumem-replay 1\n");
    EXPECT_EQ(replay_load(empty, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "holds no device allocation to replay");
    remove(empty);
    char bad_path[256];
    const char *bad = temp_file(bad_path, sizeof bad_path, "x.log", "gpumem-replay 1\nz 1 2 3\n");
    EXPECT_EQ(replay_load(bad, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, ":2: not a replay log line");
    remove(bad);
    EXPECT_EQ(replay_load("/nonexistent/x.log", &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "cannot read /nonexistent/x.log");
}

/* An id allocated again while live is refused at its line, in a log and in a trace (whose
 * events are read in time order: the line named is the later allocation's, wherever it
 * stands in the file). */
static void test_live_again(void)
{
    replay_trace t;
    char err[300] = "";
    char log_path[256];
    const char *log = temp_file(log_path, sizeof log_path, "dup.log",
                                "gpumem-replay 1\n"
                                "a 1 100 0 1 0\n"
                                "a 2 100 0 1 5\n"
                                "f 2 1 6\n"
                                "a 1 200 0 1 7\n"
                                "f 1 1 9\n");
    ASSERT_NOT_NULL(log);
    EXPECT_EQ(replay_load(log, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "dup.log:5: allocates an id that is already live");
    EXPECT_EQ(t.n, 0); /* nothing kept */
    remove(log);
    char tr_path[256];
    const char *tr = temp_file(tr_path, sizeof tr_path, "dup.json",
        "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":30.000,\"cat\":\"device\",\"id\":\"0x7\","
        "\"args\":{\"bytes\":64,\"stream\":\"0x0\"}},\n"
        "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":10.000,\"cat\":\"device\",\"id\":\"0x7\","
        "\"args\":{\"bytes\":64,\"stream\":\"0x0\"}},\n");
    ASSERT_NOT_NULL(tr);
    EXPECT_EQ(replay_load(tr, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "dup.json:2: allocates an id that is already live");
    remove(tr);
}

/* A zero-byte allocation is not replayed, nor is its release, which is not counted among the
 * releases of allocations made before the recording; its id allocated again while live is
 * refused as any other's. */
static void test_zero_bytes(void)
{
    replay_trace t;
    char err[300] = "";
    char p_path[256];
    const char *p = temp_file(p_path, sizeof p_path, "zero.log",
                              "gpumem-replay 1\n"
                              "a 3 0 0 1 0\n"
                              "a 4 100 0 1 1\n"
                              "f 3 1 2\n"
                              "f 4 1 3\n"
                              "a 3 0 0 1 4\n" /* released, so its id may come again */
                              "a 3 8 0 1 5\n");
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(replay_load(p, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "zero.log:7: allocates an id that is already live");
    remove(p);
    p = temp_file(p_path, sizeof p_path, "zero.log", "gpumem-replay 1\na 5 0 0 1 0\na 5 0 0 1 1\n");
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(replay_load(p, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "zero.log:3: allocates an id that is already live");
    remove(p);
    p = temp_file(p_path, sizeof p_path, "zero.log",
                  "gpumem-replay 1\n"
                  "a 3 0 0 1 0\n"
                  "a 4 100 0 1 1\n"
                  "f 3 1 2\n"
                  "f 4 1 3\n"
                  "f 9 1 4\n"); /* made before the recording */
    ASSERT_NOT_NULL(p);
    ASSERT_EQ(replay_load(p, &t, err, sizeof err), 0);
    EXPECT_EQ(t.n, 2);
    EXPECT_EQ(t.allocs, 1);
    EXPECT_EQ(t.skipped, 1);
    EXPECT_EQ(t.ops[1].bytes, 100);
    replay_free(&t);
    remove(p);
}

/* A trace event whose "ts" is no time is refused at its line (the order comes from it). */
static void test_bad_time(void)
{
    static const char *const times[] = {"1e300", "nan", "-inf", "x"};
    for (size_t i = 0; i < sizeof times / sizeof *times; i++) {
        char text[400];
        snprintf(text, sizeof text,
                 "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
                 "{\"ph\":\"b\",\"pid\":1,\"tid\":1,\"ts\":1.5,\"cat\":\"device\",\"id\":\"0x1\","
                 "\"args\":{\"bytes\":64,\"stream\":\"0x0\"}},\n"
                 "{\"ph\":\"e\",\"pid\":1,\"tid\":1,\"ts\":%s,\"cat\":\"device\",\"id\":\"0x1\"}\n",
                 times[i]);
        char p_path[256];
        const char *p = temp_file(p_path, sizeof p_path, "time.json", text);
        ASSERT_NOT_NULL(p);
        replay_trace t;
        char err[300] = "";
        EXPECT_EQ(replay_load(p, &t, err, sizeof err), -1);
        EXPECT_CONTAINS(err, "time.json:3: its \"ts\" is not a time");
        remove(p);
    }
}

/* A release far from its allocation carries the allocation's bytes and stream: 20,000
 * allocations on two streams, each released 5,000 operations later, in a log. */
static void test_long_lives(void)
{
    enum { N = 20000, LAG = 5000 };
    char p_path[256];
    const char *p = temp_file(p_path, sizeof p_path, "long.log", "");
    ASSERT_NOT_NULL(p);
    FILE *f = fopen(p, "w");
    ASSERT_NOT_NULL(f);
    fputs("gpumem-replay 1\n", f);
    for (int i = 1; i <= N + LAG; i++) {
        if (i <= N)
            fprintf(f, "a %d %d %x 1 %d\n", i, 256 * i, i % 2 ? 0x10 : 0x20, 2 * i);
        if (i > LAG)
            fprintf(f, "f %d 1 %d\n", i - LAG, 2 * i + 1);
    }
    fclose(f);
    replay_trace t;
    char err[200] = "";
    ASSERT_EQ(replay_load(p, &t, err, sizeof err), 0);
    EXPECT_EQ(t.n, 2 * N);
    EXPECT_EQ(t.nstreams, 2);
    size_t wrong = 0;
    for (size_t i = 0; i < t.n; i++) {
        const replay_op *op = &t.ops[i];
        if (op->bytes != 256u * op->slot || op->stream != (int)((op->slot + 1) % 2))
            wrong++;
    }
    EXPECT_EQ(wrong, 0);
    uint64_t live = 0; /* the peak: right after the last allocation, LAG + 1 live (its
                        * release of allocation N - LAG comes next) */
    for (uint64_t k = N - LAG; k <= N; k++)
        live += 256 * k;
    EXPECT_EQ(t.peak_requested, live);
    replay_free(&t);
    remove(p);
}

#ifdef GPUMEM_HAVE_ZLIB
/* Writes text gzipped to path; returns the file's size, 0 on failure. */
static long write_gz(const char *path, const char *text)
{
    gzFile z = gzopen(path, "wb");
    if (!z)
        return 0;
    int ok = gzputs(z, text) == (int)strlen(text);
    if (gzclose(z) != Z_OK || !ok)
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : 0;
    fclose(f);
    return n > 0 ? n : 0;
}

/* Keeps the first n bytes of path, with byte at (when at >= 0) inverted. */
static int cut_file(const char *path, long n, long at)
{
    FILE *f = fopen(path, "rb");
    char *buf = malloc((size_t)n);
    int ok = f && buf && fread(buf, 1, (size_t)n, f) == (size_t)n;
    if (f)
        fclose(f);
    if (ok && at >= 0)
        buf[at] = (char)~buf[at];
    f = ok ? fopen(path, "wb") : NULL;
    ok = f && fwrite(buf, 1, (size_t)n, f) == (size_t)n;
    if (f)
        ok = fclose(f) == 0 && ok;
    free(buf);
    return ok ? 0 : -1;
}

static void test_gzip(void)
{
    /* Enough lines that the gzip stream spans several reads of the FILE's buffer. */
    size_t cap = 1 << 20, used = 0;
    char *text = malloc(cap);
    ASSERT_NOT_NULL(text);
    used += (size_t)snprintf(text, cap, "gpumem-replay 1\n");
    for (int i = 0; i < 20000; i++)
        used += (size_t)snprintf(text + used, cap - used, "a %d %d 0 1 %d\nf %d 1 %d\n", i,
                                 4096 + (i * 7919) % 65536, 2 * i, i, 2 * i + 1);
    char plain_path[256];
    const char *plain = temp_file(plain_path, sizeof plain_path, "p.log", text);
    ASSERT_NOT_NULL(plain);
    char gz_path[256];
    const char *gz = temp_file(gz_path, sizeof gz_path, "g.log.gz", "");
    ASSERT_NOT_NULL(gz);
    long size = write_gz(gz, text);
    free(text);
    ASSERT_EQ(size > 1000, 1);

    replay_trace a, b;
    char err[300] = "";
    ASSERT_EQ(replay_load(plain_path, &a, err, sizeof err), 0);
    ASSERT_EQ(replay_load(gz, &b, err, sizeof err), 0);
    EXPECT_EQ(b.n, 40000);
    EXPECT_EQ(b.n, a.n);
    EXPECT_EQ(b.allocs, a.allocs);
    EXPECT_EQ(b.peak_requested, a.peak_requested);
    int same = 1;
    for (size_t i = 0; i < a.n && i < b.n; i++)
        same &= a.ops[i].alloc == b.ops[i].alloc && a.ops[i].bytes == b.ops[i].bytes &&
                a.ops[i].slot == b.ops[i].slot;
    EXPECT_TRUE(same);
    replay_free(&a);
    replay_free(&b);

    /* Cut short: refused, not replayed as far as it goes. */
    ASSERT_EQ(cut_file(gz, size / 2, -1), 0);
    EXPECT_EQ(replay_load(gz, &b, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "its gzip data is corrupt or cut short");
    EXPECT_CONTAINS(err, "after line ");
    /* Damaged in the middle. */
    long small = write_gz(gz, "gpumem-replay 1\na 1 4096 0 1 0\nf 1 1 1\n");
    ASSERT_EQ(small > 20, 1);
    ASSERT_EQ(cut_file(gz, small, small / 2), 0);
    EXPECT_EQ(replay_load(gz, &b, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "cannot read ");
    EXPECT_CONTAINS(err, "its gzip data is corrupt or cut short");
    remove(plain_path);
    remove(gz);
}
#endif

/* r's table and its JSON, into table and json (4096 bytes each); 0, or -1 when either could
 * not be written. */
static int report_texts(const replay_report *r, char *table, char *json)
{
    char err[100];
    FILE *f = fmemopen(table, 4096, "w");
    int ok = f && replay_print_table(f, r) == 0;
    if (f)
        fclose(f);
    f = fmemopen(json, 4096, "w");
    ok = ok && f && replay_write_json(f, r, err, sizeof err) == 0;
    if (f)
        fclose(f);
    return ok ? 0 : -1;
}

static void test_report(void)
{
    replay_report r;
    memset(&r, 0, sizeof r);
    r.path = "w.log";
    r.backend = "cuda";
    r.ops = 10;
    r.allocs = 5;
    r.nstreams = 1;
    r.peak_requested = 100 << 20;
    r.limit = (uint64_t)1 << 30;
    r.nresults = 3;
    r.results[0] = (replay_result){"gpumem_vmm", "gpumem device pool (pages)", 1, 110 << 20,
                                   99 << 20, 250.0, -1, "", 1, 12, 345, 1500};
    r.results[1] = (replay_result){"cuda_malloc", "cudaMalloc", 1, 200 << 20, 50 << 20, 9e4, 7,
                                   "", 0, 0, 0, 0};
    r.results[2] = (replay_result){"torch_default", "PyTorch caching allocator", 0, 0, 0, 0, -1,
                                   "PyTorch is not installed here", 0, 0, 0, 0};
    EXPECT_TRUE(replay_fragmentation(&r.results[0]) > 0.0999 &&
                replay_fragmentation(&r.results[0]) < 0.1001);
    EXPECT_TRUE(replay_fragmentation(&r.results[1]) == 0.75);
    char buf[4096] = "", json[4096] = "";
    ASSERT_EQ(report_texts(&r, buf, json), 0);
    EXPECT_CONTAINS(buf, "replay of w.log (cuda): 10 operations, 5 allocations on 1 stream, "
                         "peak requested 100.0 MiB; limit 1.0 GiB");
    EXPECT_CONTAINS(buf, "gpumem device pool (pages)                    110.0 MiB     1.10x   "
                         "      10.0%");
    EXPECT_CONTAINS(buf, "10.0%    0.25 us         12         345    0.15 us  no\n");
    EXPECT_CONTAINS(buf, "75.0%    90.0 us          -           -          -  at operation 7\n");
    EXPECT_CONTAINS(buf, "(PyTorch is not installed here)");
    EXPECT_CONTAINS(json, "\"peak_requested\": 104857600, \"limit\": 1073741824, \"cold\": 0");
    /* --cold: the header says the times were taken with the caches made cold */
    r.cold = 8 << 20;
    ASSERT_EQ(report_texts(&r, buf, json), 0);
    EXPECT_CONTAINS(buf, "peak requested 100.0 MiB; limit 1.0 GiB; time/op with the CPU's caches "
                         "made cold (8.0 MiB written before each operation)\n");
    EXPECT_CONTAINS(json, "\"limit\": 1073741824, \"cold\": 8388608, \"allocators\"");
    EXPECT_CONTAINS(json, "{\"key\": \"gpumem_vmm\", \"label\": \"gpumem device pool (pages)\", "
                          "\"ran\": true, \"peak_reserved\": 115343360, \"requested_at_peak\": "
                          "103809024, \"fragmentation\": 0.1000, \"ns_per_op\": 250.0, "
                          "\"oom_at\": -1, \"cuda_asks\": 12, \"pages_moved\": 345, "
                          "\"cuda_ns\": 1500}");
    EXPECT_CONTAINS(json, "\"oom_at\": 7}");
    EXPECT_CONTAINS(json, "\"ran\": false, \"note\": \"PyTorch is not installed here\"");
    EXPECT_CONTAINS(json, "\"streams\": 1, \"processes\": 1, \"devices\": 1,");
    /* A job's merged trace: said in the first line, and counted in the JSON */
    r.npids = 3;
    r.ndevices = 2;
    ASSERT_EQ(report_texts(&r, buf, json), 0);
    EXPECT_CONTAINS(buf, "peak requested 100.0 MiB; the allocations of 3 processes on 2 devices, "
                         "replayed as one program's on one device; limit 1.0 GiB");
    EXPECT_CONTAINS(json, "\"streams\": 1, \"processes\": 3, \"devices\": 2,");
}

int main(void)
{
    RUN(test_log);
    RUN(test_trace);
    RUN(test_live_again);
    RUN(test_bad_time);
    RUN(test_zero_bytes);
    RUN(test_long_lives);
#ifdef GPUMEM_HAVE_ZLIB
    RUN(test_gzip);
#endif
    RUN(test_report);
    return harness_exit();
}

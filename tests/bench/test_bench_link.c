/* tools/bench/link.c against a fake NVML (fake_nvml.c, found as libnvidia-ml.so.1 through
 * LD_LIBRARY_PATH): what it reads, and what it says when NVML cannot tell.
 * Usage: test_bench_link ok|hidden|nodevice|noinit (the fake's answers, passed on in
 * FAKE_NVML). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "harness.h"

static const char *mode;

static void test_link(void)
{
    bench_link link;
    char text[320];
    memset(&link, 0, sizeof link);
    bench_link_open("0000:3B:00.0", &link);
    bench_link_busy(&link);
    bench_link_close();
    bench_link_describe(&link, text, sizeof text);
    if (strcmp(mode, "ok") == 0) {
        EXPECT_EQ(link.known, 1);
        EXPECT_EQ(link.max_gen, 5);
        EXPECT_EQ(link.max_width, 16);
        EXPECT_EQ(link.cur_gen, 1); /* at rest */
        EXPECT_EQ(link.busy_gen, 5);
        EXPECT_EQ(link.busy_width, 16);
        EXPECT_STR_EQ(text, "PCIe 5.0 x16, limit 63.0 GB/s a direction; at rest 1.0 x16");
    } else if (strcmp(mode, "hidden") == 0) {
        EXPECT_EQ(link.known, 0);
        EXPECT_EQ(link.busy_gen, 0);
        EXPECT_STR_EQ(text, "link limit unknown (NVML has no PCIe link for 0000:3B:00.0: "
                            "Not Supported)");
    } else if (strcmp(mode, "nodevice") == 0) {
        EXPECT_EQ(link.known, 0);
        EXPECT_STR_EQ(text, "link limit unknown (NVML does not know PCI device 0000:3B:00.0: "
                            "Not Found)");
    } else {
        EXPECT_EQ(link.known, 0);
        EXPECT_EQ(link.cur_gen, 0);
        EXPECT_STR_EQ(text, "link limit unknown (NVML did not start: Driver Not Loaded)");
    }
    /* Closed: a busy read changes nothing. */
    link.busy_gen = 0;
    bench_link_busy(&link);
    EXPECT_EQ(link.busy_gen, 0);
}

int main(int argc, char **argv)
{
    mode = argc > 1 ? argv[1] : "ok";
    setenv("FAKE_NVML", mode, 1);
    RUN(test_link);
    return harness_exit();
}

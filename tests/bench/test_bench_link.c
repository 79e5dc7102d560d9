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
    if (strcmp(mode, "ok") == 0 || strcmp(mode, "pcie") == 0 || strcmp(mode, "nvswitch") == 0) {
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

/* What joins device 0000:3B:00.0 to 0000:3C:00.0 and back, for a device of compute capability
 * @major.@minor, as bench_pair_describe says it. */
static void pair_text(int src, int major, int minor, char *text, size_t n)
{
    static const char *const bus[2] = {"0000:3B:00.0", "0000:3C:00.0"};
    bench_pair_link pair;
    memset(&pair, 0, sizeof pair);
    pair.src = src;
    pair.dst = !src;
    bench_link_pair(bus[src], bus[!src], major, minor, &pair);
    bench_pair_describe(&pair, text, n);
}

static void test_pair(void)
{
    char text[320];
    pair_text(0, 9, 0, text, sizeof text);
    if (strcmp(mode, "ok") == 0 || strcmp(mode, "nvswitch") == 0) {
        EXPECT_STR_EQ(text, "NVLink, 18 links of 25 GB/s, limit 450.0 GB/s a direction");
        /* 3C: 12 active links; in "ok" 6 reach 3B and the others another GPU. */
        pair_text(1, 9, 0, text, sizeof text);
        EXPECT_STR_EQ(text, strcmp(mode, "ok") == 0
                                ? "NVLink, 6 links of 25 GB/s, limit 150.0 GB/s a direction"
                                : "NVLink, 12 links of 25 GB/s, limit 300.0 GB/s a direction");
        pair_text(0, 10, 0, text, sizeof text);
        EXPECT_STR_EQ(text, "NVLink, 18 links of 50 GB/s, limit 900.0 GB/s a direction");
        pair_text(0, 12, 0, text, sizeof text);
        EXPECT_STR_EQ(text, "link limit unknown (NVLink, 18 links, of a device of compute "
                            "capability 12.0, whose link rate gpumem does not know)");
    } else if (strcmp(mode, "pcie") == 0) {
        /* No NVLink: the slower PCIe link, 3C's 4.0 x16. */
        EXPECT_STR_EQ(text, "PCIe 4.0 x16 (NVML shows no NVLink between them), limit 31.5 GB/s a "
                            "direction");
    } else if (strcmp(mode, "hidden") == 0) {
        EXPECT_STR_EQ(text, "link limit unknown (NVML shows no NVLink between them, and no PCIe "
                            "link for device 0: Not Supported)");
    } else if (strcmp(mode, "nodevice") == 0) {
        EXPECT_STR_EQ(text, "link limit unknown (NVML does not know PCI device 0000:3B:00.0 or "
                            "0000:3C:00.0: Not Found)");
    } else {
        EXPECT_STR_EQ(text, "link limit unknown (NVML did not start: Driver Not Loaded)");
    }
    bench_pair_link pair;
    memset(&pair, 0, sizeof pair);
    bench_link_pair("0000:3B:00.0", "not a bus id", 9, 0, &pair);
    bench_pair_describe(&pair, text, sizeof text);
    EXPECT_STR_EQ(text, "link limit unknown (cannot read the PCI bus id 'not a bus id')");
}

int main(int argc, char **argv)
{
    mode = argc > 1 ? argv[1] : "ok";
    setenv("FAKE_NVML", mode, 1);
    RUN(test_link);
    RUN(test_pair);
    return harness_exit();
}

/* tools/bench/report.c with made-up results: the PCIe arithmetic, the link line, durations,
 * the table and (with jansson) the JSON document, field by field. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUMEM_HAVE_JANSSON
#include <jansson.h>
#endif

#include "bench.h"
#include "harness.h"

#define EXPECT_NEAR(a, b, tol)                                                                   \
    do {                                                                                         \
        double na_ = (a), nb_ = (b);                                                             \
        harness_checks++;                                                                        \
        if (!(fabs(na_ - nb_) <= (tol)))                                                         \
            HARNESS_FAIL_("%s ~ %s: %.6f vs %.6f", #a, #b, na_, nb_);                            \
    } while (0)

static void test_link_arithmetic(void)
{
    /* Rate x lanes x line code / 8 bits. */
    EXPECT_NEAR(bench_link_gbps(5, 16), 32.0 * 16 * 128 / 130 / 8, 1e-9); /* 63.02 */
    EXPECT_NEAR(bench_link_gbps(4, 16), 31.5077, 1e-4);
    EXPECT_NEAR(bench_link_gbps(3, 16), 15.7538, 1e-4);
    EXPECT_NEAR(bench_link_gbps(3, 8), 7.8769, 1e-4);
    EXPECT_NEAR(bench_link_gbps(2, 16), 8.0, 1e-9); /* 5 GT/s, 8b/10b */
    EXPECT_NEAR(bench_link_gbps(1, 16), 4.0, 1e-9);
    EXPECT_NEAR(bench_link_gbps(1, 1), 0.25, 1e-9);
    EXPECT_NEAR(bench_link_gbps(6, 16), 64.0 * 16 * 242 / 256 / 8, 1e-9);
    EXPECT_NEAR(bench_link_gbps(0, 16), 0.0, 0.0);
    EXPECT_NEAR(bench_link_gbps(7, 16), 0.0, 0.0);
    EXPECT_NEAR(bench_link_gbps(5, 0), 0.0, 0.0);

    bench_link l;
    memset(&l, 0, sizeof l);
    l.known = 1;
    l.max_gen = 4;
    l.max_width = 8;
    l.cur_gen = 4;
    l.cur_width = 8;
    EXPECT_NEAR(bench_link_limit(&l), bench_link_gbps(4, 8), 1e-12);
    l.known = 0;
    EXPECT_NEAR(bench_link_limit(&l), 0.0, 0.0);
}

static void test_link_describe(void)
{
    char buf[320];
    bench_link l;
    memset(&l, 0, sizeof l);
    snprintf(l.why, sizeof l.why, "built without nvml.h");
    EXPECT_STR_EQ(bench_link_describe(&l, buf, sizeof buf),
                  "link limit unknown (built without nvml.h)");
    l.known = 1;
    l.max_gen = l.cur_gen = l.busy_gen = 5;
    l.max_width = l.cur_width = l.busy_width = 16;
    EXPECT_STR_EQ(bench_link_describe(&l, buf, sizeof buf),
                  "PCIe 5.0 x16, limit 63.0 GB/s a direction");
    l.cur_gen = 1;
    l.busy_gen = 4;
    l.busy_width = 8;
    EXPECT_STR_EQ(bench_link_describe(&l, buf, sizeof buf),
                  "PCIe 5.0 x16, limit 63.0 GB/s a direction; at rest 1.0 x16; during the copies "
                  "4.0 x8, below its maximum");
    l.max_gen = 9;
    EXPECT_STR_EQ(bench_link_describe(&l, buf, sizeof buf),
                  "link limit unknown (NVML reports PCIe generation 9, x16)");
    /* A short buffer is cut, never overrun. */
    l.max_gen = 5;
    char small[12];
    EXPECT_STR_EQ(bench_link_describe(&l, small, sizeof small), "PCIe 5.0 x1");
}

static void test_format_ns(void)
{
    char b[32];
    EXPECT_STR_EQ(bench_format_ns(120.0, b, sizeof b), "0.12 us");
    EXPECT_STR_EQ(bench_format_ns(1290.0, b, sizeof b), "1.29 us");
    EXPECT_STR_EQ(bench_format_ns(91000.0, b, sizeof b), "91.0 us");
    EXPECT_STR_EQ(bench_format_ns(1.29e6, b, sizeof b), "1.29 ms");
    EXPECT_STR_EQ(bench_format_ns(2.1e9, b, sizeof b), "2.10 s");
    EXPECT_STR_EQ(bench_format_ns(BENCH_NOT_MEASURED, b, sizeof b), "-");
}

/* A report as a run on a PCIe 5.0 x16 machine could produce (the numbers are made up). */
static void make_report(bench_report *r)
{
    memset(r, 0, sizeof *r);
    r->version = "0.1.0";
    r->device = 0;
    snprintf(r->device_name, sizeof r->device_name, "Test GPU");
    r->cc_major = 9;
    r->cc_minor = 0;
    r->alloc_bytes[0] = 1 << 20;
    r->alloc_bytes[1] = 64 << 20;
    r->copy_bytes = r->host_bytes = 256 << 20;
    r->seconds = 100.0;
    r->link.known = 1;
    r->link.max_gen = r->link.cur_gen = r->link.busy_gen = 5;
    r->link.max_width = r->link.cur_width = r->link.busy_width = 16;
    bench_row *row = bench_row_add(r, BENCH_ALLOC, "cuda_malloc", "cudaMalloc + cudaFree");
    row->value[0] = 91000.0;
    row->value[1] = 221000.0;
    row->samples[0] = row->samples[1] = 30;
    row = bench_row_add(r, BENCH_ALLOC, "pool_device", "gpumem device pool");
    row->value[0] = 120.0;
    snprintf(row->note, sizeof row->note, "failed: gpumem_pool_alloc: GPUMEM_ENOMEM");
    row = bench_row_add(r, BENCH_ALLOC, "cuda_malloc_async_keep", "cudaMallocFromPoolAsync, keeps");
    row->value[0] = 300.0;
    row->value[1] = 500.0; /* the pool row has no value here: no ratio */
    row->vs = "pool_device";
    row = bench_row_add(r, BENCH_ALLOC, "cub_caching_allocator", "CUB CachingDeviceAllocator");
    row->value[0] = 900.0;
    row->vs = "pool_device";
    row->deprecated = "CCCL points to its memory resources over cudaMallocAsync";
    row = bench_row_add(r, BENCH_COPY, "pageable", "pageable (malloc), cudaMemcpy");
    row->value[0] = 6.3;
    row->value[1] = 12.6;
    row = bench_row_add(r, BENCH_COPY, "pinned", "pinned (cudaMallocHost)");
    row->value[0] = 55.4;
    row->value[1] = 55.3;
    row = bench_row_add(r, BENCH_COPY, "mapped", "mapped zero-copy, kernel access");
    snprintf(row->note, sizeof row->note, "not measured: built without nvcc (it needs a kernel)");
    row = bench_row_add(r, BENCH_HOST, "write_combined", "write-combined pinned");
    row->value[0] = 9.7;
    row->value[1] = 0.2;
}

static char *table_text(const bench_report *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    int rc = bench_print_table(f, r);
    fclose(f);
    if (rc != 0) {
        free(text);
        return NULL;
    }
    return text;
}

static void test_table(void)
{
    static bench_report r;
    make_report(&r);
    char *t = table_text(&r);
    ASSERT_NOT_NULL(t);
    EXPECT_CONTAINS(t, "gpumem bench 0.1.0: device 0, Test GPU (compute capability 9.0), full "
                       "run in 100.0 s\nlink: PCIe 5.0 x16, limit 63.0 GB/s a direction\n");
    EXPECT_CONTAINS(t, "allocate + release (a pair, median)               1.0 MiB     64.0 MiB\n");
    EXPECT_CONTAINS(t, "  cudaMalloc + cudaFree                           91.0 us     221.0 us\n");
    EXPECT_CONTAINS(t, "  cudaMallocFromPoolAsync, keeps                  0.30 us      0.50 us   "
                       "2.50x, - gpumem's\n");
    EXPECT_CONTAINS(t, "  gpumem device pool                              0.12 us            -\n");
    /* A deprecated peer says so on its line, and why under the table. */
    EXPECT_CONTAINS(t, "  CUB CachingDeviceAllocator                      0.90 us            -   "
                       "7.50x, - gpumem's   (deprecated)\n");
    EXPECT_CONTAINS(t, "  * CUB CachingDeviceAllocator: deprecated: CCCL points to its memory "
                       "resources over cudaMallocAsync\n");
    EXPECT_TRUE(strstr(t, "cudaMalloc + cudaFree                           91.0 us     221.0 us   ") == NULL);
    EXPECT_CONTAINS(t, "  * gpumem device pool: failed: gpumem_pool_alloc: GPUMEM_ENOMEM\n");
    EXPECT_CONTAINS(t, "copies of 256.0 MiB (median)                  H2D GB/s  of link  D2H GB/s  of link\n");
    /* 55.4 / 63.02 = 87.9 %, 6.3 / 63.02 = 10.0 %. */
    EXPECT_CONTAINS(t, "  pinned (cudaMallocHost)                         55.4     88 %      55.3     88 %\n");
    EXPECT_CONTAINS(t, "  pageable (malloc), cudaMemcpy                    6.3     10 %      12.6     20 %\n");
    EXPECT_CONTAINS(t, "  mapped zero-copy, kernel access                    -        -         -        -\n");
    EXPECT_CONTAINS(t, "  * mapped zero-copy, kernel access: not measured: built without nvcc");
    EXPECT_CONTAINS(t, "host access, 256.0 MiB, one thread (median)  write GB/s  read GB/s\n");
    EXPECT_CONTAINS(t, "  write-combined pinned                             9.7        0.2\n");
    free(t);

    /* Without a known limit there are no shares, and the table says why. */
    r.link.known = 0;
    snprintf(r.link.why, sizeof r.link.why, "built without nvml.h");
    r.quick = 1;
    t = table_text(&r);
    ASSERT_NOT_NULL(t);
    EXPECT_CONTAINS(t, "quick run in 100.0 s\nlink: link limit unknown (built without nvml.h)\n");
    EXPECT_CONTAINS(t, "  pinned (cudaMallocHost)                         55.4        -      55.3        -\n");
    free(t);
}

/* The devices section of a two-device run: pair 0 -> 1 over NVLink, 1 -> 0 unknown; peer
 * copies with peer access off and on; device 1's pool with itself and device 0 current. */
static void make_devices(bench_report *r)
{
    r->ndev = r->ndev_measured = 2;
    r->peer_bytes = 256 << 20;
    r->npairs = 2;
    r->pairs[0] = (bench_pair_link){.src = 0, .dst = 1, .nvlinks = 18, .nvlink_gbps = 25.0,
                                    .limit_gbps = 450.0};
    r->pairs[1] = (bench_pair_link){.src = 1, .dst = 0};
    snprintf(r->pairs[1].why, sizeof r->pairs[1].why, "built without nvml.h");
    for (int src = 0; src < 2; src++) {
        bench_row *row = bench_row_add(r, BENCH_PEER, "peer_copy", "cuMemcpyPeer");
        row->device = src;
        row->peer = !src;
        row->value[0] = 45.0;
        row->value[1] = 360.0;
        row = bench_row_add(r, BENCH_PEER, "gpumem_copy", "gpumem_copy");
        row->device = src;
        row->peer = !src;
        row->value[0] = 44.0;
        snprintf(row->note, sizeof row->note, "failed: gpumem_copy: GPUMEM_ECUDA");
    }
    bench_row *row = bench_row_add(r, BENCH_DEVICE_POOL, "pool_device", "gpumem device pool");
    row->device = 1;
    row->value[0] = 100.0;
    row->value[1] = 200.0;
    row = bench_row_add(r, BENCH_DEVICE_POOL, "pool_device_other_current",
                        "the same, device 0 current");
    row->device = 1;
    row->vs = "pool_device";
    row->value[0] = 150.0;
    row->value[1] = 500.0;
}

static void test_devices_table(void)
{
    static bench_report r;
    make_report(&r);
    char *t = table_text(&r);
    ASSERT_NOT_NULL(t);
    EXPECT_TRUE(strstr(t, "between") == NULL && strstr(t, "several devices") == NULL);
    free(t);
    /* One device: one line. */
    snprintf(r.devices_note, sizeof r.devices_note, "not measured: one device here");
    t = table_text(&r);
    ASSERT_NOT_NULL(t);
    EXPECT_CONTAINS(t, "\nseveral devices: not measured: one device here\n");
    free(t);
    r.devices_note[0] = '\0';
    make_devices(&r);
    t = table_text(&r);
    ASSERT_NOT_NULL(t);
    EXPECT_CONTAINS(t, "between devices, copies of 256.0 MiB (median)  peer off  of link   "
                       "peer on  of link\n");
    EXPECT_CONTAINS(t, "  device 0 -> 1: NVLink, 18 links of 25 GB/s, limit 450.0 GB/s a "
                       "direction\n    cuMemcpyPeer                                  45.0     "
                       "10 %     360.0     80 %\n");
    EXPECT_CONTAINS(t, "  device 1 -> 0: link limit unknown (built without nvml.h)\n"
                       "    cuMemcpyPeer                                  45.0        -     "
                       "360.0        -\n");
    EXPECT_CONTAINS(t, "  * gpumem_copy 1 -> 0: failed: gpumem_copy: GPUMEM_ECUDA\n");
    EXPECT_CONTAINS(t, "each device's pool (a pair, median)               1.0 MiB     64.0 MiB\n");
    EXPECT_CONTAINS(t, "  device 1: gpumem device pool                    0.10 us      0.20 us\n");
    EXPECT_CONTAINS(t, "  device 1: the same, device 0 current            0.15 us      0.50 us   "
                       "1.50x, 2.50x the device's own\n");
    free(t);
    /* The simulated device: no host link line, what was measured instead. */
    r.sim = 1;
    t = table_text(&r);
    ASSERT_NOT_NULL(t);
    EXPECT_CONTAINS(t, "\nsimulated devices (GPUMEM_BACKEND=sim): only what goes through "
                       "gpumem is measured, in host memory\n");
    EXPECT_TRUE(strstr(t, "\nlink: ") == NULL);
    free(t);
}

#ifdef GPUMEM_HAVE_JANSSON
static json_t *json_of_report(const bench_report *r)
{
    char *text = NULL, err[200] = "";
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    int rc = bench_write_json(f, r, err, sizeof err);
    fclose(f);
    json_error_t jerr;
    json_t *root = rc == 0 ? json_loads(text, 0, &jerr) : NULL;
    free(text);
    return root;
}

static void test_devices_json(void)
{
    static bench_report r;
    make_report(&r);
    r.ndev = 1;
    snprintf(r.devices_note, sizeof r.devices_note, "not measured: one device here");
    json_t *root = json_of_report(&r);
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "backend")), "cuda");
    json_t *dev = json_object_get(root, "devices");
    EXPECT_EQ(json_integer_value(json_object_get(dev, "count")), 1);
    EXPECT_STR_EQ(json_string_value(json_object_get(dev, "note")), "not measured: one device here");
    EXPECT_EQ(json_array_size(json_object_get(dev, "peer_copies")), 0);
    EXPECT_EQ(json_array_size(json_object_get(json_object_get(dev, "pools"), "rows")), 0);
    json_decref(root);

    r.devices_note[0] = '\0';
    r.sim = 1;
    make_devices(&r);
    root = json_of_report(&r);
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "backend")), "sim");
    dev = json_object_get(root, "devices");
    EXPECT_EQ(json_integer_value(json_object_get(dev, "measured")), 2);
    EXPECT_TRUE(json_is_null(json_object_get(dev, "note")));
    EXPECT_EQ(json_integer_value(json_object_get(dev, "peer_bytes")), 256 << 20);
    json_t *links = json_object_get(dev, "links");
    EXPECT_EQ(json_array_size(links), 2);
    json_t *l0 = json_array_get(links, 0);
    EXPECT_EQ(json_integer_value(json_object_get(l0, "nvlinks")), 18);
    EXPECT_NEAR(json_real_value(json_object_get(l0, "limit_gbps")), 450.0, 1e-9);
    EXPECT_TRUE(json_is_null(json_object_get(l0, "why")));
    json_t *l1 = json_array_get(links, 1);
    EXPECT_TRUE(json_is_null(json_object_get(l1, "limit_gbps")));
    EXPECT_STR_EQ(json_string_value(json_object_get(l1, "why")), "built without nvml.h");
    json_t *peers = json_object_get(dev, "peer_copies");
    EXPECT_EQ(json_array_size(peers), 4);
    json_t *p0 = json_array_get(peers, 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(p0, "key")), "peer_copy");
    EXPECT_EQ(json_integer_value(json_object_get(p0, "src")), 0);
    EXPECT_EQ(json_integer_value(json_object_get(p0, "dst")), 1);
    EXPECT_NEAR(json_real_value(json_object_get(p0, "access_off_gbps")), 45.0, 1e-9);
    EXPECT_NEAR(json_real_value(json_object_get(p0, "access_on_link_fraction")), 0.8, 1e-9);
    json_t *p3 = json_array_get(peers, 3);
    EXPECT_STR_EQ(json_string_value(json_object_get(p3, "key")), "gpumem_copy");
    EXPECT_TRUE(json_is_null(json_object_get(p3, "access_on_gbps")));
    EXPECT_TRUE(json_is_null(json_object_get(p3, "access_off_link_fraction")));
    EXPECT_STR_EQ(json_string_value(json_object_get(p3, "note")), "failed: gpumem_copy: GPUMEM_ECUDA");
    json_t *pools = json_object_get(json_object_get(dev, "pools"), "rows");
    EXPECT_EQ(json_array_size(pools), 2);
    json_t *other = json_array_get(pools, 1);
    EXPECT_EQ(json_integer_value(json_object_get(other, "device")), 1);
    EXPECT_STR_EQ(json_string_value(json_object_get(other, "vs")), "pool_device");
    EXPECT_NEAR(json_real_value(json_array_get(json_object_get(other, "vs_ratio"), 1)), 2.5, 1e-9);
    json_decref(root);
}

static void test_json(void)
{
    static bench_report r;
    make_report(&r);
    char *text = NULL, err[200] = "";
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ASSERT_NOT_NULL(f);
    int rc = bench_write_json(f, &r, err, sizeof err);
    fclose(f);
    EXPECT_EQ(rc, 0);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    free(text);
    ASSERT_NOT_NULL(root);
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "tool")), "gpumem bench");
    EXPECT_STR_EQ(json_string_value(json_object_get(root, "version")), "0.1.0");
    EXPECT_TRUE(json_is_false(json_object_get(root, "quick")));
    json_t *dev = json_object_get(root, "device");
    EXPECT_STR_EQ(json_string_value(json_object_get(dev, "name")), "Test GPU");
    EXPECT_STR_EQ(json_string_value(json_object_get(dev, "compute_capability")), "9.0");

    json_t *link = json_object_get(root, "link");
    EXPECT_TRUE(json_is_true(json_object_get(link, "known")));
    EXPECT_TRUE(json_is_null(json_object_get(link, "why")));
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(link, "max"), "generation")), 5);
    EXPECT_EQ(json_integer_value(json_object_get(json_object_get(link, "max"), "width")), 16);
    EXPECT_NEAR(json_real_value(json_object_get(link, "limit_gbps")), bench_link_gbps(5, 16), 1e-4);

    json_t *alloc = json_object_get(root, "allocation");
    EXPECT_EQ(json_integer_value(json_array_get(json_object_get(alloc, "bytes"), 1)), 64 << 20);
    json_t *rows = json_object_get(alloc, "rows");
    EXPECT_EQ(json_array_size(rows), 4);
    EXPECT_TRUE(json_is_null(json_object_get(json_array_get(rows, 0), "deprecated")));
    EXPECT_STR_EQ(json_string_value(json_object_get(json_array_get(rows, 3), "deprecated")),
                  "CCCL points to its memory resources over cudaMallocAsync");
    json_t *malloc_row = json_array_get(rows, 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(malloc_row, "key")), "cuda_malloc");
    EXPECT_NEAR(json_real_value(json_array_get(json_object_get(malloc_row, "median_ns"), 0)),
                91000.0, 1e-6);
    EXPECT_EQ(json_integer_value(json_array_get(json_object_get(malloc_row, "samples"), 1)), 30);
    EXPECT_TRUE(json_is_null(json_object_get(malloc_row, "note")));
    EXPECT_TRUE(json_is_null(json_object_get(malloc_row, "vs")));
    EXPECT_TRUE(json_is_null(json_object_get(malloc_row, "vs_ratio")));
    json_t *peer = json_array_get(rows, 2);
    EXPECT_STR_EQ(json_string_value(json_object_get(peer, "vs")), "pool_device");
    EXPECT_NEAR(json_real_value(json_array_get(json_object_get(peer, "vs_ratio"), 0)), 2.5, 1e-9);
    EXPECT_TRUE(json_is_null(json_array_get(json_object_get(peer, "vs_ratio"), 1)));
    json_t *pool = json_array_get(rows, 1);
    EXPECT_TRUE(json_is_null(json_array_get(json_object_get(pool, "median_ns"), 1)));
    EXPECT_STR_EQ(json_string_value(json_object_get(pool, "note")),
                  "failed: gpumem_pool_alloc: GPUMEM_ENOMEM");

    json_t *copies = json_object_get(root, "copies");
    EXPECT_EQ(json_integer_value(json_object_get(copies, "bytes")), 256 << 20);
    json_t *pinned = json_array_get(json_object_get(copies, "rows"), 1);
    EXPECT_STR_EQ(json_string_value(json_object_get(pinned, "key")), "pinned");
    EXPECT_NEAR(json_real_value(json_object_get(pinned, "h2d_gbps")), 55.4, 1e-4);
    EXPECT_NEAR(json_real_value(json_object_get(pinned, "h2d_link_fraction")),
                55.4 / bench_link_gbps(5, 16), 1e-4);
    EXPECT_NEAR(json_real_value(json_object_get(pinned, "d2h_gbps")), 55.3, 1e-4);
    json_t *mapped = json_array_get(json_object_get(copies, "rows"), 2);
    EXPECT_TRUE(json_is_null(json_object_get(mapped, "h2d_gbps")));
    EXPECT_TRUE(json_is_null(json_object_get(mapped, "d2h_link_fraction")));

    json_t *host = json_array_get(json_object_get(json_object_get(root, "host_access"), "rows"), 0);
    EXPECT_STR_EQ(json_string_value(json_object_get(host, "key")), "write_combined");
    EXPECT_NEAR(json_real_value(json_object_get(host, "read_gbps")), 0.2, 1e-6);
    json_decref(root);

    /* An unknown link: no limit, no fractions, the reason. */
    r.link.known = 0;
    snprintf(r.link.why, sizeof r.link.why, "built without nvml.h");
    f = open_memstream(&text, &len);
    ASSERT_NOT_NULL(f);
    rc = bench_write_json(f, &r, err, sizeof err);
    fclose(f);
    EXPECT_EQ(rc, 0);
    root = json_loads(text, 0, &jerr);
    free(text);
    ASSERT_NOT_NULL(root);
    link = json_object_get(root, "link");
    EXPECT_STR_EQ(json_string_value(json_object_get(link, "why")), "built without nvml.h");
    EXPECT_TRUE(json_is_null(json_object_get(link, "limit_gbps")));
    pinned = json_array_get(json_object_get(json_object_get(root, "copies"), "rows"), 1);
    EXPECT_TRUE(json_is_null(json_object_get(pinned, "h2d_link_fraction")));
    EXPECT_NEAR(json_real_value(json_object_get(pinned, "h2d_gbps")), 55.4, 1e-4);
    json_decref(root);
}
#else
static void test_devices_json(void)
{
}

static void test_json(void)
{
    static bench_report r;
    char err[200] = "";
    make_report(&r);
    EXPECT_EQ(bench_have_json(), 0);
    EXPECT_EQ(bench_write_json(stdout, &r, err, sizeof err), -1);
    EXPECT_CONTAINS(err, "built without jansson");
}
#endif

int main(void)
{
    RUN(test_link_arithmetic);
    RUN(test_link_describe);
    RUN(test_format_ns);
    RUN(test_table);
    RUN(test_json);
    RUN(test_devices_table);
    RUN(test_devices_json);
    return harness_exit();
}

/* Alignment: the 256-byte guarantee for every kind, gpumem_is_aligned, vector views
 * (gpumem_vec_ptr, GPUMEM_VEC) and gpumem_describe, every error path and its message. The same
 * scenarios run on the simulated device (`test_align sim`, label host) and on a GPU
 * (`test_align cuda`, label gpu, skipped with 77 where there is none). */
#define _POSIX_C_SOURCE 200809L
#include <stdalign.h>

#include "gpumem.h"
#include "capture.h"
#include "backend_arg.h"
#include "harness.h"

/* "path/test_align.c:123" for a line of this file, as call sites record it. */
static const char *at_line(int line)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s:%d", __FILE__, line);
    return buf;
}

static void test_status_code(void)
{
    EXPECT_EQ(GPUMEM_EMISALIGNED, -12);
    EXPECT_STR_EQ(gpumem_err_name(GPUMEM_EMISALIGNED), "GPUMEM_EMISALIGNED");
    EXPECT_STR_EQ(gpumem_strerror(GPUMEM_EMISALIGNED),
                  "address is not aligned for the requested vector width");
    EXPECT_EQ(GPUMEM_HOST, cudaCpuDeviceId);
}

static void test_is_aligned(void)
{
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)256, 256), 1);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)512, 256), 1);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)260, 256), 0);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)260, 4), 1);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)260, 8), 0);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)7, 1), 1);
    EXPECT_EQ(gpumem_is_aligned(NULL, 4096), 1);
    /* Not a power of two, or zero: never aligned. */
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)48, 12), 0);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)256, 0), 0);
    EXPECT_EQ(gpumem_is_aligned((void *)(uintptr_t)256, (size_t)3 << 8), 0);
}

/* Every kind, several sizes: at least GPUMEM_ALIGNMENT. Prints the alignment seen, which
 * docs/memory-kinds.md records for the H200. */
static void test_alignment_every_kind(void)
{
    static const size_t sizes[] = {1, 4, 100, 256, 257, 4097, 65536 + 3, 1 << 20};
    static const char *names[] = {"device", "managed", "pinned", "host mapped",
                                  "host write-combined", "host portable", "device-async"};
    enum { NSIZES = sizeof sizes / sizeof *sizes, NKINDS = sizeof names / sizeof *names };
    void *p[NKINDS][NSIZES];
    for (int k = 0; k < NKINDS; k++) {
        uintptr_t all = 0;
        for (int i = 0; i < NSIZES; i++) {
            switch (k) {
            case 0: p[k][i] = gpumem_device_alloc(sizes[i], 1); break;
            case 1: p[k][i] = gpumem_managed_alloc(sizes[i], 1, GPUMEM_ATTACH_GLOBAL); break;
            case 2: p[k][i] = gpumem_pinned_alloc(sizes[i], 1); break;
            case 3: p[k][i] = gpumem_host_alloc(sizes[i], 1, GPUMEM_HOST_MAPPED); break;
            case 4: p[k][i] = gpumem_host_alloc(sizes[i], 1, GPUMEM_HOST_WRITE_COMBINED); break;
            case 5: p[k][i] = gpumem_host_alloc(sizes[i], 1, GPUMEM_HOST_PORTABLE); break;
            default: p[k][i] = gpumem_device_alloc_async(sizes[i], 1, NULL); break;
            }
            ASSERT_NOT_NULL(p[k][i]);
            EXPECT_EQ(gpumem_is_aligned(p[k][i], GPUMEM_ALIGNMENT), 1);
            all |= (uintptr_t)p[k][i];
        }
        /* The largest power of two dividing every pointer of this kind. */
        uintptr_t seen_align = all & (~all + 1);
        fprintf(stderr, "  %-20s every pointer a multiple of %lu\n", names[k],
                (unsigned long)seen_align);
        EXPECT_GE(seen_align, GPUMEM_ALIGNMENT);
    }
    for (int k = 0; k < NKINDS; k++)
        for (int i = 0; i < NSIZES; i++)
            EXPECT_EQ(gpumem_free(p[k][i]), GPUMEM_OK);
}

static void test_vec_ok(void)
{
    reset_seen();
    float *d = gpumem_device_alloc(1024, sizeof *d);
    ASSERT_NOT_NULL(d);
    float4 *v = GPUMEM_VEC(float4, d, 4);
    EXPECT_PTR_EQ(v, d + 4);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, d, 0), d);
    EXPECT_PTR_EQ(GPUMEM_VEC(float2, d, 2), d + 2);
    EXPECT_PTR_EQ(GPUMEM_VEC(float, d, 3), d + 3);
    EXPECT_PTR_EQ(gpumem_vec_ptr(d, 32, 16), d + 8);
    EXPECT_PTR_EQ(gpumem_vec_ptr(d, 4, 4), d + 1);
    /* The last whole vector of the allocation. */
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, d, 1020), d + 1020);
    /* A "negative" offset from an interior base that stays inside. */
    float *mid = d + 512;
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, mid, -8), d + 504);
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, mid, -512), d);
    /* A misaligned base with an offset that lands aligned is fine: only the view counts. */
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, d + 1, 3), d + 4);
    /* Other element types: double2 over double, char4 over unsigned char. */
    double *dd = gpumem_device_alloc(64, sizeof *dd);
    unsigned char *b = gpumem_device_alloc(64, 1);
    ASSERT_NOT_NULL(dd);
    ASSERT_NOT_NULL(b);
    EXPECT_PTR_EQ(GPUMEM_VEC(double2, dd, 2), dd + 2);
    EXPECT_NULL(GPUMEM_VEC(double2, dd, 1));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EMISALIGNED);
    EXPECT_PTR_EQ(GPUMEM_VEC(uchar4, b, 8), b + 8);
    EXPECT_NULL(GPUMEM_VEC(uchar4, b, 6));
    EXPECT_CONTAINS(seen.message, "offset 6 is not a multiple of 4 for a 4-byte vector view");
    EXPECT_EQ(gpumem_free(dd), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(b), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    reset_seen();
}

/* The seed's mistake: float4 at d_ptr + 1 (4 bytes off). */
static void test_vec_misaligned_offset(void)
{
    reset_seen();
    float *d = gpumem_device_alloc(256 * 1024, sizeof *d); /* 1.0 MiB */
    int alloc_line = __LINE__ - 1;
    ASSERT_NOT_NULL(d);
    float4 *v = GPUMEM_VEC(float4, d, 1);
    int view_line = __LINE__ - 1;
    EXPECT_NULL(v);
    EXPECT_EQ(seen.calls, 1);
    const gpumem_error *e = gpumem_last_error();
    EXPECT_EQ(e->code, GPUMEM_EMISALIGNED);
    EXPECT_STR_EQ(e->expr, "gpumem_vec_ptr");
    EXPECT_EQ(e->site.line, view_line);
    EXPECT_EQ(e->alloc_kind, GPUMEM_KIND_DEVICE);
    EXPECT_PTR_EQ(e->alloc_base, d);
    EXPECT_EQ(e->alloc_bytes, 1 << 20);
    EXPECT_EQ(e->alloc_offset, 4);
    EXPECT_EQ(e->alloc_site.line, alloc_line);
    char want[1024];
    snprintf(want, sizeof want,
             "gpumem: error: gpumem_vec_ptr: offset 4 is not a multiple of 16 for a 16-byte "
             "vector view of the 1.0 MiB device allocation made at %s (test_vec_misaligned_offset)",
             at_line(alloc_line));
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "view made at");
    EXPECT_CONTAINS(seen.message, at_line(view_line));
    EXPECT_CONTAINS(seen.message, "thread ");
    EXPECT_CONTAINS(seen.message, "hint: a kernel would stop at this view with "
                                  "cudaErrorMisalignedAddress, which is sticky");
    /* Byte offsets name the byte offset; an interior aligned base says where it starts. */
    EXPECT_NULL(gpumem_vec_ptr(d + 8, 8, 16));
    EXPECT_CONTAINS(seen.message, "offset 8 is not a multiple of 16 for a 16-byte vector view of "
                                  "the 1.0 MiB device allocation");
    EXPECT_CONTAINS(seen.message, "(from a base 32 bytes into it)");
    EXPECT_EQ(gpumem_last_error()->alloc_offset, 40);
    /* A later view that succeeds resets the record. */
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, d, 4), d + 4);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    reset_seen();
}

static void test_vec_misaligned_base(void)
{
    reset_seen();
    float *d = gpumem_device_alloc(1024, sizeof *d);
    ASSERT_NOT_NULL(d);
    float *base = d + 1;
    EXPECT_NULL(GPUMEM_VEC(float4, base, 0));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EMISALIGNED);
    char want[512];
    snprintf(want, sizeof want, "gpumem_vec_ptr: the base %p is 4 bytes into the 4.0 KiB device "
                                "allocation made at ", (void *)base);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "not a multiple of 16: a 16-byte vector view at offset 0 from "
                                  "it starts 4 bytes past a 16-byte boundary");
    EXPECT_NULL(GPUMEM_VEC(float4, base, 4));
    EXPECT_CONTAINS(seen.message, "at offset 16 from it starts 4 bytes past");
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    reset_seen();
}

static void test_vec_out_of_range(void)
{
    reset_seen();
    float *d = gpumem_device_alloc(1001, sizeof *d); /* 4004 bytes */
    int alloc_line = __LINE__ - 1;
    ASSERT_NOT_NULL(d);
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, d, 996), d + 996); /* bytes 3984..3999 */
    /* The last partial vector: bytes 4000..4015 of 4004. */
    EXPECT_NULL(GPUMEM_VEC(float4, d, 1000));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_EQ(gpumem_last_error()->alloc_bytes, 4004);
    char want[1024];
    snprintf(want, sizeof want, "gpumem_vec_ptr: offset 4000 with a 16-byte vector reaches past "
                                "the end of the 3.9 KiB device allocation made at %s "
                                "(test_vec_out_of_range) (bytes 4000 to 4015 of 4004)",
             at_line(alloc_line));
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "hint: a view must start inside the allocation");
    /* Far past the end, and at the end exactly. */
    EXPECT_NULL(gpumem_vec_ptr(d, 1 << 20, 16));
    EXPECT_CONTAINS(seen.message, "offset 1048576 with a 16-byte vector reaches past the end");
    EXPECT_NULL(gpumem_vec_ptr(d, 4004, 4));
    EXPECT_CONTAINS(seen.message, "(bytes 4004 to 4007 of 4004)");
    /* Past the end wins over misalignment: it is the worse mistake. */
    EXPECT_NULL(gpumem_vec_ptr(d, 4001, 16));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    /* Before the start. */
    float *mid = d + 8;
    EXPECT_NULL(GPUMEM_VEC(float4, mid, -12));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_vec_ptr: offset -48 lies before the start of the 3.9 "
                                  "KiB device allocation made at ");
    EXPECT_CONTAINS(seen.message, "(the base is 32 bytes into it)");
    EXPECT_NULL(GPUMEM_VEC(float4, d, -4));
    EXPECT_CONTAINS(seen.message, "offset -16 lies before the start");
    /* An offset so large that offset + width wraps. */
    EXPECT_NULL(gpumem_vec_ptr(d, SIZE_MAX / 2, 16));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "reaches past the end");
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    reset_seen();
}

static void test_vec_bad_arguments(void)
{
    reset_seen();
    float *d = gpumem_device_alloc(64, sizeof *d);
    ASSERT_NOT_NULL(d);
    EXPECT_NULL(gpumem_vec_ptr(d, 0, 12));
    int line = __LINE__ - 1;
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem: error: gpumem_vec_ptr: a 12-byte vector view: the "
                                  "width must be a power of two (vector loads are 1, 2, 4, 8, "
                                  "16 or 32 bytes wide)");
    EXPECT_CONTAINS(seen.message, at_line(line));
    EXPECT_NULL(gpumem_vec_ptr(d, 0, 0));
    EXPECT_CONTAINS(seen.message, "a 0-byte vector view: the width must be a power of two");
    /* float3 is 12 bytes: not a vector load width. */
    EXPECT_NULL(GPUMEM_VEC(float3, d, 0));
    EXPECT_CONTAINS(seen.message, "a 12-byte vector view");
    EXPECT_NULL(gpumem_vec_ptr(NULL, 16, 16));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "a 16-byte vector view at offset 16 of ");
    EXPECT_CONTAINS(seen.message, "NULL is not memory");
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    reset_seen();
}

/* Memory gpumem did not allocate: alignment is checked, the range cannot be. */
static void test_vec_foreign(void)
{
    reset_seen();
    static alignas(64) float host[2048];
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, host, 4), host + 4);
    EXPECT_PTR_EQ(GPUMEM_VEC(float4, host, 1000), host + 1000); /* no range known */
    EXPECT_NULL(GPUMEM_VEC(float4, host, 1));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EMISALIGNED);
    EXPECT_EQ(gpumem_last_error()->alloc_kind, 0);
    char want[512];
    snprintf(want, sizeof want, "gpumem_vec_ptr: %p + 4 is 4 bytes past a 16-byte boundary: no "
                                "16-byte vector view can start there", (void *)host);
    EXPECT_CONTAINS(seen.message, want);
    EXPECT_CONTAINS(seen.message, "is not memory gpumem allocated; CUDA does not know it");
    EXPECT_CONTAINS(seen.message, "only its alignment was checked");
    float *base = host + 2;
    EXPECT_NULL(GPUMEM_VEC(float4, base, 0));
    EXPECT_CONTAINS(seen.message, "(the base itself is not 16-byte aligned)");
    reset_seen();
}

static void test_vec_every_kind(void)
{
    reset_seen();
    float *p[5] = {
        gpumem_managed_alloc(256, sizeof(float), GPUMEM_ATTACH_GLOBAL),
        gpumem_pinned_alloc(256, sizeof(float)),
        gpumem_host_alloc(256, sizeof(float), GPUMEM_HOST_MAPPED),
        gpumem_host_alloc(256, sizeof(float), GPUMEM_HOST_WRITE_COMBINED),
        gpumem_device_alloc_async(256, sizeof(float), NULL),
    };
    static const char *kinds[5] = {"managed", "pinned", "host", "host", "device-async"};
    for (int i = 0; i < 5; i++) {
        ASSERT_NOT_NULL(p[i]);
        EXPECT_PTR_EQ(GPUMEM_VEC(float4, p[i], 8), p[i] + 8);
        EXPECT_NULL(GPUMEM_VEC(float4, p[i], 2));
        char want[96];
        snprintf(want, sizeof want, "1.0 KiB %s allocation made at", kinds[i]);
        EXPECT_CONTAINS(seen.message, want);
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    }
    reset_seen();
}

/* ---- gpumem_describe ---- */

static char described[4096];

/* Runs gpumem_describe into a temporary file and keeps the text. */
static int describe(const void *p)
{
    FILE *f = tmpfile();
    if (!f)
        return -999;
    int rc = gpumem_describe(p, f);
    rewind(f);
    size_t n = fread(described, 1, sizeof described - 1, f);
    described[n] = '\0';
    fclose(f);
    return rc;
}

static void test_describe_owned(void)
{
    reset_seen();
    char *d = gpumem_device_alloc(1 << 20, 1);
    int line = __LINE__ - 1;
    ASSERT_NOT_NULL(d);
    gpumem_info info;
    ASSERT_EQ(gpumem_query(d, &info), GPUMEM_OK);
    EXPECT_EQ(describe(d + 4), GPUMEM_OK);
    char want[1024];
    snprintf(want, sizeof want, "%p is 4 bytes into a 1.0 MiB device allocation made at %s "
                                "(test_describe_owned, thread %u, #%llu)\n",
             (void *)(d + 4), at_line(line), info.thread, (unsigned long long)info.seq);
    EXPECT_CONTAINS(described, want);
    EXPECT_CONTAINS(described, "device memory: for kernels; the host reaches it only through "
                               "copies");
    EXPECT_CONTAINS(described, "on device 0");
    EXPECT_EQ(describe(d), GPUMEM_OK);
    snprintf(want, sizeof want, "%p is the start of a 1.0 MiB device allocation", (void *)d);
    EXPECT_CONTAINS(described, want);
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
}

static void test_describe_every_kind(void)
{
    reset_seen();
    void *m = gpumem_managed_alloc(4096, 1, GPUMEM_ATTACH_HOST);
    void *pin = gpumem_pinned_alloc(4096, 1);
    void *all = gpumem_host_alloc(4096, 1, GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE |
                                               GPUMEM_HOST_WRITE_COMBINED);
    void *plain = gpumem_host_alloc(4096, 1, GPUMEM_HOST_PORTABLE);
    void *a = gpumem_device_alloc_async(4096, 1, NULL);
    ASSERT_NOT_NULL(m);
    ASSERT_NOT_NULL(pin);
    ASSERT_NOT_NULL(all);
    ASSERT_NOT_NULL(plain);
    ASSERT_NOT_NULL(a);
    EXPECT_EQ(describe(m), GPUMEM_OK);
    EXPECT_CONTAINS(described, "4.0 KiB managed allocation made at");
    EXPECT_CONTAINS(described, "pages migrate on first touch (page faults), so gpumem_prefetch");
    EXPECT_CONTAINS(described, "attached to the host (GPUMEM_ATTACH_HOST), allocated on device 0");
    EXPECT_EQ(describe((char *)pin + 100), GPUMEM_OK);
    EXPECT_CONTAINS(described, "is 100 bytes into a 4.0 KiB pinned allocation");
    EXPECT_CONTAINS(described, "kernels should use memory allocated with GPUMEM_HOST_MAPPED");
    EXPECT_EQ(describe(all), GPUMEM_OK);
    EXPECT_CONTAINS(described, "4.0 KiB host allocation");
    EXPECT_CONTAINS(described, "mapped: kernels reach it through gpumem_device_ptr");
    EXPECT_CONTAINS(described, "portable: usable from every device");
    EXPECT_CONTAINS(described, "write-combined: for the host to write and the device to read; "
                               "host reads bypass the cache and are slow");
    EXPECT_TRUE(strstr(described, "not mapped") == NULL);
    EXPECT_EQ(describe(plain), GPUMEM_OK);
    EXPECT_CONTAINS(described, "not mapped: kernels should not dereference it");
    EXPECT_TRUE(strstr(described, "write-combined") == NULL);
    EXPECT_EQ(describe(a), GPUMEM_OK);
    EXPECT_CONTAINS(described, "4.0 KiB device-async allocation");
    EXPECT_CONTAINS(described, "stream-ordered device memory");
    EXPECT_CONTAINS(described, "on device 0, stream ");
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(gpumem_free(m), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(pin), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(all), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(plain), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK);
}

static void test_describe_foreign_and_errors(void)
{
    reset_seen();
    int x = 0;
    EXPECT_EQ(describe(&x), GPUMEM_EFOREIGN);
    char want[512];
    snprintf(want, sizeof want, "%p is not in memory gpumem allocated; CUDA does not know it: "
                                "ordinary host memory", (void *)&x);
    EXPECT_CONTAINS(described, want);
    EXPECT_EQ(seen.calls, 0); /* a description, not an error */
    /* Released memory is no longer gpumem's. */
    void *d = gpumem_device_alloc(64, 1);
    ASSERT_NOT_NULL(d);
    EXPECT_EQ(gpumem_free(d), GPUMEM_OK);
    EXPECT_EQ(describe(d), GPUMEM_EFOREIGN);
    EXPECT_CONTAINS(described, "is not in memory gpumem allocated");
    EXPECT_EQ(seen.calls, 0);

    EXPECT_EQ(gpumem_describe(NULL, stderr), GPUMEM_EINVAL);
    int line = __LINE__ - 1;
    EXPECT_EQ(seen.calls, 1);
    EXPECT_CONTAINS(seen.message, "gpumem: error: gpumem_describe((nil), out): NULL is not an "
                                  "address");
    EXPECT_CONTAINS(seen.message, at_line(line));
    EXPECT_EQ(gpumem_describe(&x, NULL), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, ", NULL): no stream to write to");
    /* A stream that cannot be written. */
    FILE *ro = fopen("/dev/null", "r");
    ASSERT_NOT_NULL(ro);
    void *h = gpumem_pinned_alloc(64, 1);
    ASSERT_NOT_NULL(h);
    EXPECT_EQ(gpumem_describe(h, ro), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "could not write the description to the stream");
    EXPECT_EQ(gpumem_last_error()->alloc_kind, GPUMEM_KIND_PINNED);
    EXPECT_EQ(gpumem_describe(&x, ro), GPUMEM_EINVAL);
    fclose(ro);
    EXPECT_EQ(gpumem_free(h), GPUMEM_OK);
    reset_seen();
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    RUN(test_status_code);
    RUN(test_is_aligned);
    if (!test_device_ready())
        return harness_exit();
    reset_seen();
    RUN(test_alignment_every_kind);
    RUN(test_vec_ok);
    RUN(test_vec_misaligned_offset);
    RUN(test_vec_misaligned_base);
    RUN(test_vec_out_of_range);
    RUN(test_vec_bad_arguments);
    RUN(test_vec_foreign);
    RUN(test_vec_every_kind);
    RUN(test_describe_owned);
    RUN(test_describe_every_kind);
    RUN(test_describe_foreign_and_errors);
    gpumem_live live;
    gpumem_live_get(&live);
    EXPECT_EQ(live.count[0], 0);
    return harness_exit();
}

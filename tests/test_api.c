/* The public API, every kind and every bad input gpumem refuses. The same scenarios run
 * on the simulated device (`test_api sim`, label host) and on a GPU (`test_api cuda`, label
 * gpu, skipped with 77 where there is none). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "gpumem.h"
#include "capture.h"
#include "backend_arg.h"
#include "harness.h"

static void test_every_kind_allocates_and_frees(void)
{
    static const struct {
        int kind;
        unsigned flags;
    } cases[] = {
        {GPUMEM_KIND_DEVICE, 0},
        {GPUMEM_KIND_MANAGED, GPUMEM_ATTACH_GLOBAL},
        {GPUMEM_KIND_MANAGED, GPUMEM_ATTACH_HOST},
        {GPUMEM_KIND_PINNED, 0},
        {GPUMEM_KIND_HOST, 0},
        {GPUMEM_KIND_HOST, GPUMEM_HOST_MAPPED},
        {GPUMEM_KIND_HOST, GPUMEM_HOST_PORTABLE | GPUMEM_HOST_WRITE_COMBINED},
        {GPUMEM_KIND_HOST, GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE | GPUMEM_HOST_WRITE_COMBINED},
        {GPUMEM_KIND_DEVICE_ASYNC, 0},
    };
    uint64_t before = live_total();
    void *p[sizeof cases / sizeof *cases];
    int line[sizeof cases / sizeof *cases];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t count = 1000 + i, size = 4;
        switch (cases[i].kind) {
        case GPUMEM_KIND_DEVICE:
            p[i] = gpumem_device_alloc(count, size), line[i] = __LINE__;
            break;
        case GPUMEM_KIND_MANAGED:
            p[i] = gpumem_managed_alloc(count, size, cases[i].flags), line[i] = __LINE__;
            break;
        case GPUMEM_KIND_PINNED:
            p[i] = gpumem_pinned_alloc(count, size), line[i] = __LINE__;
            break;
        case GPUMEM_KIND_HOST:
            p[i] = gpumem_host_alloc(count, size, cases[i].flags), line[i] = __LINE__;
            break;
        default:
            p[i] = gpumem_device_alloc_async(count, size, NULL), line[i] = __LINE__;
            break;
        }
        ASSERT_NOT_NULL(p[i]);
        EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
        EXPECT_EQ((uintptr_t)p[i] % GPUMEM_ALIGNMENT, 0);
        gpumem_info info;
        ASSERT_EQ(gpumem_query((char *)p[i] + 100, &info), GPUMEM_OK);
        EXPECT_EQ(info.kind, cases[i].kind);
        EXPECT_EQ(info.flags, cases[i].flags);
        EXPECT_PTR_EQ(info.base, p[i]);
        EXPECT_EQ(info.bytes, count * size);
        EXPECT_EQ(info.offset, 100);
        EXPECT_EQ(info.line, line[i]);
        EXPECT_STR_EQ(info.func, "test_every_kind_allocates_and_frees");
        EXPECT_CONTAINS(info.file, "test_api.c");
        EXPECT_GE(info.seq, 1);
        EXPECT_GE(info.thread, 1);
        EXPECT_EQ(info.device, 0);
        EXPECT_PTR_EQ(info.stream, NULL);
    }
    EXPECT_EQ(live_total(), before + sizeof cases / sizeof *cases);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    EXPECT_EQ(live_total(), before);
    EXPECT_EQ(seen.calls, 0);
}

static void test_host_kinds_are_host_accessible(void)
{
    unsigned char *h = gpumem_pinned_alloc(4096, 1);
    unsigned char *w = gpumem_host_alloc(4096, 1, GPUMEM_HOST_WRITE_COMBINED);
    ASSERT_NOT_NULL(h);
    ASSERT_NOT_NULL(w);
    memset(h, 0xab, 4096);
    memset(w, 0xcd, 4096);
    EXPECT_EQ(h[4095], 0xab);
    EXPECT_EQ(gpumem_free(h), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(w), GPUMEM_OK);
}

static void test_null_and_zero(void)
{
    EXPECT_EQ(gpumem_free(NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_free_async(NULL, NULL), GPUMEM_OK);
    uint64_t before = live_total();
    EXPECT_NULL(gpumem_device_alloc(0, 4));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_NULL(gpumem_pinned_alloc(10, 0));
    EXPECT_NULL(gpumem_managed_alloc(0, 0, 0));
    EXPECT_NULL(gpumem_host_alloc(0, 1, GPUMEM_HOST_MAPPED));
    EXPECT_NULL(gpumem_device_alloc_async(0, 1, NULL));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_EQ(live_total(), before);
    EXPECT_EQ(seen.calls, 0);
}

static void test_overflow(void)
{
    reset_seen();
    void *p = gpumem_device_alloc(SIZE_MAX / 2, 3); // gpumem-lint: ignore[GM001] refused: NULL
    EXPECT_NULL(p);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EOVERFLOW);
    EXPECT_EQ(seen.calls, 1);
    EXPECT_CONTAINS(seen.message, "gpumem: error: gpumem_device_alloc(count=");
    EXPECT_CONTAINS(seen.message, "count * size overflows size_t; nothing was allocated");
    EXPECT_CONTAINS(seen.message, "test_api.c:");
    EXPECT_NULL(gpumem_pinned_alloc(SIZE_MAX, SIZE_MAX));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EOVERFLOW);
    reset_seen();
}

static void test_bad_flags(void)
{
    reset_seen();
    EXPECT_NULL(gpumem_managed_alloc(1, 1, 0x7));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "flags 0x7 are not valid");
    EXPECT_NULL(gpumem_host_alloc(1, 1, 0x100));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "GPUMEM_HOST_MAPPED, GPUMEM_HOST_PORTABLE");
    reset_seen();
}

static void test_double_free(void)
{
    reset_seen();
    void *p = gpumem_device_alloc(1024, 4);
    ASSERT_NOT_NULL(p);
    int alloc_line = __LINE__ - 2;
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    int first_line = __LINE__ - 1;
    EXPECT_EQ(gpumem_free(p), GPUMEM_EDOUBLEFREE);
    int second_line = __LINE__ - 1;
    EXPECT_EQ(seen.calls, 1);
    const gpumem_error *e = gpumem_last_error();
    EXPECT_EQ(e->code, GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(e->alloc_kind, GPUMEM_KIND_DEVICE);
    EXPECT_EQ(e->alloc_bytes, 4096);
    EXPECT_EQ(e->alloc_site.line, alloc_line);
    EXPECT_EQ(e->freed_site.line, first_line);
    EXPECT_EQ(e->site.line, second_line);
    EXPECT_CONTAINS(seen.message, "gpumem: error: double free of 4.0 KiB device memory at 0x");
    EXPECT_CONTAINS(seen.message, "released again at");
    EXPECT_CONTAINS(seen.message, "first released at");
    EXPECT_CONTAINS(seen.message, "(test_double_free)");
    EXPECT_CONTAINS(seen.message, "hint:");
    /* A release that succeeds resets the record. */
    void *q = gpumem_device_alloc(1, 1);
    EXPECT_EQ(gpumem_free(q), GPUMEM_OK);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    reset_seen();
}

static void test_interior_pointer(void)
{
    reset_seen();
    char *p = gpumem_pinned_alloc(1, 1 << 20);
    ASSERT_NOT_NULL(p);
    uint64_t before = live_total();
    EXPECT_EQ(gpumem_free(p + 4096 + 4), GPUMEM_EINTERIOR);
    EXPECT_EQ(live_total(), before); /* nothing released */
    EXPECT_EQ(gpumem_last_error()->alloc_offset, 4100);
    EXPECT_PTR_EQ(gpumem_last_error()->alloc_base, p);
    EXPECT_CONTAINS(seen.message, "which is 4100 bytes into 1.0 MiB pinned memory at");
    /* A small allocation too: found by probing below the pointer. */
    char *q = gpumem_device_alloc(100, 1);
    ASSERT_NOT_NULL(q);
    EXPECT_EQ(gpumem_free(q + 64), GPUMEM_EINTERIOR);
    EXPECT_CONTAINS(seen.message, "64 bytes into 100 B device memory");
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(q), GPUMEM_OK);
    reset_seen();
}

static void test_foreign_pointer(void)
{
    reset_seen();
    int on_stack = 0;
    void *heap = malloc(64);
    uint64_t before = live_total();
    EXPECT_EQ(gpumem_free(&on_stack), GPUMEM_EFOREIGN);
    EXPECT_CONTAINS(seen.message, "which gpumem did not allocate");
    EXPECT_CONTAINS(seen.message, "CUDA does not know it: ordinary host memory");
    EXPECT_CONTAINS(seen.message, "nothing was released");
    EXPECT_EQ(gpumem_free(heap), GPUMEM_EFOREIGN); // gpumem-lint: ignore[GM002] the foreign pointer under test
    EXPECT_EQ(live_total(), before);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(heap, &info), GPUMEM_EFOREIGN);
    EXPECT_EQ(gpumem_query(NULL, &info), GPUMEM_EINVAL);
    free(heap);
    reset_seen();
}

static void test_free_async_kinds(void)
{
    reset_seen();
    void *a = gpumem_device_alloc_async(256, 4, NULL);
    void *d = gpumem_device_alloc(256, 4);
    void *h = gpumem_pinned_alloc(8192, 1);
    void *m = gpumem_managed_alloc(64, 1, GPUMEM_ATTACH_GLOBAL);
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(d);
    ASSERT_NOT_NULL(h);
    ASSERT_NOT_NULL(m);
    EXPECT_EQ(gpumem_free_async(h, NULL), GPUMEM_EKIND);
    EXPECT_CONTAINS(seen.message, "gpumem_free_async of 8.0 KiB pinned memory");
    EXPECT_CONTAINS(seen.message, "stream-ordered release applies only to device memory");
    EXPECT_EQ(gpumem_free_async(m, NULL), GPUMEM_EKIND);
    gpumem_info info;
    EXPECT_EQ(gpumem_query(h, &info), GPUMEM_OK); /* still live: nothing was released */
    EXPECT_EQ(gpumem_free_async(a, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_free_async(d, NULL), GPUMEM_OK);
    EXPECT_EQ(gpumem_free_async(a, NULL), GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(gpumem_free(h), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(m), GPUMEM_OK);
    reset_seen();
}

static void test_device_ptr(void)
{
    reset_seen();
    char *mapped = gpumem_host_alloc(4096, 1, GPUMEM_HOST_MAPPED);
    char *plain = gpumem_pinned_alloc(4096, 1);
    ASSERT_NOT_NULL(mapped);
    ASSERT_NOT_NULL(plain);
    char *dev = gpumem_device_ptr(mapped);
    ASSERT_NOT_NULL(dev);
    EXPECT_PTR_EQ(gpumem_device_ptr(mapped + 512), dev + 512);
    EXPECT_NULL(gpumem_device_ptr(plain));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EKIND);
    EXPECT_CONTAINS(seen.message, "which is not mapped host memory");
    int x;
    EXPECT_NULL(gpumem_device_ptr(&x));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EFOREIGN);
    EXPECT_EQ(gpumem_free(mapped), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(plain), GPUMEM_OK);
    reset_seen();
}

static void test_out_of_memory(void)
{
    reset_seen();
    gpumem_device_info d;
    ASSERT_EQ(gpumem_device_get(0, &d), GPUMEM_OK);
    void *keep = gpumem_device_alloc(1, 1 << 20);
    ASSERT_NOT_NULL(keep);
    uint64_t before = live_total();
    size_t huge = d.total_bytes * 4;
    EXPECT_NULL(gpumem_device_alloc(huge, 1));
    const gpumem_error *e = gpumem_last_error();
    EXPECT_EQ(e->code, GPUMEM_ENOMEM);
    EXPECT_EQ(e->cuda_error, cudaErrorMemoryAllocation);
    EXPECT_EQ(e->requested, huge);
    EXPECT_GE(e->live_bytes, 1 << 20);
    EXPECT_EQ(e->device_total, d.total_bytes);
    EXPECT_CONTAINS(seen.message, "gpumem: error: out of memory: ");
    EXPECT_CONTAINS(seen.message, "device memory requested at");
    EXPECT_CONTAINS(seen.message, "device 0: ");
    EXPECT_CONTAINS(seen.message, "live in gpumem: ");
    EXPECT_CONTAINS(seen.message, "largest holders: ");
    EXPECT_CONTAINS(seen.message, "(test_out_of_memory) (1.0 MiB, 1)");
    EXPECT_CONTAINS(seen.message, "CUDA said cudaErrorMemoryAllocation: out of memory");
    EXPECT_EQ(live_total(), before);
    /* The next allocation succeeds: the error was not sticky. */
    void *next = gpumem_device_alloc(1, 4096);
    EXPECT_NE((uintptr_t)next, 0);
    EXPECT_EQ(gpumem_free(next), GPUMEM_OK);
    EXPECT_EQ(gpumem_free(keep), GPUMEM_OK);
    reset_seen();
}

static void test_handler_default_restored(void)
{
    gpumem_set_error_handler(NULL, NULL);
    /* The default handler prints and returns for library failures. */
    int x;
    EXPECT_EQ(gpumem_free(&x), GPUMEM_EFOREIGN);
    gpumem_set_error_handler(capture, NULL);
}

static void test_devices(void)
{
    int n = gpumem_device_count();
    EXPECT_GE(n, 1);
    gpumem_device_info d;
    EXPECT_EQ(gpumem_device_get(0, &d), GPUMEM_OK);
    EXPECT_GE(d.total_bytes, d.free_bytes);
    EXPECT_NE(d.total_bytes, 0);
    EXPECT_NE(d.name[0], 0);
    reset_seen();
    EXPECT_EQ(gpumem_device_get(n, &d), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "gpumem_device_get(");
    EXPECT_CONTAINS(seen.message, "does not exist");
    EXPECT_EQ(gpumem_device_get(0, NULL), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "no place to write the result");
    reset_seen();
}

static void *cross_thread_free(void *p)
{
    return (void *)(intptr_t)gpumem_free(p);
}

static void test_free_from_other_thread(void)
{
    void *p = gpumem_device_alloc(64, 64);
    ASSERT_NOT_NULL(p);
    gpumem_info info;
    ASSERT_EQ(gpumem_query(p, &info), GPUMEM_OK);
    pthread_t t;
    void *rc;
    ASSERT_EQ(pthread_create(&t, NULL, cross_thread_free, p), 0); /* joining an unset handle crashes */
    pthread_join(t, &rc);
    EXPECT_EQ((intptr_t)rc, GPUMEM_OK);
    EXPECT_EQ(gpumem_query(p, &info), GPUMEM_EFOREIGN);
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    test_overflow(); /* before initialization: an overflow is refused before CUDA is reached */
    if (!test_device_ready())
        return harness_exit();
    reset_seen();
    RUN(test_every_kind_allocates_and_frees);
    RUN(test_host_kinds_are_host_accessible);
    RUN(test_null_and_zero);
    RUN(test_bad_flags);
    RUN(test_double_free);
    RUN(test_interior_pointer);
    RUN(test_foreign_pointer);
    RUN(test_free_async_kinds);
    RUN(test_device_ptr);
    RUN(test_out_of_memory);
    RUN(test_handler_default_restored);
    RUN(test_devices);
    RUN(test_free_from_other_thread);
    EXPECT_EQ(live_total(), 0);
    return harness_exit();
}

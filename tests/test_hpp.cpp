// Ownership in C++ (include/gpumem.hpp) on the simulated device: gpumem::unique_ptr and the
// make_* functions for every kind, call sites, gpumem::error's contents, n == 0, and every
// kind released when an exception unwinds through its owner. Built as C++17 (call sites from
// __builtin_FILE/LINE/FUNCTION) and, where the compiler has it, C++20 (std::source_location).
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <cuda_runtime.h> // before gpumem.hpp: CUDA's C++ overloads must not disturb it
#include "gpumem.hpp"
#include "harness.h"

static struct {
    int calls;
    int code;
} seen;

static void capture(const gpumem_error *e, void *)
{
    seen.calls++;
    seen.code = e->code;
}

static uint64_t live(int kind = 0)
{
    gpumem_live l;
    gpumem_live_get(&l);
    return l.count[kind];
}

static gpumem_info info_of(const void *p)
{
    gpumem_info info;
    std::memset(&info, 0, sizeof info);
    EXPECT_EQ(gpumem_query(p, &info), GPUMEM_OK);
    return info;
}

static void test_every_kind_and_its_site()
{
    cudaStream_t stream = nullptr;
    int line_device = __LINE__ + 1;
    auto d = gpumem::make_device<float>(1000);
    auto m = gpumem::make_managed<double>(10, GPUMEM_ATTACH_HOST);
    auto p = gpumem::make_pinned<int>(10);
    int line_host = __LINE__ + 1;
    auto h = gpumem::make_host<char>(4096, GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE);
    auto a = gpumem::make_device_async<float4>(16, stream);
    ASSERT_NOT_NULL(d.get());
    ASSERT_NOT_NULL(m.get());
    ASSERT_NOT_NULL(p.get());
    ASSERT_NOT_NULL(h.get());
    ASSERT_NOT_NULL(a.get());
    static_assert(std::is_same<decltype(d), gpumem::unique_ptr<float>>::value, "type");
    static_assert(std::is_same<decltype(d.get_deleter()), gpumem::deleter &>::value, "one deleter");
    static_assert(std::is_same<decltype(m)::deleter_type, decltype(h)::deleter_type>::value,
                  "one deleter for every kind");
    EXPECT_EQ(live(), 5);

    gpumem_info i = info_of(d.get());
    EXPECT_EQ(i.kind, GPUMEM_KIND_DEVICE);
    EXPECT_EQ(i.bytes, 1000 * sizeof(float));
    EXPECT_CONTAINS(i.file, "test_hpp.cpp");
    EXPECT_EQ(i.line, line_device);
    EXPECT_CONTAINS(i.func, "test_every_kind_and_its_site");
    i = info_of(m.get());
    EXPECT_EQ(i.kind, GPUMEM_KIND_MANAGED);
    EXPECT_EQ(i.flags, GPUMEM_ATTACH_HOST);
    EXPECT_EQ(info_of(p.get()).kind, GPUMEM_KIND_PINNED);
    i = info_of(h.get());
    EXPECT_EQ(i.kind, GPUMEM_KIND_HOST);
    EXPECT_EQ(i.flags, GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE);
    EXPECT_EQ(i.line, line_host);
    i = info_of(a.get());
    EXPECT_EQ(i.kind, GPUMEM_KIND_DEVICE_ASYNC);
    EXPECT_EQ(i.bytes, 16 * sizeof(float4));

    // Host kinds are host memory.
    h.get()[4095] = 'x';
    p.get()[9] = 7;
    EXPECT_EQ(p.get()[9], 7);

    // An explicit site, as a wrapper would pass its caller's.
    auto e = gpumem::make_pinned<char>(1, gpumem_site{"wrapper.cpp", "wrapped", 12});
    i = info_of(e.get());
    EXPECT_STR_EQ(i.file, "wrapper.cpp");
    EXPECT_EQ(i.line, 12);

    d.reset();
    EXPECT_EQ(live(GPUMEM_KIND_DEVICE), 0);
    EXPECT_EQ(seen.calls, 0);
}

static void test_zero_is_empty()
{
    seen.calls = 0;
    auto d = gpumem::make_device<float>(0);
    auto h = gpumem::make_host<float>(0, GPUMEM_HOST_MAPPED);
    EXPECT_TRUE(!d);
    EXPECT_TRUE(!h);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_EQ(seen.calls, 0);
}

static void test_error_contents()
{
    seen.calls = 0;
    int line = 0;
    try {
        line = __LINE__ + 1;
        auto d = gpumem::make_device<double>(SIZE_MAX / 4);
        EXPECT_TRUE(false); // not reached
    } catch (const gpumem::error &e) {
        EXPECT_EQ(e.code(), GPUMEM_EOVERFLOW);
        EXPECT_EQ(e.record().code, GPUMEM_EOVERFLOW);
        EXPECT_CONTAINS(e.what(), "gpumem: error: gpumem_device_alloc(count=");
        EXPECT_CONTAINS(e.what(), "count * size overflows size_t");
        EXPECT_STR_EQ(e.what(), e.record().message);
        EXPECT_CONTAINS(e.where().file, "test_hpp.cpp");
        EXPECT_EQ(e.where().line, line);
        EXPECT_CONTAINS(e.where().func, "test_error_contents");
    }
    EXPECT_EQ(seen.calls, 1); // the handler ran too

    // Out of memory (4 TiB): the record's numbers travel with it.
    try {
        auto big = gpumem::make_device<char>(size_t(1) << 42); // 4 TiB
        EXPECT_TRUE(false);
    } catch (const std::runtime_error &re) { // gpumem::error is a std::runtime_error
        const gpumem::error *e = dynamic_cast<const gpumem::error *>(&re);
        ASSERT_NOT_NULL(e);
        EXPECT_EQ(e->code(), GPUMEM_ENOMEM);
        EXPECT_EQ(e->record().requested, size_t(1) << 42);
        EXPECT_CONTAINS(e->what(), "out of memory");
    }
    // Bad flags.
    try {
        auto m = gpumem::make_managed<float>(4, 0x7);
        EXPECT_TRUE(false);
    } catch (const gpumem::error &e) {
        EXPECT_EQ(e.code(), GPUMEM_EINVAL);
    }
    // The copy outlives the thread's record, which the next call overwrites.
    gpumem::error kept(*gpumem_last_error());
    auto ok = gpumem::make_pinned<char>(1);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_OK);
    EXPECT_EQ(kept.code(), GPUMEM_EINVAL);
    EXPECT_EQ(live(), 1);
}

// Every kind owned by one frame; an exception leaves it.
static void own_every_kind_then_throw()
{
    auto d = gpumem::make_device<float>(100);
    auto m = gpumem::make_managed<float>(100);
    auto p = gpumem::make_pinned<float>(100);
    auto h = gpumem::make_host<float>(100, GPUMEM_HOST_WRITE_COMBINED);
    auto a = gpumem::make_device_async<float>(100, nullptr);
    EXPECT_EQ(live(), 5);
    throw std::logic_error("unwinding");
}

// A make_* call fails half-way: what was made before it is released by the unwinding.
static void fail_half_way()
{
    auto d = gpumem::make_device<float>(100);
    auto p = gpumem::make_pinned<float>(100);
    auto too_big = gpumem::make_device<char>(size_t(1) << 42);
    EXPECT_TRUE(false); // not reached
}

static void test_unwinding_releases_every_kind()
{
    seen.calls = 0;
    bool caught = false;
    try {
        own_every_kind_then_throw();
    } catch (const std::logic_error &) {
        caught = true;
    }
    EXPECT_TRUE(caught);
    EXPECT_EQ(live(), 0);
    EXPECT_EQ(seen.calls, 0);

    caught = false;
    try {
        fail_half_way();
    } catch (const gpumem::error &e) {
        caught = e.code() == GPUMEM_ENOMEM;
    }
    EXPECT_TRUE(caught);
    EXPECT_EQ(live(), 0);
}

static gpumem::unique_ptr<float> hand_on(std::size_t n) { return gpumem::make_device<float>(n); }

static void test_moves_and_steal()
{
    auto d = hand_on(10);
    EXPECT_EQ(live(), 1);
    gpumem::unique_ptr<float> other = std::move(d);
    EXPECT_TRUE(!d);
    float *raw = other.release();
    EXPECT_EQ(live(), 1);
    EXPECT_EQ(gpumem_free(raw), GPUMEM_OK);

    // The array form takes the same deleter.
    gpumem::unique_ptr<int[]> arr(static_cast<int *>(gpumem_pinned_alloc(4, sizeof(int))));
    arr[3] = 5;
    EXPECT_EQ(arr[3], 5);
    arr.reset();

    // Typed steal: no cast needed.
    float *f = static_cast<float *>(gpumem_device_alloc(4, sizeof(float)));
    float *g = gpumem_steal(&f);
    EXPECT_TRUE(f == nullptr && g != nullptr);
    EXPECT_EQ(gpumem_free(g), GPUMEM_OK);
    EXPECT_EQ(live(), 0);
}

#if GPUMEM_HAVE_CLEANUP
// The C scope and GPUMEM_AUTO, from C++: released when an exception unwinds too.
static void c_owners_then_throw()
{
    GPUMEM_SCOPE(s);
    float *d = gpumem_adopt(s, static_cast<float *>(gpumem_device_alloc(10, sizeof(float))));
    GPUMEM_AUTO void *h = gpumem_pinned_alloc(10, 4);
    EXPECT_TRUE(d && h);
    EXPECT_EQ(live(), 2);
    throw std::runtime_error("unwinding");
}

static void test_c_owners_in_cpp()
{
    bool caught = false;
    try {
        c_owners_then_throw();
    } catch (const std::runtime_error &) {
        caught = true;
    }
    EXPECT_TRUE(caught);
    EXPECT_EQ(live(), 0);
}
#endif

int main()
{
    gpumem_set_error_handler(capture, nullptr);
    if (gpumem_backend_select("sim") != GPUMEM_OK || gpumem_init() != GPUMEM_OK) {
        std::fprintf(stderr, "cannot start the simulated device\n");
        return 1;
    }
    std::fprintf(stderr, "C++ %ld, call sites from %s\n", static_cast<long>(__cplusplus),
                 GPUMEM_HPP_SOURCE_LOCATION ? "std::source_location" : "__builtin_FILE/LINE");
    RUN(test_every_kind_and_its_site);
    RUN(test_zero_is_empty);
    RUN(test_error_contents);
    RUN(test_unwinding_releases_every_kind);
    RUN(test_moves_and_steal);
#if GPUMEM_HAVE_CLEANUP
    RUN(test_c_owners_in_cpp);
#endif
    EXPECT_EQ(live(), 0);
    return harness_exit();
}

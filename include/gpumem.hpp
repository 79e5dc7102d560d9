/**
 * @file gpumem.hpp
 * @brief gpumem for C++ and CUDA (.cu) code: one owning pointer for every kind of memory.
 *
 * Header-only, over gpumem.h; works with any C++11 compiler, nvcc included (-std=c++17 or
 * later recommended). docs/ownership.md has worked examples.
 *
 * @code
 * auto d_in  = gpumem::make_device<float>(n);                          // cudaMalloc
 * auto h_buf = gpumem::make_host<float>(n, GPUMEM_HOST_WRITE_COMBINED); // cudaHostAlloc
 * // ... kernel<<<...>>>(d_in.get(), ...); an exception or a return releases both
 * @endcode
 *
 * - gpumem::unique_ptr<T> is a std::unique_ptr whose one deleter calls gpumem_free(), which
 *   picks the right CUDA release for the kind: no pairing can be wrong.
 * - The make_* functions allocate @p n elements of T (count * size overflow-checked), record
 *   the caller's file, line and function, and throw gpumem::error (a copy of the error
 *   record) on failure. n == 0 returns an empty pointer, as the C API returns NULL.
 * - Call sites: std::source_location (C++20, when <source_location> provides it), else the
 *   __builtin_FILE/__builtin_LINE/__builtin_FUNCTION default arguments of GCC, Clang and nvcc
 *   (C++11..17), else none ("(unknown site)"). A site may always be passed explicitly as the
 *   last argument: `gpumem::make_device<float>(n, GPUMEM_SITE_HERE)`.
 * - Thread safety: as the C API; one unique_ptr is used by one thread at a time.
 */
#ifndef GPUMEM_HPP
#define GPUMEM_HPP

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <type_traits>

#if defined(__has_include)
#if __has_include(<version>)
#include <version>
#endif
#endif
#if defined(__cpp_lib_source_location) && __cpp_lib_source_location >= 201907L
#include <source_location>
#define GPUMEM_HPP_SOURCE_LOCATION 1
#else
#define GPUMEM_HPP_SOURCE_LOCATION 0
#endif

#include "gpumem.h"

namespace gpumem {

/** Where a make_* call was made. Converts from std::source_location (C++20), from
 *  gpumem_site (GPUMEM_SITE_HERE) and from file, function and line; the strings must be
 *  static (literals, or what std::source_location returns). */
class site {
public:
    constexpr site(const char *file, const char *func, int line) noexcept
        : value_{file, func, line} {}
    constexpr site(gpumem_site s) noexcept : value_(s) {}
#if GPUMEM_HPP_SOURCE_LOCATION
    constexpr site(const std::source_location &l) noexcept
        : value_{l.file_name(), l.function_name(), static_cast<int>(l.line())} {}
#endif
    constexpr gpumem_site get() const noexcept { return value_; }

private:
    gpumem_site value_;
};

} // namespace gpumem

/** The default argument that records the caller of a make_* function. */
#if GPUMEM_HPP_SOURCE_LOCATION
#define GPUMEM_HPP_CALLER ::gpumem::site(std::source_location::current())
#elif defined(__GNUC__) || defined(__clang__) || defined(__CUDACC__)
#define GPUMEM_HPP_CALLER ::gpumem::site(__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE())
#else
#define GPUMEM_HPP_CALLER ::gpumem::site(nullptr, nullptr, 0)
#endif

namespace gpumem {

/**
 * What a failed gpumem call reported: a std::runtime_error whose what() is the full message
 * ("gpumem: error: ..."), carrying a copy of the calling thread's gpumem_error record at the
 * time of the failure (code, CUDA error, call sites, sizes).
 */
class error : public std::runtime_error {
public:
    explicit error(const gpumem_error &rec) : std::runtime_error(rec.message), rec_(rec) {}
    /** The copied record. */
    const gpumem_error &record() const noexcept { return rec_; }
    /** The gpumem status (GPUMEM_ENOMEM, ...). */
    int code() const noexcept { return rec_.code; }
    /** Where the failing call was made. */
    const gpumem_site &where() const noexcept { return rec_.site; }

private:
    gpumem_error rec_;
};

/** The one deleter for every kind: gpumem_free(), which picks cudaFree, cudaFreeHost or the
 *  stream-ordered release's synchronous form from the registry. Errors are reported through
 *  the gpumem handler (a deleter cannot throw). */
struct deleter {
    template <class T> void operator()(T *p) const noexcept
    {
        (gpumem_free)(const_cast<void *>(static_cast<const volatile void *>(p)));
    }
};

/** The owning pointer for gpumem memory of any kind: std::unique_ptr<T, gpumem::deleter>.
 *  For make_*<T>(n) it points to the first of n elements. Never dereference device memory
 *  on the host. */
template <class T> using unique_ptr = std::unique_ptr<T, deleter>;

namespace detail {
template <class T> void check_type()
{
    static_assert(!std::is_array<T>::value, "gpumem::make_*<T>: T is the element type");
    static_assert(std::is_trivially_copyable<T>::value,
                  "gpumem::make_*<T>: memory is not constructed; T must be trivially copyable");
}

// NULL with a non-OK record is a failure; NULL with GPUMEM_OK is a zero-byte request.
template <class T> unique_ptr<T> own_or_throw(void *p)
{
    if (!p) {
        const gpumem_error *e = gpumem_last_error();
        if (e->code != GPUMEM_OK)
            throw error(*e);
    }
    return unique_ptr<T>(static_cast<T *>(p));
}
} // namespace detail

/** @p n elements of device memory (cudaMalloc). Throws gpumem::error on failure. */
template <class T> unique_ptr<T> make_device(std::size_t n, site where = GPUMEM_HPP_CALLER)
{
    detail::check_type<T>();
    return detail::own_or_throw<T>(gpumem_device_alloc_at(n, sizeof(T), where.get()));
}

/** @p n elements of managed memory (cudaMallocManaged), @p flags GPUMEM_ATTACH_GLOBAL (0
 *  means this too) or GPUMEM_ATTACH_HOST. Throws gpumem::error on failure. */
template <class T>
unique_ptr<T> make_managed(std::size_t n, unsigned flags = GPUMEM_ATTACH_GLOBAL,
                           site where = GPUMEM_HPP_CALLER)
{
    detail::check_type<T>();
    return detail::own_or_throw<T>(gpumem_managed_alloc_at(n, sizeof(T), flags, where.get()));
}

/** @p n elements of page-locked host memory (cudaMallocHost). Throws gpumem::error. */
template <class T> unique_ptr<T> make_pinned(std::size_t n, site where = GPUMEM_HPP_CALLER)
{
    detail::check_type<T>();
    return detail::own_or_throw<T>(gpumem_pinned_alloc_at(n, sizeof(T), where.get()));
}

/** @p n elements of page-locked host memory with @p flags (cudaHostAlloc): any combination
 *  of GPUMEM_HOST_MAPPED, _PORTABLE and _WRITE_COMBINED. Throws gpumem::error. */
template <class T>
unique_ptr<T> make_host(std::size_t n, unsigned flags = 0, site where = GPUMEM_HPP_CALLER)
{
    detail::check_type<T>();
    return detail::own_or_throw<T>(gpumem_host_alloc_at(n, sizeof(T), flags, where.get()));
}

/** @p n elements of stream-ordered device memory (cudaMallocAsync) on @p stream. The
 *  deleter releases it with cudaFree, which waits for the device, so it is safe even after
 *  the stream is gone; for a stream-ordered release call
 *  `gpumem_free_async(p.release(), stream)`. Throws gpumem::error on failure. */
template <class T>
unique_ptr<T> make_device_async(std::size_t n, cudaStream_t stream,
                                site where = GPUMEM_HPP_CALLER)
{
    detail::check_type<T>();
    return detail::own_or_throw<T>(
        gpumem_device_alloc_async_at(n, sizeof(T), stream, where.get()));
}

} // namespace gpumem

/** Typed gpumem_steal() for C++: `float *p = gpumem_steal(&d);` returns d and sets it to
 *  nullptr. */
template <class T> inline T *gpumem_steal(T **pp) noexcept
{
    if (!pp)
        return nullptr;
    T *p = *pp;
    *pp = nullptr;
    return p;
}

/** Typed gpumem_adopt() for C++, for a typed pointer: returns it with its type. */
template <class T> inline T *gpumem_adopt_at(gpumem_scope *s, T *p, gpumem_site site)
{
    return static_cast<T *>(
        gpumem_adopt_at(s, const_cast<void *>(static_cast<const volatile void *>(p)), site));
}

#endif /* GPUMEM_HPP */

/* Alignment: vector views checked on the host, and what an address is.
 *
 * A vector load (float4, double2, ...) from an address that is not a multiple of its width
 * stops the kernel with cudaErrorMisalignedAddress, which is sticky: the context is lost and
 * only a new process recovers, and CUDA says neither where nor which allocation. Checking the
 * view where the program makes it, on the host, turns that into an ordinary error with both
 * call sites while the context is still healthy. */
#include <stddef.h>
#include <stdio.h>

#include "internal.h"

static int is_pow2(size_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

int gpumem_is_aligned(const void *p, size_t align)
{
    return is_pow2(align) && ((uintptr_t)p & (align - 1)) == 0;
}

/* "1.0 MiB device allocation made at main.c:42 (main)" */
static void append_alloc(gpumem_error *e, const gpumem__rec *r)
{
    char size_text[32], where[256];
    gpumem__err_append(e, "%s %s allocation made at %s",
                       gpumem_format_bytes(r->bytes, size_text, sizeof size_text),
                       gpumem_kind_name(r->kind), gpumem__site_str(r->site, where, sizeof where));
}

static void append_where(gpumem_error *e, gpumem_site site, const gpumem__rec *r)
{
    char where[256];
    gpumem__err_append(e, "\n    %-18s %s", "view made at", gpumem__site_str(site, where, sizeof where));
    if (r)
        gpumem__err_alloc_site(e, r);
}

/* Bad arguments: a width that is no vector width, or no base at all. */
static void *vec_invalid(const void *base, size_t byte_offset, size_t vec, gpumem_site site)
{
    char where[256];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, "gpumem_vec_ptr", site);
    if (!is_pow2(vec))
        gpumem__err_append(e, "gpumem_vec_ptr: a %zu-byte vector view: the width must be a "
                              "power of two (vector loads are 1, 2, 4, 8, 16 or 32 bytes wide)",
                           vec);
    else
        gpumem__err_append(e, "gpumem_vec_ptr: a %zu-byte vector view at offset %zu of %p: "
                              "NULL is not memory",
                           vec, byte_offset, base);
    gpumem__err_append(e, "\n    at %s", gpumem__site_str(site, where, sizeof where));
    gpumem__err_raise(e);
    return NULL;
}

/* The first vector of the view (bytes [total, total + vec)) must lie inside the allocation.
 * total is the view's offset from the allocation's start, computed modulo 2^N so that a
 * "negative" element offset from an interior base that stays inside is accepted. */
static void *vec_out_of_range(const gpumem__rec *r, size_t base_off, size_t byte_offset,
                              size_t vec, gpumem_site site)
{
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, "gpumem_vec_ptr", site);
    gpumem__err_alloc(e, r);
    e->alloc_offset = base_off;
    if (byte_offset > PTRDIFF_MAX && (size_t)0 - byte_offset > base_off) {
        gpumem__err_append(e, "gpumem_vec_ptr: offset -%zu lies before the start of the ",
                           (size_t)0 - byte_offset);
        append_alloc(e, r);
        if (base_off)
            gpumem__err_append(e, " (the base is %zu bytes into it)", base_off);
    } else {
        size_t total = base_off + byte_offset;
        gpumem__err_append(e, "gpumem_vec_ptr: offset %zu with a %zu-byte vector reaches past "
                              "the end of the ",
                           byte_offset, vec);
        append_alloc(e, r);
        if (total >= base_off) /* no wrap: name the bytes the first vector would cover */
            gpumem__err_append(e, " (bytes %zu to %zu of %zu)", total,
                               total + vec - 1 >= total ? total + vec - 1 : SIZE_MAX, r->bytes);
    }
    append_where(e, site, r);
    gpumem__err_append(e, "\n  hint: a view must start inside the allocation with at least one "
                          "whole vector after it; check the offset's unit (GPUMEM_VEC counts "
                          "elements of the base's type, gpumem_vec_ptr counts bytes)");
    gpumem__err_raise(e);
    return NULL;
}

static void *vec_misaligned(const gpumem__rec *r, const void *base, size_t base_off,
                            size_t byte_offset, size_t vec, gpumem_site site)
{
    uintptr_t addr = (uintptr_t)base + byte_offset;
    size_t past = (size_t)(addr & (vec - 1));
    gpumem_error *e = gpumem__err_begin(GPUMEM_EMISALIGNED, "gpumem_vec_ptr", site);
    if (r) {
        gpumem__err_alloc(e, r);
        e->alloc_offset = base_off + byte_offset;
    }
    int base_bad = !gpumem_is_aligned(base, vec);
    if (r && !base_bad) {
        gpumem__err_append(e, "gpumem_vec_ptr: offset %zu is not a multiple of %zu for a "
                              "%zu-byte vector view of the ",
                           byte_offset, vec, vec);
        append_alloc(e, r);
        if (base_off)
            gpumem__err_append(e, " (from a base %zu bytes into it)", base_off);
    } else if (r) {
        gpumem__err_append(e, "gpumem_vec_ptr: the base %p is %zu bytes into the ", base,
                           base_off);
        append_alloc(e, r);
        gpumem__err_append(e, ", not a multiple of %zu: a %zu-byte vector view at offset %zu "
                              "from it starts %zu bytes past a %zu-byte boundary",
                           vec, vec, byte_offset, past, vec);
    } else {
        gpumem__err_append(e, "gpumem_vec_ptr: %p + %zu is %zu bytes past a %zu-byte boundary: "
                              "no %zu-byte vector view can start there",
                           base, byte_offset, past, vec, vec);
        if (base_bad)
            gpumem__err_append(e, " (the base itself is not %zu-byte aligned)", vec);
        gpumem__err_append(e, "\n    %p is not memory gpumem allocated; %s; only its "
                              "alignment was checked",
                           base, gpumem__cuda_says(base));
    }
    append_where(e, site, r);
    gpumem__err_append(e, "\n  hint: a kernel would stop at this view with "
                          "cudaErrorMisalignedAddress, which is sticky (the context is lost); "
                          "start vector views at multiples of %zu bytes, or load the elements "
                          "one by one",
                       vec);
    gpumem__err_raise(e);
    return NULL;
}

void *gpumem_vec_ptr_at(const void *base, size_t byte_offset, size_t vec_bytes, gpumem_site site)
{
    if (!is_pow2(vec_bytes) || !base)
        return vec_invalid(base, byte_offset, vec_bytes, site);
    gpumem__rec r;
    int owned = gpumem__reg_find(base, &r);
    size_t base_off = owned ? (size_t)((uintptr_t)base - r.base) : 0;
    if (owned) {
        size_t total = base_off + byte_offset; /* modulo 2^N, see vec_out_of_range */
        if (total >= r.bytes || vec_bytes > r.bytes - total)
            return vec_out_of_range(&r, base_off, byte_offset, vec_bytes, site);
    }
    if (!owned && (byte_offset > UINTPTR_MAX - (uintptr_t)base ||
                   vec_bytes > UINTPTR_MAX - ((uintptr_t)base + byte_offset) + 1)) {
        char where[256];
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, "gpumem_vec_ptr", site);
        gpumem__err_append(e, "gpumem_vec_ptr: a %zu-byte vector view at offset %zu of %p wraps "
                              "past the end of the address space\n    at %s\n  hint: check how "
                              "the offset was computed (a negative value converted to size_t is "
                              "a common cause)",
                           vec_bytes, byte_offset, base,
                           gpumem__site_str(site, where, sizeof where));
        gpumem__err_raise(e);
        return NULL;
    }
    void *view = (char *)(uintptr_t)base + byte_offset;
    if (!gpumem_is_aligned(view, vec_bytes))
        return vec_misaligned(owned ? &r : NULL, base, base_off, byte_offset, vec_bytes, site);
    gpumem__err_clear();
    return view;
}

/* ---- gpumem_describe ---- */

/* The rules of each kind, in the words of docs/memory-kinds.md. */
static const char *kind_rule(const gpumem__rec *r)
{
    switch (r->kind) {
    case GPUMEM_KIND_DEVICE:
        return "device memory: for kernels; the host reaches it only through copies";
    case GPUMEM_KIND_DEVICE_ASYNC:
        return "stream-ordered device memory: for kernels on its stream (or after that stream "
               "is synchronized); release with gpumem_free_async on that stream";
    case GPUMEM_KIND_MANAGED:
        return "managed memory: host and kernels both dereference it; pages migrate on first "
               "touch (page faults), so gpumem_prefetch it to where it is used next";
    case GPUMEM_KIND_PINNED:
        return "pinned host memory: the host reads and writes it; copies from and to it run at "
               "full link speed; kernels should use memory allocated with GPUMEM_HOST_MAPPED";
    default:
        return "pinned host memory (cudaHostAlloc): copies from and to it run at full link speed";
    }
}

static int describe_owned(FILE *out, const void *p, const gpumem__rec *r)
{
    char size_text[32];
    size_t off = (size_t)((uintptr_t)p - r->base);
    const char *file = r->site.file ? r->site.file : "(unknown site)";
    int n = 0;
    if (off)
        n |= fprintf(out, "%p is %zu bytes into a ", p, off);
    else
        n |= fprintf(out, "%p is the start of a ", p);
    n |= fprintf(out, "%s %s allocation made at %s:%d (", gpumem_format_bytes(r->bytes, size_text,
                 sizeof size_text), gpumem_kind_name(r->kind), file, r->site.line);
    if (r->site.func && *r->site.func)
        n |= fprintf(out, "%s, ", r->site.func);
    n |= fprintf(out, "thread %u, #%llu)\n", r->thread, (unsigned long long)r->seq);
    n |= fprintf(out, "    %s\n", kind_rule(r));
    if (r->kind == GPUMEM_KIND_HOST) {
        if (r->flags & GPUMEM_HOST_MAPPED)
            n |= fprintf(out, "    mapped: kernels reach it through gpumem_device_ptr; every "
                              "access crosses the link (zero-copy)\n");
        if (r->flags & GPUMEM_HOST_PORTABLE)
            n |= fprintf(out, "    portable: usable from every device, not only device %d\n",
                         r->device);
        if (r->flags & GPUMEM_HOST_WRITE_COMBINED)
            n |= fprintf(out, "    write-combined: for the host to write and the device to "
                              "read; host reads bypass the cache and are slow\n");
        if (!(r->flags & GPUMEM_HOST_MAPPED))
            n |= fprintf(out, "    not mapped: kernels should not dereference it\n");
    } else if (r->kind == GPUMEM_KIND_MANAGED) {
        n |= fprintf(out, "    attached %s, allocated on device %d\n",
                     r->flags & GPUMEM_ATTACH_HOST ? "to the host (GPUMEM_ATTACH_HOST)"
                                                   : "globally (GPUMEM_ATTACH_GLOBAL)",
                     r->device);
    } else if (r->kind == GPUMEM_KIND_DEVICE_ASYNC) {
        n |= fprintf(out, "    on device %d, stream %p\n", r->device, (void *)r->stream);
    } else if (r->kind == GPUMEM_KIND_DEVICE) {
        n |= fprintf(out, "    on device %d\n", r->device);
    }
    return n < 0 ? -1 : 0;
}

int gpumem_describe_at(const void *p, FILE *out, gpumem_site site)
{
    static const char fn[] = "gpumem_describe";
    char where[256];
    if (!p || !out) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, site);
        gpumem__err_append(e, "%s(%p, %s): %s\n    at %s", fn, p, out ? "out" : "NULL",
                           !p ? "NULL is not an address" : "no stream to write to",
                           gpumem__site_str(site, where, sizeof where));
        return gpumem__err_raise(e);
    }
    gpumem__rec r;
    int owned = gpumem__reg_find(p, &r);
    int rc;
    if (owned)
        rc = describe_owned(out, p, &r);
    else
        rc = fprintf(out, "%p is not in memory gpumem allocated; %s\n", p, gpumem__cuda_says(p)) <
                     0 ? -1 : 0;
    if (rc == 0)
        rc = fflush(out);
    if (rc != 0 || ferror(out)) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, site);
        if (owned)
            gpumem__err_alloc(e, &r);
        gpumem__err_append(e, "%s(%p): could not write the description to the stream\n    at %s",
                           fn, p, gpumem__site_str(site, where, sizeof where));
        return gpumem__err_raise(e);
    }
    return owned ? GPUMEM_OK : GPUMEM_EFOREIGN;
}

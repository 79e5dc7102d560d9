/* Release: one gpumem_free for every kind, which cannot pick the wrong CUDA call.
 *
 * The record leaves the registry before CUDA is called, under the shard lock, so that of two
 * threads releasing the same pointer exactly one proceeds and the other sees a double free.
 * If CUDA then refuses the release (and the error is not sticky), the record goes back: the
 * memory is still allocated and still owned. */
#include <stdio.h>

#include "backtrace.h"
#include "internal.h"
#include "trace.h"

/* "1.0 MiB device memory at 0x..." */
static void describe_alloc(gpumem_error *e, const gpumem__rec *r)
{
    char size_text[32];
    gpumem__err_append(e, "%s %s memory at %p",
                       gpumem_format_bytes(r->bytes, size_text, sizeof size_text),
                       gpumem_kind_name(r->kind), (void *)r->base);
}

/* The allocation's stack under its site, when GPUMEM_BACKTRACE=1 kept one. */
static void append_stack(gpumem_error *e, uint32_t stack)
{
    gpumem__frame f[12];
    int n = gpumem__stack_frames(stack, f, 12);
    for (int i = 0; i < n; i++) {
        if (f[i].file)
            gpumem__err_append(e, "\n      %s %s (%s:%d)", i ? "by" : "at", f[i].func, f[i].file,
                               f[i].line);
        else
            gpumem__err_append(e, "\n      %s %s (in %s)", i ? "by" : "at", f[i].func,
                               f[i].object ? f[i].object : "?");
    }
}

static void append_sites(gpumem_error *e, const char *verb, gpumem_site site,
                         const gpumem__rec *r, int with_first_release)
{
    char where[256];
    gpumem__err_append(e, "\n    %-18s %s", verb, gpumem__site_str(site, where, sizeof where));
    if (with_first_release)
        gpumem__err_append(e, "\n    %-18s %s, thread %u", "first released at",
                           gpumem__site_str(r->freed_site, where, sizeof where), r->freed_thread);
    gpumem__err_alloc_site(e, r);
    append_stack(e, r->stack);
}

/* p is past the bytes of a live pool block but inside its size class. */
static int pool_rounding(const void *p, gpumem__rec *near)
{
    return gpumem__reg_find_below(p, near) && near->pool &&
           (uintptr_t)p - near->base < gpumem__pool_block_size(near->pool, near->base);
}

/* p is at or past the end of device allocation r, before the next 256-byte boundary: in the
 * padding that every allocation's 256-byte alignment leaves, where nothing else can begin. */
static int padding_after(const gpumem__rec *r, const void *p)
{
    uintptr_t last = r->base + r->bytes, a = (uintptr_t)p;
    return (r->kind == GPUMEM_KIND_DEVICE || r->kind == GPUMEM_KIND_DEVICE_ASYNC) && a >= last &&
           a < ((last + 255) & ~(uintptr_t)255);
}

static int release_error(const char *fn, gpumem__take_result res, const void *p,
                         const gpumem__rec *r, gpumem_site site)
{
    gpumem_error *e;
    gpumem__rec near;
    int pool_kind = 0;
    gpumem_site pool_site;
    if (res == GPUMEM__INTERIOR) {
        size_t off = (size_t)((uintptr_t)p - r->base);
        e = gpumem__err_begin(GPUMEM_EINTERIOR, fn, site);
        gpumem__err_alloc(e, r);
        e->alloc_offset = off;
        gpumem__err_append(e, "%s of %p, which is %zu bytes into ", fn, p, off);
        describe_alloc(e, r);
        append_sites(e, "released at", site, r, 0);
        gpumem__err_append(e, "\n  hint: pass the pointer the allocation returned (%p); "
                              "nothing was released",
                           (void *)r->base);
    } else if (res == GPUMEM__DOUBLE) {
        e = gpumem__err_begin(GPUMEM_EDOUBLEFREE, fn, site);
        gpumem__err_alloc(e, r);
        gpumem__err_append(e, "double free of ");
        describe_alloc(e, r);
        append_sites(e, "released again at", site, r, 1);
        gpumem__err_append(e, "\n  hint: the pointer was not reset after the first release; "
                              "set it to NULL there, or give the memory a single owner");
    } else if (pool_rounding(p, &near)) {
        /* Past the bytes asked for but inside the pool block's size class: CUDA would call it
         * part of the pool's own cudaMallocHost (or mempool) memory, which misleads. */
        size_t off = (size_t)((uintptr_t)p - near.base);
        char size_text[32];
        e = gpumem__err_begin(GPUMEM_EINTERIOR, fn, site);
        gpumem__err_alloc(e, &near);
        e->alloc_offset = off;
        gpumem__err_append(e, "%s of %p, which is %zu bytes into the %s pool block at %p: past "
                              "the %s it was asked for, in the rounding of its size class",
                           fn, p, off, gpumem_kind_name(near.kind), (void *)near.base,
                           gpumem_format_bytes(near.bytes, size_text, sizeof size_text));
        append_sites(e, "released at", site, &near, 0);
        gpumem__err_append(e, "\n  hint: pass the pointer the allocation returned (%p); "
                              "nothing was released",
                           (void *)near.base);
    } else if (gpumem__reg_find_below(p, &near) && padding_after(&near, p)) {
        /* Past the end of a device allocation, in its alignment padding: CUDA calls it device
         * memory, and "not allocated by gpumem" would send the reader the wrong way. */
        size_t past = (size_t)((uintptr_t)p - (near.base + near.bytes));
        e = gpumem__err_begin(GPUMEM_EINTERIOR, fn, site);
        gpumem__err_alloc(e, &near);
        e->alloc_offset = near.bytes + past;
        gpumem__err_append(e, "%s of %p, which is %zu byte%s past the end of ", fn, p, past,
                           past == 1 ? "" : "s");
        describe_alloc(e, &near);
        gpumem__err_append(e, ", in its alignment padding");
        append_sites(e, "released at", site, &near, 0);
        gpumem__err_append(e, "\n  hint: pass the pointer the allocation returned (%p); "
                              "nothing was released",
                           (void *)near.base);
    } else if (gpumem__pool_chunk_holding(p, &pool_kind, &pool_site)) {
        /* In a pool's own memory but no live block: CUDA would call it a raw cudaMallocHost. */
        char where[256], made[256];
        e = gpumem__err_begin(GPUMEM_EFOREIGN, fn, site);
        gpumem__err_append(e, "%s of %p, which lies in memory a %s pool holds to carve blocks "
                              "from, in no live block\n    %-18s %s\n    the pool was made at "
                              "%s\n  hint: release only pointers gpumem_pool_alloc returned; "
                              "nothing was released",
                           fn, p, gpumem_kind_name(pool_kind), "released at",
                           gpumem__site_str(site, where, sizeof where),
                           gpumem__site_str(pool_site, made, sizeof made));
    } else {
        char where[256];
        e = gpumem__err_begin(GPUMEM_EFOREIGN, fn, site);
        gpumem__err_append(e, "%s of %p, which gpumem did not allocate\n    %-18s %s\n    %s"
                              "\n  hint: release memory with the call that made it; nothing "
                              "was released",
                           fn, p, "released at", gpumem__site_str(site, where, sizeof where),
                           gpumem__cuda_says(p));
    }
    return gpumem__err_raise(e);
}

static int release_cuda_error(const char *fn, int err, const gpumem__rec *r, gpumem_site site)
{
    gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), fn, site);
    if (e->code == GPUMEM_ENOMEM || e->code == GPUMEM_ENODEV)
        e->code = GPUMEM_ECUDA;
    gpumem__err_cuda(e, err);
    gpumem__err_alloc(e, r);
    gpumem__err_append(e, "%s of ", fn);
    describe_alloc(e, r);
    gpumem__err_append(e, ": CUDA failed with %s: %s", e->cuda_name, e->cuda_string);
    append_sites(e, "released at", site, r, 0);
    if (!gpumem__err_sticky_hint(e))
        gpumem__err_append(e, "\n  the allocation is still live and owned by the caller");
    return gpumem__err_raise(e);
}

static int release(const char *fn, void *p, int async, cudaStream_t stream, gpumem_site site)
{
    gpumem__rec r;
    int kind_mismatch = 0;
    unsigned mask = async ? (1u << GPUMEM_KIND_DEVICE) | (1u << GPUMEM_KIND_DEVICE_ASYNC) : 0;
    gpumem__take_result res = gpumem__reg_take(p, site, mask, &kind_mismatch, &r);
    if (GPUMEM__UNLIKELY(kind_mismatch)) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EKIND, fn, site);
        gpumem__err_alloc(e, &r);
        gpumem__err_append(e, "%s of ", fn);
        describe_alloc(e, &r);
        gpumem__err_append(e, ": stream-ordered release applies only to device memory");
        append_sites(e, "released at", site, &r, 0);
        gpumem__err_append(e, "\n  hint: release it with gpumem_free; nothing was released");
        return gpumem__err_raise(e);
    }
    if (GPUMEM__UNLIKELY(res != GPUMEM__TAKEN))
        return release_error(fn, res, p, &r, site);

    /* A record exists only if initialization succeeded, so the backend is up. */
    int err;
    if (r.pool) {
        /* An NVTX region goes before the block can reach another thread, whose region at the
         * same address would go instead; it comes back if the release fails. */
        if (GPUMEM__UNLIKELY(gpumem__hot.nvtx_on))
            gpumem__nvtx_region(r.base, 0, 0);
        err = gpumem__pool_release(r.pool, &r, async, stream); /* back to its pool, no CUDA */
        if (GPUMEM__UNLIKELY(err && gpumem__hot.nvtx_on))
            gpumem__nvtx_region(r.base, r.bytes, 1);
    } else if (r.kind == GPUMEM_KIND_PINNED || r.kind == GPUMEM_KIND_HOST)
        err = gpumem__be->free_host(p);
    else if (r.kind == GPUMEM_KIND_DEVICE_ASYNC && async)
        err = gpumem__be->free_async(p, stream);
    else {
        /* cudaFree waits for the device: work still using the memory on any stream (the
         * allocation's own may no longer exist) is done first. That is the memory's own
         * device, made current for the call when the caller's current device is another. */
        int token = 0;
        err = gpumem__be->device_push(r.device, &token);
        if (!err)
            err = gpumem__be->free(p);
        if (token)
            gpumem__be->device_pop(token);
    }
    if (GPUMEM__UNLIKELY(err)) {
        if (!gpumem__cuda_error_is_sticky(err))
            gpumem__reg_untake(p);
        return release_cuda_error(fn, err, &r, site);
    }
    gpumem__stats_release(r.kind, r.device, r.bytes);
    gpumem__trace_release(&r, site, NULL);
    gpumem__err_clear();
    return GPUMEM_OK;
}

int gpumem_free_at(void *p, gpumem_site site)
{
    if (!p)
        return GPUMEM_OK;
    return release("gpumem_free", p, 0, NULL, site);
}

int(gpumem_free)(void *p)
{
    return gpumem_free_at(p, (gpumem_site){NULL, NULL, 0});
}

int gpumem_free_async_at(void *p, cudaStream_t stream, gpumem_site site)
{
    if (!p)
        return GPUMEM_OK;
    return release("gpumem_free_async", p, 1, stream, site);
}

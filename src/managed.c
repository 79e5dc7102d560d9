/* Managed memory: prefetch and advice, checked against the registry first.
 *
 * CUDA accepts any managed range, gpumem's or not, and answers a wrong pointer, a range past
 * the end or the wrong kind with "invalid argument" at best (on systems with HMM it may even
 * accept ordinary host memory and do something else than intended). gpumem checks that the
 * range lies inside one managed allocation it owns, so a mistake names the allocation and
 * both call sites, and CUDA is only called with a range that makes sense. */
#include <stdio.h>

#include "internal.h"

typedef struct {
    const char *fn;   /* "gpumem_prefetch" */
    const char *verb; /* "prefetch of", "advice for" */
    gpumem_site site;
} op;

static void append_sites(gpumem_error *e, const op *o, const gpumem__rec *r)
{
    char where[256];
    gpumem__err_append(e, "\n    %-18s %s", "called at", gpumem__site_str(o->site, where, sizeof where));
    if (r)
        gpumem__err_alloc_site(e, r);
}

/* "managed memory at 0x... (1.0 MiB, 4096 bytes into it)" */
static void append_range(gpumem_error *e, const void *p, size_t bytes, const gpumem__rec *r)
{
    char size_text[32], alloc_text[32];
    gpumem__err_append(e, "%s at %p, %zu bytes into the %s %s allocation",
                       gpumem_format_bytes(bytes, size_text, sizeof size_text), p,
                       (size_t)((uintptr_t)p - r->base),
                       gpumem_format_bytes(r->bytes, alloc_text, sizeof alloc_text),
                       gpumem_kind_name(r->kind));
}

/* The range must lie in managed memory gpumem owns; fills *r. Reports and returns the status
 * otherwise. */
static int check_range(const op *o, const void *p, size_t bytes, gpumem__rec *r)
{
    gpumem_error *e;
    char size_text[32];
    if (!p) {
        e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
        gpumem__err_append(e, "%s: %s NULL: NULL is not managed memory", o->fn, o->verb);
        append_sites(e, o, NULL);
        return gpumem__err_raise(e);
    }
    if (!gpumem__reg_find(p, r)) {
        e = gpumem__err_begin(GPUMEM_EFOREIGN, o->fn, o->site);
        gpumem__err_append(e, "%s: %s %p, which is not inside memory gpumem allocated\n    %s",
                           o->fn, o->verb, p, gpumem__cuda_says(p));
        append_sites(e, o, NULL);
        gpumem__err_append(e, "\n  hint: allocate managed memory with gpumem_managed_alloc; "
                              "nothing was done");
        return gpumem__err_raise(e);
    }
    if (r->kind != GPUMEM_KIND_MANAGED) {
        e = gpumem__err_begin(GPUMEM_EKIND, o->fn, o->site);
        gpumem__err_alloc(e, r);
        e->alloc_offset = (size_t)((uintptr_t)p - r->base);
        gpumem__err_append(e, "%s: %s %p: it is in %s %s memory, not managed memory; only "
                              "managed memory migrates between host and device",
                           o->fn, o->verb, p,
                           gpumem_format_bytes(r->bytes, size_text, sizeof size_text),
                           gpumem_kind_name(r->kind));
        append_sites(e, o, r);
        gpumem__err_append(e, "\n  hint: %s; nothing was done",
                           r->kind == GPUMEM_KIND_DEVICE || r->kind == GPUMEM_KIND_DEVICE_ASYNC
                               ? "device memory is already on its device; copy it with "
                                 "cudaMemcpy to move it"
                               : "pinned host memory stays on the host; kernels read mapped "
                                 "memory through gpumem_device_ptr");
        return gpumem__err_raise(e);
    }
    size_t off = (size_t)((uintptr_t)p - r->base);
    if (bytes > r->bytes - off) {
        e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
        gpumem__err_alloc(e, r);
        e->alloc_offset = off;
        gpumem__err_append(e, "%s: %s ", o->fn, o->verb);
        append_range(e, p, bytes, r);
        gpumem__err_append(e, ": the range runs %zu bytes past its end", bytes - (r->bytes - off));
        append_sites(e, o, r);
        gpumem__err_append(e, "\n  hint: the range is in bytes from %p; at most %zu bytes "
                              "remain from there; nothing was done",
                           p, r->bytes - off);
        return gpumem__err_raise(e);
    }
    return GPUMEM_OK;
}

/* device must be an ordinal the backend knows, or GPUMEM_HOST. When the devices cannot be
 * counted (a sticky error, say), the CUDA call that follows fails too and says why. */
static int check_device(const op *o, int device, const gpumem__rec *r)
{
    int n = 0;
    if (device == GPUMEM_HOST || gpumem__be->device_count(&n) != 0 || (device >= 0 && device < n))
        return GPUMEM_OK;
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, o->fn, o->site);
    gpumem__err_alloc(e, r);
    gpumem__err_append(e, "%s: device %d does not exist (%d device%s): use 0 to %d, or "
                          "GPUMEM_HOST (-1) for the host",
                       o->fn, device, n, n == 1 ? "" : "s", n - 1);
    append_sites(e, o, r);
    return gpumem__err_raise(e);
}

static int cuda_failed(const op *o, int err, const void *p, size_t bytes, const gpumem__rec *r)
{
    gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), o->fn, o->site);
    if (e->code == GPUMEM_ENOMEM)
        e->code = GPUMEM_ECUDA;
    gpumem__err_cuda(e, err);
    gpumem__err_alloc(e, r);
    gpumem__err_append(e, "%s: %s ", o->fn, o->verb);
    append_range(e, p, bytes, r);
    gpumem__err_append(e, ": CUDA failed with %s: %s", e->cuda_name, e->cuda_string);
    append_sites(e, o, r);
    gpumem__err_sticky_hint(e);
    return gpumem__err_raise(e);
}

int gpumem_prefetch_at(const void *p, size_t bytes, int device, cudaStream_t stream,
                       gpumem_site site)
{
    const op o = {"gpumem_prefetch", "prefetch of", site};
    gpumem__rec r;
    int rc = check_range(&o, p, bytes, &r);
    /* A record exists only once the backend is up, so gpumem__be may be called from here. */
    if (rc == GPUMEM_OK)
        rc = check_device(&o, device, &r);
    if (rc != GPUMEM_OK)
        return rc;
    if (bytes) {
        int err = gpumem__be->prefetch(p, bytes, device, stream);
        if (err)
            return cuda_failed(&o, err, p, bytes, &r);
    }
    gpumem__err_clear();
    return GPUMEM_OK;
}

static const char *advice_name(int advice)
{
    switch (advice) {
    case cudaMemAdviseSetReadMostly:
        return "cudaMemAdviseSetReadMostly";
    case cudaMemAdviseUnsetReadMostly:
        return "cudaMemAdviseUnsetReadMostly";
    case cudaMemAdviseSetPreferredLocation:
        return "cudaMemAdviseSetPreferredLocation";
    case cudaMemAdviseUnsetPreferredLocation:
        return "cudaMemAdviseUnsetPreferredLocation";
    case cudaMemAdviseSetAccessedBy:
        return "cudaMemAdviseSetAccessedBy";
    case cudaMemAdviseUnsetAccessedBy:
        return "cudaMemAdviseUnsetAccessedBy";
    default:
        return NULL;
    }
}

int gpumem_advise_at(const void *p, size_t bytes, int advice, int device, gpumem_site site)
{
    const op o = {"gpumem_advise", "advice for", site};
    if (!advice_name(advice)) {
        char where[256];
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, o.fn, site);
        gpumem__err_append(e, "%s: advice %d is not a cudaMemoryAdvise value (1 "
                              "cudaMemAdviseSetReadMostly to 6 cudaMemAdviseUnsetAccessedBy)"
                              "\n    %-18s %s",
                           o.fn, advice, "called at", gpumem__site_str(site, where, sizeof where));
        return gpumem__err_raise(e);
    }
    gpumem__rec r;
    int rc = check_range(&o, p, bytes, &r);
    /* CUDA ignores the device for these; so does gpumem, rather than refuse a value unused. */
    int uses_device = advice == cudaMemAdviseSetPreferredLocation ||
                      advice == cudaMemAdviseSetAccessedBy ||
                      advice == cudaMemAdviseUnsetAccessedBy;
    if (!uses_device)
        device = 0;
    if (rc == GPUMEM_OK)
        rc = check_device(&o, device, &r);
    if (rc != GPUMEM_OK)
        return rc;
    if (bytes) {
        int err = gpumem__be->advise(p, bytes, advice, device);
        if (err)
            return cuda_failed(&o, err, p, bytes, &r);
    }
    gpumem__err_clear();
    return GPUMEM_OK;
}

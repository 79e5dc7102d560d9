/* Queries: what gpumem knows of an address, and the device address of mapped host memory. */
#include <stdio.h>

#include "internal.h"

const char *gpumem__cuda_says(const void *p)
{
    int type = -1;
    if (!gpumem__backend_try() || gpumem__be->pointer_type(p, &type) != 0)
        return "CUDA could not say what it is (no usable CUDA device)";
    switch (type) {
    case GPUMEM__PTR_DEVICE:
        return "CUDA says it is device memory: a raw cudaMalloc (released with cudaFree) or "
               "another allocator's";
    case GPUMEM__PTR_HOST:
        return "CUDA says it is pinned host memory: a raw cudaMallocHost or cudaHostAlloc "
               "(released with cudaFreeHost) or cudaHostRegister";
    case GPUMEM__PTR_MANAGED:
        return "CUDA says it is managed memory: a raw cudaMallocManaged (released with cudaFree)";
    default:
        return "CUDA does not know it: ordinary host memory (malloc, stack or static), or "
               "memory already released";
    }
}

int gpumem_query(const void *p, gpumem_info *info)
{
    if (!p || !info)
        return GPUMEM_EINVAL;
    gpumem__rec r;
    if (!gpumem__reg_find(p, &r))
        return GPUMEM_EFOREIGN;
    info->kind = r.kind;
    info->flags = r.flags;
    info->base = (void *)r.base;
    info->bytes = r.bytes;
    info->offset = (size_t)((uintptr_t)p - r.base);
    info->device = r.device;
    info->stream = r.stream;
    info->file = r.site.file;
    info->line = r.site.line;
    info->func = r.site.func;
    info->thread = r.thread;
    info->seq = r.seq;
    return GPUMEM_OK;
}

void *gpumem_device_ptr_at(const void *mapped_host, gpumem_site site)
{
    static const char fn[] = "gpumem_device_ptr";
    char where[256], alloc_where[256], size_text[32];
    gpumem__rec r;
    if (!mapped_host || !gpumem__reg_find(mapped_host, &r)) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EFOREIGN, fn, site);
        gpumem__err_append(e, "%s of %p, which is not inside memory gpumem allocated\n    at %s"
                              "\n  hint: allocate it with gpumem_host_alloc(n, size, "
                              "GPUMEM_HOST_MAPPED)",
                           fn, mapped_host, gpumem__site_str(site, where, sizeof where));
        gpumem__err_raise(e);
        return NULL;
    }
    if (r.kind != GPUMEM_KIND_HOST || !(r.flags & GPUMEM_HOST_MAPPED)) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EKIND, fn, site);
        gpumem__err_alloc(e, &r);
        gpumem__err_append(e,
                           "%s of %p: it is in %s %s memory, which is not mapped host memory"
                           "\n    at %s\n    allocated at %s\n  hint: allocate it with "
                           "gpumem_host_alloc(n, size, GPUMEM_HOST_MAPPED)",
                           fn, mapped_host, gpumem_format_bytes(r.bytes, size_text, sizeof size_text),
                           gpumem_kind_name(r.kind), gpumem__site_str(site, where, sizeof where),
                           gpumem__site_str(r.site, alloc_where, sizeof alloc_where));
        gpumem__err_raise(e);
        return NULL;
    }
    void *dev = NULL;
    int err = gpumem__be->host_device_ptr(&dev, (void *)r.base);
    if (err) {
        gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), fn, site);
        gpumem__err_cuda(e, err);
        gpumem__err_alloc(e, &r);
        gpumem__err_append(e, "%s of %p: cudaHostGetDevicePointer failed: %s: %s\n    at %s", fn,
                           mapped_host, e->cuda_name, e->cuda_string,
                           gpumem__site_str(site, where, sizeof where));
        gpumem__err_raise(e);
        return NULL;
    }
    gpumem__err_clear();
    return (char *)dev + ((uintptr_t)mapped_host - r.base);
}

/* Allocation: the five CUDA interfaces behind one calloc-shaped path.
 *
 * Order matters: the size is checked before anything else (an overflow must not reach CUDA
 * or even initialize it), the registry record is made before the CUDA call (so a failure
 * afterwards has nothing to undo in CUDA), and the record goes live only once CUDA
 * succeeded. */
#include <stdio.h>

#include "backtrace.h"
#include "internal.h"
#include "trace.h"

/* Sequence numbers: unique and increasing on each thread. A thread takes them SEQ_BLOCK at a time
 * from the shared counter, so that threads allocating at once do not all write one cache line;
 * numbers therefore jump between threads (and after a checkpoint), and numbers from different
 * threads are not in allocation order. A checkpoint must still see every allocation made after it:
 * it bumps the epoch (gpumem__hot.seq_epoch) first and then reads the counter, and a thread whose
 * block was taken in an older epoch drops what is left of it. An allocation ordered after the
 * checkpoint (same thread, or synchronized with it) sees the new epoch, so its block, and its
 * number, come after the value the checkpoint read. */
#define SEQ_BLOCK 64u

static atomic_uint_fast64_t next_seq = 1;
static _Thread_local struct {
    uint64_t next, end;
    unsigned epoch;
} seq_block;

uint64_t gpumem__seq_checkpoint(void)
{
    atomic_fetch_add_explicit(&gpumem__hot.seq_epoch, 1, memory_order_seq_cst);
    return atomic_load_explicit(&next_seq, memory_order_seq_cst);
}

uint64_t gpumem__seq_take(void)
{
    unsigned e = atomic_load_explicit(&gpumem__hot.seq_epoch, memory_order_relaxed);
    if (GPUMEM__UNLIKELY(seq_block.next == seq_block.end || seq_block.epoch != e)) {
        seq_block.next = atomic_fetch_add_explicit(&next_seq, SEQ_BLOCK, memory_order_relaxed);
        seq_block.end = seq_block.next + SEQ_BLOCK;
        seq_block.epoch = e;
    }
    return seq_block.next++;
}
static atomic_uint_fast64_t alloc_attempts;

static const char *fn_name[GPUMEM_KIND_COUNT_] = {
    "", "gpumem_device_alloc", "gpumem_managed_alloc", "gpumem_pinned_alloc",
    "gpumem_host_alloc", "gpumem_device_alloc_async"};

/* GPUMEM_FAIL_ALLOC=N: the Nth allocation that would reach CUDA (or a pool) fails as out of
 * memory. */
int gpumem__fail_injected(void)
{
    uint64_t n = gpumem__hot.fail_alloc;
    if (GPUMEM__LIKELY(n == 0))
        return 0;
    return atomic_fetch_add_explicit(&alloc_attempts, 1, memory_order_relaxed) + 1 == n;
}

static void *fail_overflow(int kind, size_t count, size_t size, gpumem_site site)
{
    char where[256];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EOVERFLOW, fn_name[kind], site);
    gpumem__err_append(e,
                       "%s(count=%zu, size=%zu): count * size overflows size_t; nothing was "
                       "allocated\n    at %s\n  hint: check how count was computed (a negative "
                       "value converted to size_t is a common cause)",
                       fn_name[kind], count, size, gpumem__site_str(site, where, sizeof where));
    gpumem__err_raise(e);
    return NULL;
}

static void *fail_flags(int kind, unsigned flags, const char *valid, gpumem_site site)
{
    char where[256];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn_name[kind], site);
    gpumem__err_append(e, "%s: flags 0x%x are not valid (%s); nothing was allocated\n    at %s",
                       fn_name[kind], flags, valid, gpumem__site_str(site, where, sizeof where));
    gpumem__err_raise(e);
    return NULL;
}

static void *fail_cuda(int kind, size_t bytes, int cuda_error, int injected, gpumem_site site)
{
    char where[256], size_text[32];
    int code = cuda_error ? gpumem__status_from_cuda(cuda_error) : GPUMEM_ENOMEM;
    gpumem_error *e = gpumem__err_begin(code, fn_name[kind], site);
    e->requested = bytes;
    if (cuda_error)
        gpumem__err_cuda(e, cuda_error);
    gpumem_format_bytes(bytes, size_text, sizeof size_text);
    gpumem__site_str(site, where, sizeof where);
    if (code == GPUMEM_ENOMEM) {
        gpumem__err_append(e, "out of memory: %s %s memory requested at %s", size_text,
                           gpumem_kind_name(kind), where);
        gpumem__err_oom(e, -1);
        if (injected)
            gpumem__err_append(e, "\n    injected by GPUMEM_FAIL_ALLOC=%llu; CUDA was not called",
                               (unsigned long long)gpumem__opt_u64(GPUMEM__OPT_FAIL_ALLOC));
        else if (cuda_error)
            gpumem__err_append(e, "\n    CUDA said %s: %s (consumed by gpumem; it will not "
                                  "surface at a later CUDA call)", e->cuda_name, e->cuda_string);
        else
            gpumem__err_append(e, "\n    out of host memory for gpumem's registry; the memory "
                                  "CUDA allocated was given back");
    } else {
        gpumem__err_append(e, "%s of %s failed at %s: %s: %s", fn_name[kind], size_text, where,
                           e->cuda_name, e->cuda_string);
        gpumem__err_sticky_hint(e);
    }
    gpumem__err_raise(e);
    return NULL;
}

static void release_untracked(int kind, void *p)
{
    if (kind == GPUMEM_KIND_PINNED || kind == GPUMEM_KIND_HOST)
        gpumem__be->free_host(p);
    else
        gpumem__be->free(p);
}

/* Named gpumem__*: callers reach it by a tail call, so it is the frame that tells a stack's
 * reader (backtrace.c) where gpumem's own frames end. */
static void *gpumem__alloc_any(int kind, size_t count, size_t size, unsigned flags,
                               cudaStream_t stream, gpumem_site site)
{
    size_t bytes;
    if (GPUMEM__UNLIKELY(__builtin_mul_overflow(count, size, &bytes)))
        return fail_overflow(kind, count, size, site);
    if (GPUMEM__UNLIKELY(gpumem__ready(fn_name[kind], site) != GPUMEM_OK))
        return NULL;
    if (kind == GPUMEM_KIND_MANAGED) {
        if (flags == 0)
            flags = GPUMEM_ATTACH_GLOBAL;
        if (flags != GPUMEM_ATTACH_GLOBAL && flags != GPUMEM_ATTACH_HOST)
            return fail_flags(kind, flags, "GPUMEM_ATTACH_GLOBAL or GPUMEM_ATTACH_HOST", site);
    } else if (kind == GPUMEM_KIND_HOST &&
               (flags & ~(GPUMEM_HOST_MAPPED | GPUMEM_HOST_PORTABLE | GPUMEM_HOST_WRITE_COMBINED))) {
        return fail_flags(kind, flags,
                          "a combination of GPUMEM_HOST_MAPPED, GPUMEM_HOST_PORTABLE and "
                          "GPUMEM_HOST_WRITE_COMBINED",
                          site);
    }
    if (bytes == 0) { /* as cudaMalloc(&p, 0): NULL and no error */
        gpumem__err_clear();
        return NULL;
    }
    int dev = 0;
    void *p = NULL;
    int err = gpumem__be->current_device(&dev);
    int injected = !err && GPUMEM__UNLIKELY(gpumem__fail_injected());
    if (injected)
        err = cudaErrorMemoryAllocation;
    if (!err) {
        switch (kind) {
        case GPUMEM_KIND_DEVICE:
            err = gpumem__be->malloc_device(&p, bytes);
            break;
        case GPUMEM_KIND_MANAGED:
            err = gpumem__be->malloc_managed(&p, bytes, flags);
            break;
        case GPUMEM_KIND_PINNED:
            err = gpumem__be->host_alloc(&p, bytes, 0);
            break;
        case GPUMEM_KIND_HOST:
            err = gpumem__be->host_alloc(&p, bytes, flags);
            break;
        default:
            err = gpumem__be->malloc_async(&p, bytes, stream);
            break;
        }
    }
    if (GPUMEM__UNLIKELY(err || !p)) {
        if (gpumem__tracing())
            gpumem__trace_failed(kind, bytes, dev, site, 0,
                                 gpumem__status_from_cuda(err ? err : cudaErrorMemoryAllocation),
                                 injected ? 0 : err);
        return fail_cuda(kind, bytes, err ? err : cudaErrorMemoryAllocation, injected, site);
    }
    gpumem__rec r = {
        .base = (uintptr_t)p,
        .bytes = bytes,
        .stream = kind == GPUMEM_KIND_DEVICE_ASYNC ? stream : NULL,
        .site = site,
        .seq = gpumem__seq_take(),
        .flags = (unsigned short)(kind == GPUMEM_KIND_PINNED ? 0 : flags), /* validated above */
        .thread = gpumem__thread_id(),
        .device = dev,
        .kind = (unsigned char)kind,
    };
    if (GPUMEM__UNLIKELY(gpumem__hot.backtrace))
        r.stack = gpumem__stack_capture(0); /* gpumem's own frames are trimmed when shown */
    if (GPUMEM__UNLIKELY(gpumem__reg_insert(&r) != 0)) {
        /* Untracked memory must not reach the caller: give it back to CUDA. */
        release_untracked(kind, p);
        return fail_cuda(kind, bytes, 0, 0, site);
    }
    gpumem__stats_alloc(kind, dev, bytes);
    gpumem__trace_alloc(&r);
    gpumem__err_clear();
    return p;
}

void *gpumem_device_alloc_at(size_t count, size_t size, gpumem_site site)
{
    return gpumem__alloc_any(GPUMEM_KIND_DEVICE, count, size, 0, NULL, site);
}

void *gpumem_managed_alloc_at(size_t count, size_t size, unsigned flags, gpumem_site site)
{
    return gpumem__alloc_any(GPUMEM_KIND_MANAGED, count, size, flags, NULL, site);
}

void *gpumem_pinned_alloc_at(size_t count, size_t size, gpumem_site site)
{
    return gpumem__alloc_any(GPUMEM_KIND_PINNED, count, size, 0, NULL, site);
}

void *gpumem_host_alloc_at(size_t count, size_t size, unsigned flags, gpumem_site site)
{
    return gpumem__alloc_any(GPUMEM_KIND_HOST, count, size, flags, NULL, site);
}

void *gpumem_device_alloc_async_at(size_t count, size_t size, cudaStream_t stream,
                                   gpumem_site site)
{
    return gpumem__alloc_any(GPUMEM_KIND_DEVICE_ASYNC, count, size, 0, stream, site);
}

/* gpumem check's events (engine.h): what a CUDA program's allocation and release calls do to
 * the registry. Nothing here writes output: a release that is wrong becomes a finding, which
 * engine.c reports (check__report). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "engine.h"
#include "engine_int.h"
#include "hostmap.h"
#include "internal.h"
#include "trace.h"

/* Host-visible CUDA memory (what host free() could be handed) is counted where it lies
 * (hostmap.c), so that free() of anything else costs a few loads. */
static int host_visible(int kind)
{
    return kind == GPUMEM_KIND_PINNED || kind == GPUMEM_KIND_HOST ||
           kind == GPUMEM_KIND_MANAGED || kind == GPUMEM_KIND_REGISTERED;
}

uintptr_t check_handle_key(unsigned long long handle)
{
    return ((uintptr_t)1 << 63) | ((uintptr_t)handle << 8);
}

uintptr_t check_array_key(uintptr_t array)
{
    /* Shifted as handles are: registry keys are multiples of 256 (array handles need not be). */
    return ((uintptr_t)3 << 62) | (array << 8);
}

uintptr_t check_reserve_key(uintptr_t base)
{
    return ((uintptr_t)1 << 62) | base;
}

/* What the program passed: the handle or address a registry key stands for. */
uintptr_t check__key_shown(uintptr_t key)
{
    switch (key >> 62) {
    case 3:
        return (key & ~((uintptr_t)3 << 62)) >> 8;
    case 2:
        return (key & ~((uintptr_t)1 << 63)) >> 8;
    case 1:
        return key & ~((uintptr_t)1 << 62);
    default:
        return key;
    }
}

static void forget(const gpumem__rec *r)
{
    gpumem__stats_release(r->kind, r->device, r->bytes);
    gpumem__trace_release(r, (gpumem_site){0}, r->freed_site.func);
    if (host_visible(r->kind))
        check_hostmap_remove(r->base, r->bytes);
}

void check_alloc(const char *call, int kind, uintptr_t base, size_t bytes, int device,
                 int cuda_error, uint32_t stack)
{
    check_setup();
    check_tls_busy++;
    if (cuda_error) {
        finding f = {.kind = CHECK_FAILED_ALLOC, .call = call, .memory = kind, .bytes = bytes,
                     .stack = stack, .error = cuda_error, .device = device};
        gpumem__trace_failed(kind, bytes, device, (gpumem_site){NULL, call, 0}, stack,
                             gpumem__status_from_cuda(cuda_error), cuda_error);
        check__report(&f);
        check_tls_busy--;
        return;
    }
    /* Memory gpumem check saw no release of (released by a call it does not watch) is gone
     * when CUDA hands the address out again. */
    gpumem__rec old;
    int mismatch = 0;
    if (gpumem__reg_take((const void *)base, (gpumem_site){0}, 0, &mismatch, &old) == GPUMEM__TAKEN)
        forget(&old);
    gpumem__rec r = {.base = base, .bytes = bytes, .site = {NULL, call, 0},
                     .seq = gpumem__seq_take(), .thread = gpumem__thread_id(),
                     .device = device, .stack = stack, .kind = (unsigned char)kind};
    if (gpumem__reg_insert(&r) == 0) {
        gpumem__stats_alloc(kind, device, bytes);
        gpumem__trace_alloc(&r);
        if (host_visible(kind))
            check_hostmap_add(base, bytes);
    }
    check_tls_busy--;
}

/* Classifies a release of p by call; CHECK_GO leaves the record taken (r filled). */
static int classify(const char *call, unsigned mask, uintptr_t p, uint32_t stack, gpumem__rec *r,
                    int defer_unknown)
{
    int mismatch = 0;
    gpumem__take_result t =
        gpumem__reg_take((const void *)p, (gpumem_site){NULL, call, 0}, mask, &mismatch, r);
    if (t == GPUMEM__TAKEN) {
        gpumem__reg_set_freed_stack((const void *)p, stack);
        forget(r);
        return CHECK_GO;
    }
    finding f = {.call = call, .address = check__key_shown(p), .stack = stack, .memory = r->kind,
                 .bytes = r->bytes, .alloc_call = r->site.func, .alloc_stack = r->stack};
    if (mismatch) {
        f.kind = CHECK_MISMATCHED;
    } else if (t == GPUMEM__DOUBLE) {
        f.kind = CHECK_DOUBLE;
        f.first_call = r->freed_site.func ? r->freed_site.func : "?";
        f.first_stack = r->freed_stack;
    } else if (t == GPUMEM__INTERIOR) {
        f.kind = CHECK_INTERIOR;
        f.offset = p - r->base;
    } else if (defer_unknown) {
        return CHECK_UNKNOWN;
    } else {
        f = (finding){.kind = CHECK_INVALID, .call = call, .address = check__key_shown(p), .stack = stack};
    }
    check__report(&f);
    return CHECK_REPORTED;
}

void check_release_unknown_end(const char *call, uintptr_t p, uint32_t stack, int succeeded)
{
    if (succeeded)
        return;
    check_tls_busy++;
    finding f = {.kind = CHECK_INVALID, .call = call, .address = check__key_shown(p), .stack = stack};
    check__report(&f);
    check_tls_busy--;
}

int check_release_begin(const char *call, unsigned kind_mask, uintptr_t p, uint32_t stack)
{
    if (!p)
        return CHECK_IGNORED;
    check_setup();
    check_tls_busy++;
    gpumem__rec r;
    int res = classify(call, kind_mask ? kind_mask : ~0u, p, stack, &r, 1);
    /* cudaFree of a CUDA array (a handle, kept apart from addresses): a mismatched release. */
    if (res == CHECK_UNKNOWN && !(p >> 54) && gpumem__reg_find((const void *)check_array_key(p), &r) &&
        r.base == check_array_key(p))
        res = classify(call, kind_mask ? kind_mask : ~0u, check_array_key(p), stack, &r, 1);
    /* cudaFree of virtual memory a cuMemMap mapped: a mismatched release CUDA refuses. */
    check_map m;
    if (res == CHECK_UNKNOWN && !(p >> 54) && check__map_at(p, &m)) {
        finding f = {.kind = p == m.base ? CHECK_MISMATCHED : CHECK_INTERIOR, .call = call,
                     .address = p, .stack = stack, .memory = GPUMEM_KIND_VIRTUAL,
                     .bytes = m.bytes, .offset = p - m.base, .alloc_call = "cuMemMap",
                     .alloc_stack = m.stack};
        check__report(&f);
        res = CHECK_REPORTED;
    }
    check_tls_busy--;
    return res;
}

void check_release_end(uintptr_t p, int succeeded)
{
    if (succeeded)
        return;
    check_tls_busy++;
    gpumem__rec r;
    gpumem__reg_untake((const void *)p);
    if (gpumem__reg_find((const void *)p, &r) && r.base == p) {
        gpumem__stats_alloc(r.kind, r.device, r.bytes);
        gpumem__trace_alloc(&r); /* live again: CUDA refused the release */
        if (host_visible(r.kind))
            check_hostmap_add(r.base, r.bytes);
    }
    check_tls_busy--;
}

int check_release_if_live(const char *call, unsigned kind_mask, uintptr_t p, uint32_t stack)
{
    check_setup();
    check_tls_busy++;
    gpumem__rec r;
    int mismatch = 0, taken = 0;
    if (gpumem__reg_take((const void *)p, (gpumem_site){NULL, call, 0}, kind_mask, &mismatch,
                         &r) == GPUMEM__TAKEN) {
        gpumem__reg_set_freed_stack((const void *)p, stack);
        forget(&r);
        taken = 1;
    }
    check_tls_busy--;
    return taken;
}

int check_host_lookup(uintptr_t p, uintptr_t *base, size_t *bytes)
{
    if (!check_hostmap_may_hold(p))
        return 0;
    check_tls_busy++;
    gpumem__rec r;
    int kind = 0;
    if (gpumem__reg_find((const void *)p, &r) && host_visible(r.kind)) {
        kind = r.kind;
        *base = r.base;
        *bytes = r.bytes;
    }
    check_tls_busy--;
    return kind;
}

int check_host_free(const char *call, uintptr_t p, uint32_t stack)
{
    if (!check_hostmap_may_hold(p))
        return 0;
    check_tls_busy++;
    gpumem__rec r;
    int kind = 0;
    if (gpumem__reg_find((const void *)p, &r) && host_visible(r.kind)) {
        if (!stack)
            stack = check__capture();
        if (r.base == p) {
            /* Take it out as released by this call, then report the mismatch. */
            classify(call, 1u << r.kind, p, stack, &r, 0);
            finding f = {.kind = CHECK_MISMATCHED, .call = call, .address = p, .stack = stack,
                         .memory = r.kind, .bytes = r.bytes, .alloc_call = r.site.func,
                         .alloc_stack = r.stack};
            check__report(&f);
            kind = r.kind;
        } else {
            classify(call, 0, p, stack, &r, 0); /* interior: reported, nothing released */
            kind = -1;
        }
    }
    check_tls_busy--;
    return kind;
}

/* Takes every live record that chosen() picks out of the registry, as released by call:
 * memory that went with a context or a range without a release call of its own. Records are
 * collected a batch at a time (the registry is walked under its locks) and taken after. */
typedef struct {
    int (*chosen)(const gpumem__rec *r, const void *arg);
    const void *arg;
    uintptr_t bases[256];
    int n;
} take_batch;

static int batch_collect(const gpumem__rec *r, void *arg)
{
    take_batch *b = arg;
    if (b->chosen(r, b->arg))
        b->bases[b->n++] = r->base;
    return b->n == (int)(sizeof b->bases / sizeof *b->bases);
}

static void take_all(int (*chosen)(const gpumem__rec *, const void *), const void *arg,
                     const char *call)
{
    check_tls_busy++;
    take_batch b;
    do {
        b = (take_batch){.chosen = chosen, .arg = arg};
        gpumem__reg_foreach(batch_collect, &b, 0);
        for (int i = 0; i < b.n; i++) {
            gpumem__rec r;
            int mismatch = 0;
            if (gpumem__reg_take((const void *)b.bases[i], (gpumem_site){NULL, call, 0}, 0,
                                 &mismatch, &r) == GPUMEM__TAKEN)
                forget(&r);
        }
    } while (b.n == (int)(sizeof b.bases / sizeof *b.bases));
    check_tls_busy--;
}

/* What a device's context held: everything of it but registered host memory, which is the
 * program's own memory and stays registered until it says otherwise. */
static int of_device(const gpumem__rec *r, const void *arg)
{
    return r->device == *(const int *)arg && r->kind != GPUMEM_KIND_REGISTERED;
}

void check__take_device(int device, const char *call)
{
    take_all(of_device, &device, call);
}

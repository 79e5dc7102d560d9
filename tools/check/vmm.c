/* gpumem check's model of CUDA's virtual memory management (engine.h, "virtual memory").
 *
 * CUDA's rules, from the driver API's documentation of cuMemCreate, cuMemRelease,
 * cuMemRetainAllocationHandle, cuMemMap and cuMemUnmap: a handle (cuMemCreate,
 * cuMemImportFromShareableHandle, cuMulticastCreate) stands for physical memory and starts
 * with one reference; cuMemRetainAllocationHandle on a mapped address returns the handle the
 * mapping was made with and adds a reference; cuMemRelease drops one. The physical memory goes
 * when the last reference is released and the last mapping of it is unmapped, in either order:
 * a program may release its handle right after mapping it (the mapping keeps the memory) and
 * unmap later. NCCL's free path does retain, release, unmap, release.
 *
 * So the registry holds one record per handle (its physical memory: counted once in the
 * statistics, listed once when it leaks), and this file keeps what the registry cannot: each
 * handle's references and mappings, and the mappings themselves (address range -> handle). A
 * handle's record leaves the registry, as released by the call that dropped the last hold,
 * when both reach zero. A cuMemRelease with no reference left is a double release, whether the
 * memory is gone or a mapping still holds it. A multicast object's bound memory
 * (cuMulticastBindMem, cuMulticastBindAddr) is held by the binding as by a mapping.
 *
 * VMM calls are rare (allocations of segments, not of tensors): one lock and a hash of handles
 * are plenty; the mappings are maps.c's (a release of an address asks there too). Nothing
 * here calls CUDA. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_int.h"
#include "internal.h"

typedef struct {
    unsigned long long handle; /* 0: an empty slot */
    int refs;                  /* references not yet released */
    int holds;                 /* mappings and multicast bindings of it */
    int tracked;               /* it has a record in the registry (made by a watched call) */
    int device;
    const char *last_call;     /* the release that dropped the last reference */
    uint32_t last_stack;
} vmm_handle;

typedef struct {
    unsigned long long mc, mem;
    size_t offset, bytes;
} vmm_bind;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static vmm_handle *handles; /* open addressing, linear probing; a power of two */
static size_t handles_cap, handles_used;
static vmm_bind *binds;
static size_t nbinds, binds_cap;

/* ---- the handles ---- */

static size_t slot_of(unsigned long long h, size_t cap)
{
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 7) & (cap - 1);
}

static vmm_handle *find_handle(unsigned long long h)
{
    if (!handles_cap || !h)
        return NULL;
    for (size_t i = slot_of(h, handles_cap);; i = (i + 1) & (handles_cap - 1)) {
        if (handles[i].handle == h)
            return &handles[i];
        if (!handles[i].handle)
            return NULL;
    }
}

static int grow_handles(void)
{
    size_t cap = handles_cap ? handles_cap * 2 : 64;
    vmm_handle *grown = calloc(cap, sizeof *grown);
    if (!grown)
        return -1;
    for (size_t i = 0; i < handles_cap; i++) {
        if (!handles[i].handle)
            continue;
        size_t j = slot_of(handles[i].handle, cap);
        while (grown[j].handle)
            j = (j + 1) & (cap - 1);
        grown[j] = handles[i];
    }
    free(handles);
    handles = grown;
    handles_cap = cap;
    return 0;
}

static vmm_handle *add_handle(unsigned long long h)
{
    if ((handles_used + 1) * 2 > handles_cap && grow_handles() != 0)
        return NULL;
    size_t i = slot_of(h, handles_cap);
    while (handles[i].handle)
        i = (i + 1) & (handles_cap - 1);
    handles[i] = (vmm_handle){.handle = h, .device = -1};
    handles_used++;
    return &handles[i];
}

/* Removes e, moving back the entries of its probe chain that follow it. */
static void remove_handle(vmm_handle *e)
{
    size_t i = (size_t)(e - handles);
    handles[i].handle = 0;
    handles_used--;
    for (size_t j = (i + 1) & (handles_cap - 1); handles[j].handle; j = (j + 1) & (handles_cap - 1)) {
        vmm_handle moved = handles[j];
        handles[j].handle = 0;
        size_t k = slot_of(moved.handle, handles_cap);
        while (handles[k].handle)
            k = (k + 1) & (handles_cap - 1);
        handles[k] = moved;
    }
}

static void drop_binds(unsigned long long mc, size_t offset, size_t bytes, int whole,
                       const char *call, uint32_t stack);

/* Its physical memory went with the last reference or hold, released by call at stack; a
 * multicast object's bindings go with it. */
static void retire(vmm_handle *e, const char *call, uint32_t stack)
{
    unsigned long long h = e->handle;
    int tracked = e->tracked;
    remove_handle(e); /* e is no longer valid */
    if (tracked)
        check_release_if_live(call, 1u << GPUMEM_KIND_VIRTUAL, check_handle_key(h), stack);
    if (nbinds)
        drop_binds(h, 0, 0, 1, call, stack);
}

static void retire_if_free(vmm_handle *e, const char *call, uint32_t stack)
{
    if (e && e->refs <= 0 && e->holds <= 0)
        retire(e, call, stack);
}

/* ---- the entry points ---- */

void check_vmm_handle(const char *call, unsigned long long handle, size_t bytes, int device,
                      uint32_t stack)
{
    check_setup();
    pthread_mutex_lock(&lock);
    vmm_handle *e = find_handle(handle);
    if (e && e->refs + e->holds > 0) {
        /* An import of a handle this process holds already: one more reference to it. */
        e->refs++;
        pthread_mutex_unlock(&lock);
        return;
    }
    if (e) /* a handle value the driver gives out again */
        remove_handle(e);
    e = add_handle(handle);
    if (e) {
        e->refs = 1;
        e->tracked = 1;
        e->device = device;
    }
    pthread_mutex_unlock(&lock);
    check_alloc(call, GPUMEM_KIND_VIRTUAL, check_handle_key(handle), bytes, device, 0, stack);
}

void check_vmm_retain(unsigned long long handle)
{
    pthread_mutex_lock(&lock);
    vmm_handle *e = find_handle(handle);
    if (!e) /* a handle made by a call not watched: counted, never reported */
        e = add_handle(handle);
    if (e)
        e->refs++;
    pthread_mutex_unlock(&lock);
}

/* cuMemRelease of a handle that has none left: a double release. The memory may still be
 * live (a mapping holds it) or gone already (then the registry's quarantine tells). */
static void report_double(const char *call, const vmm_handle *e, uint32_t stack)
{
    gpumem__rec r;
    memset(&r, 0, sizeof r);
    gpumem__reg_find((const void *)check_handle_key(e->handle), &r);
    finding f = {.kind = CHECK_DOUBLE, .call = call, .address = e->handle, .stack = stack,
                 .memory = GPUMEM_KIND_VIRTUAL, .bytes = r.bytes, .alloc_call = r.site.func,
                 .alloc_stack = r.stack,
                 .first_call = e->last_call ? e->last_call : "cuMemRelease",
                 .first_stack = e->last_stack};
    check__report(&f);
}

int check_vmm_release_begin(const char *call, unsigned long long handle, uint32_t stack)
{
    check_setup();
    check_tls_busy++;
    pthread_mutex_lock(&lock);
    vmm_handle *e = find_handle(handle);
    int state = CHECK_GO;
    if (!e) {
        state = CHECK_UNKNOWN;
    } else if (e->refs <= 0) {
        report_double(call, e, stack);
        state = CHECK_REPORTED;
    } else {
        /* Taken now, so that another thread's release sees what is left; given back if CUDA
         * refuses the call. */
        e->refs--;
        if (e->refs == 0) {
            e->last_call = call;
            e->last_stack = stack;
        }
    }
    pthread_mutex_unlock(&lock);
    if (state == CHECK_UNKNOWN) /* gone already (a double release) or never seen */
        state = check_release_begin(call, 1u << GPUMEM_KIND_VIRTUAL, check_handle_key(handle),
                                    stack);
    check_tls_busy--;
    return state;
}

void check_vmm_release_end(const char *call, unsigned long long handle, int succeeded,
                           uint32_t stack)
{
    check_tls_busy++;
    pthread_mutex_lock(&lock);
    vmm_handle *e = find_handle(handle);
    if (e && !succeeded)
        e->refs++;
    else if (e)
        retire_if_free(e, call, stack);
    pthread_mutex_unlock(&lock);
    if (!e) /* released through the registry alone (check_vmm_release_begin fell back to it) */
        check_release_end(check_handle_key(handle), succeeded);
    check_tls_busy--;
}

/* An imported handle's size is known once it is mapped: its record gets it then. */
static void learn_size(unsigned long long handle, size_t bytes)
{
    gpumem__rec r;
    uintptr_t key = check_handle_key(handle);
    if (!gpumem__reg_find((const void *)key, &r) || r.base != key || r.bytes)
        return;
    check_release_if_live(r.site.func, 1u << GPUMEM_KIND_VIRTUAL, key, 0);
    check_alloc(r.site.func, GPUMEM_KIND_VIRTUAL, key, bytes, r.device, 0, r.stack);
}

void check_vmm_map(uintptr_t base, size_t bytes, unsigned long long handle, uint32_t stack)
{
    check_tls_busy++;
    pthread_mutex_lock(&lock);
    vmm_handle *e = find_handle(handle);
    int tracked = e && e->tracked;
    if (e)
        e->holds++;
    check__map_add(base, bytes, handle, stack);
    pthread_mutex_unlock(&lock);
    if (tracked)
        learn_size(handle, bytes);
    check_tls_busy--;
}

int check_vmm_unmap_begin(uintptr_t base, size_t bytes)
{
    return check__map_starts_in(base, bytes) ? CHECK_GO : CHECK_UNKNOWN;
}

/* A mapping that starts in the range (two uintptr_t: base, end). */
static int starts_in(const check_map *m, const void *arg)
{
    const uintptr_t *range = arg;
    return m->base >= range[0] && m->base < range[1];
}

/* Each handle a mapping that went held loses that hold. Under the lock. */
static void holds_gone(const unsigned long long *held, size_t n, const char *call,
                       uint32_t stack)
{
    for (size_t i = 0; i < n; i++) {
        vmm_handle *e = find_handle(held[i]);
        if (e) {
            e->holds--;
            retire_if_free(e, call, stack);
        }
    }
}

void check_vmm_unmap_end(const char *call, uintptr_t base, size_t bytes, uint32_t stack)
{
    check_tls_busy++;
    pthread_mutex_lock(&lock);
    /* Every mapping that starts in the range goes: one call may unmap several. */
    const uintptr_t range[2] = {base, base + bytes};
    unsigned long long held[256];
    size_t n;
    do {
        n = check__map_take(starts_in, range, held, sizeof held / sizeof *held);
        holds_gone(held, n, call, stack);
    } while (n == sizeof held / sizeof *held);
    pthread_mutex_unlock(&lock);
    check_tls_busy--;
}

/* ---- multicast objects ---- */

static void add_bind(unsigned long long mc, size_t offset, size_t bytes, unsigned long long mem)
{
    if (nbinds == binds_cap) {
        size_t cap = binds_cap ? binds_cap * 2 : 16;
        vmm_bind *grown = realloc(binds, cap * sizeof *grown);
        if (!grown)
            return;
        binds = grown;
        binds_cap = cap;
    }
    binds[nbinds++] = (vmm_bind){mc, mem, offset, bytes};
    vmm_handle *e = find_handle(mem);
    if (e)
        e->holds++;
}

void check_vmm_bind(unsigned long long mc, size_t mc_offset, size_t bytes, unsigned long long mem)
{
    pthread_mutex_lock(&lock);
    add_bind(mc, mc_offset, bytes, mem);
    pthread_mutex_unlock(&lock);
}

void check_vmm_bind_addr(unsigned long long mc, size_t mc_offset, size_t bytes, uintptr_t addr)
{
    check_map m;
    pthread_mutex_lock(&lock);
    if (check__map_at(addr, &m))
        add_bind(mc, mc_offset, bytes, m.handle);
    pthread_mutex_unlock(&lock);
}

/* Drops the bindings of mc (whole, or those starting in [offset, offset + bytes)); each one's
 * memory loses a hold. Collected first: a retired handle may drop bindings of its own. */
static void drop_binds(unsigned long long mc, size_t offset, size_t bytes, int whole,
                       const char *call, uint32_t stack)
{
    unsigned long long gone[64];
    size_t ngone = 0, o = 0;
    for (size_t i = 0; i < nbinds; i++) {
        vmm_bind b = binds[i];
        if (b.mc == mc && ngone < 64 &&
            (whole || (b.offset >= offset && b.offset < offset + bytes))) {
            gone[ngone++] = b.mem;
            continue;
        }
        binds[o++] = b;
    }
    nbinds = o;
    for (size_t i = 0; i < ngone; i++) {
        vmm_handle *e = find_handle(gone[i]);
        if (e) {
            e->holds--;
            retire_if_free(e, call, stack);
        }
    }
}

void check_vmm_unbind(unsigned long long mc, size_t mc_offset, size_t bytes, uint32_t stack)
{
    check_tls_busy++;
    pthread_mutex_lock(&lock);
    drop_binds(mc, mc_offset, bytes, 0, "cuMulticastUnbind", stack);
    pthread_mutex_unlock(&lock);
    check_tls_busy--;
}

/* ---- a context's end ---- */

/* A mapping of a handle of the device (an int). Under the lock. */
static int of_device_handle(const check_map *m, const void *arg)
{
    const vmm_handle *e = find_handle(m->handle);
    return e && e->device == *(const int *)arg;
}

void check_vmm_device_reset(int device)
{
    check_tls_busy++;
    pthread_mutex_lock(&lock);
    /* Mappings of the device's handles go first, then the handles (their records are taken by
     * the reset itself, as every record of the device). */
    unsigned long long gone[256];
    while (check__map_take(of_device_handle, &device, gone, sizeof gone / sizeof *gone) ==
           sizeof gone / sizeof *gone)
        ;
    for (;;) { /* one at a time: removing one may move or remove others */
        vmm_handle *e = NULL;
        for (size_t i = 0; i < handles_cap && !e; i++)
            if (handles[i].handle && handles[i].device == device)
                e = &handles[i];
        if (!e)
            break;
        e->tracked = 0; /* its record goes with the reset's */
        e->refs = e->holds = 0;
        retire(e, "cudaDeviceReset", 0);
    }
    pthread_mutex_unlock(&lock);
    check_tls_busy--;
}

int check_vmm_release_held(unsigned long long handle)
{
    pthread_mutex_lock(&lock);
    vmm_handle *e = find_handle(handle);
    int held = e && e->refs <= 0 && e->holds > 0;
    pthread_mutex_unlock(&lock);
    return held;
}

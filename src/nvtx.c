/* Pools described to compute-sanitizer through NVTX's memory API.
 *
 * memcheck knows the allocations CUDA made, not what a pool made of them. A pool block is a
 * piece of a pinned chunk, or a device allocation of its size class, rounded up from the
 * request; and a released block stays in the pool's cache, still allocated to CUDA. So a
 * kernel that writes past the bytes it asked for, or into a block it already released, hits
 * memory that is valid to CUDA, and memcheck says nothing. NVTX lets an allocator tell the
 * tool more: every piece of memory a pool gets from CUDA (a pinned chunk, a device or large
 * pinned block of its own) is registered as a heap of gpumem's domain
 * (NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR over NVTX_MEM_TYPE_VIRTUAL_ADDRESS, as the tool
 * asks), and every live block as a region of it, of the bytes requested. memcheck then reports
 * an access inside a heap but outside every region as out of bounds.
 *
 * When: GPUMEM_NVTX=on (1), or auto (the default) in a process that compute-sanitizer
 * started, recognized by its libraries in the variables that load tools (sanitizer_signs).
 * Off, pools pay one branch on gpumem__hot.nvtx_on per allocation and release: it is set once,
 * when the first pool is made, and never changes. On, each pool allocation and release takes
 * this file's lock to read and makes an NVTX call (a no-op load and branch when no tool
 * listens), each heap a sorted insertion: a debugging mode, measured in docs/pools.md.
 *
 * nvtxMemHeapReset is not needed: a heap goes only with memory no live block holds (a pool is
 * destroyed only once its blocks are released), so it never has regions left.
 *
 * NVTX3 is header-only: it finds the tool through NVTX_INJECTION64_PATH at the first call, so
 * gpumem needs no library for it. The domain is made at the first heap, when the pool already
 * has CUDA memory: compute-sanitizer wants CUDA initialized before any NVTX call. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#if defined(__has_include)
#if __has_include(<nvtx3/nvToolsExtMem.h>)
#define GPUMEM_HAVE_NVTX 1
#endif
#endif

#ifdef GPUMEM_HAVE_NVTX
#define NVTX_AS_SYSTEM_HEADER
#include <nvtx3/nvToolsExtMem.h>
#endif

/* A variable that names one of compute-sanitizer's libraries when it started the process. */
static const struct {
    const char *variable;
    const char *contains;
} sanitizer_signs[] = {
    {"NVTX_INJECTION64_PATH", "sanitizer"},
    {"CUDA_INJECTION64_PATH", "sanitizer"},
    {"LD_PRELOAD", "sanitizer"},
};

static int contains_nocase(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (; *text; text++) {
        size_t i = 0;
        while (i < n && text[i] && tolower((unsigned char)text[i]) == word[i])
            i++;
        if (i == n)
            return 1;
    }
    return 0;
}

int gpumem__nvtx_sanitizer_seen(void)
{
    for (size_t i = 0; i < sizeof sanitizer_signs / sizeof *sanitizer_signs; i++) {
        const char *v = getenv(sanitizer_signs[i].variable);
        if (v && contains_nocase(v, sanitizer_signs[i].contains))
            return 1;
    }
    return 0;
}

static pthread_once_t start_once = PTHREAD_ONCE_INIT;

static void decide(void)
{
    const char *v = gpumem__opt_str(GPUMEM__OPT_NVTX);
    int on = strcmp(v, "on") == 0 || strcmp(v, "1") == 0;
    if (strcmp(v, "auto") == 0)
        on = gpumem__nvtx_sanitizer_seen();
#ifdef GPUMEM_HAVE_NVTX
    gpumem__hot.nvtx_on = on;
#else
    (void)on; /* built without the NVTX headers: nothing to tell a tool with */
#endif
}

void gpumem__nvtx_start(void)
{
    pthread_once(&start_once, decide);
}

#ifdef GPUMEM_HAVE_NVTX

typedef struct {
    uintptr_t base;
    size_t bytes;
    nvtxMemHeapHandle_t handle;
} heap;

/* Every registered heap, sorted by base, so that a block finds its heap by address: blocks of
 * their own are their heap's base, pinned blocks lie inside a chunk's. One mutex guards the
 * table and the calls. The read-write lock it replaced did not let threads run side by side
 * either (on an H200, 16 threads' pairs took 270 to 283 ns in aggregate with it, 377 to 411
 * with the mutex; one thread's 125 to 144 with either), and a forked child could not release
 * it (its writer is a thread the child does not have; starting it anew left ThreadSanitizer
 * seeing it held). This is a mode for runs under compute-sanitizer, which costs far more. The domain is made with the
 * first heap: a block is described only once its heap exists. */
static struct {
    pthread_mutex_t lock;
    nvtxDomainHandle_t domain;
    int domain_made;
    heap *heaps;
    size_t n, cap;
} nv = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL, 0, 0};

/* The first heap at or above base. Locked. */
static size_t heap_lower(uintptr_t base)
{
    size_t lo = 0, hi = nv.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nv.heaps[mid].base < base)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The heap holding p, or NULL. Locked. */
static const heap *heap_holding(uintptr_t p)
{
    size_t i = heap_lower(p);
    if (i < nv.n && nv.heaps[i].base == p)
        return &nv.heaps[i];
    if (i == 0)
        return NULL;
    const heap *h = &nv.heaps[i - 1];
    return p - h->base < h->bytes ? h : NULL;
}

/* The domain; made by the first heap's registration (write lock held). */
static nvtxDomainHandle_t domain(void)
{
    if (!nv.domain_made) {
        nv.domain = nvtxDomainCreateA("gpumem");
        nv.domain_made = 1;
    }
    return nv.domain;
}

static void heap_add(uintptr_t base, size_t bytes)
{
    if (nv.n == nv.cap) {
        size_t cap = nv.cap ? nv.cap * 2 : 64;
        heap *h = realloc(nv.heaps, cap * sizeof *h);
        if (!h)
            return; /* out of host memory: this heap goes undescribed, its blocks unchecked */
        nv.heaps = h;
        nv.cap = cap;
    }
    nvtxMemVirtualRangeDesc_t range = {.size = bytes, .ptr = (void *)base};
    nvtxMemHeapDesc_t desc = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof desc,
        .usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR,
        .type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
        .typeSpecificDescSize = sizeof range,
        .typeSpecificDesc = &range,
    };
    size_t i = heap_lower(base);
    memmove(&nv.heaps[i + 1], &nv.heaps[i], (nv.n - i) * sizeof *nv.heaps);
    nv.heaps[i] = (heap){base, bytes, nvtxMemHeapRegister(domain(), &desc)};
    nv.n++;
}

static void heap_remove(uintptr_t base)
{
    size_t i = heap_lower(base);
    if (i == nv.n || nv.heaps[i].base != base)
        return; /* not a heap: a block carved from a chunk */
    nvtxMemHeapUnregister(domain(), nv.heaps[i].handle);
    nv.n--;
    memmove(&nv.heaps[i], &nv.heaps[i + 1], (nv.n - i) * sizeof *nv.heaps);
}

void gpumem__nvtx_heap(uintptr_t base, size_t bytes, int add)
{
    pthread_mutex_lock(&nv.lock);
    if (add)
        heap_add(base, bytes);
    else
        heap_remove(base);
    pthread_mutex_unlock(&nv.lock);
}

static void region_register(const heap *h, uintptr_t base, size_t bytes)
{
    nvtxMemVirtualRangeDesc_t range = {.size = bytes, .ptr = (void *)base};
    nvtxMemRegionsRegisterBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .regionType = NVTX_MEM_TYPE_VIRTUAL_ADDRESS,
        .heap = h->handle,
        .regionCount = 1,
        .regionDescElementSize = sizeof range,
        .regionDescElements = &range,
    };
    nvtxMemRegionsRegister(nv.domain, &batch); /* made with the first heap */
}

static void region_unregister(uintptr_t base)
{
    nvtxMemRegionRef_t ref = {.pointer = (const void *)base};
    nvtxMemRegionsUnregisterBatch_t batch = {
        .extCompatID = NVTX_EXT_COMPATID_MEM,
        .structSize = sizeof batch,
        .refType = NVTX_MEM_REGION_REF_TYPE_POINTER,
        .refCount = 1,
        .refElementSize = sizeof ref,
        .refElements = &ref,
    };
    nvtxMemRegionsUnregister(nv.domain, &batch);
}

void gpumem__nvtx_region(uintptr_t base, size_t bytes, int add)
{
    pthread_mutex_lock(&nv.lock);
    /* No heap (out of host memory when it came) or one the tool refused (its NULL handle would
     * name the whole process): the block goes undescribed, both ways. */
    const heap *h = heap_holding(base);
    if (h && h->handle && add)
        region_register(h, base, bytes);
    else if (h && h->handle)
        region_unregister(base);
    pthread_mutex_unlock(&nv.lock);
}

/* fork(): a pool's lock comes first (a heap is registered with it held), then this one. */
void gpumem__nvtx_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        pthread_mutex_lock(&nv.lock);
    else
        pthread_mutex_unlock(&nv.lock);
}

#else /* no NVTX headers: gpumem__hot.nvtx_on stays 0 and these are never reached */

void gpumem__nvtx_at_fork(int phase)
{
    (void)phase;
}

void gpumem__nvtx_heap(uintptr_t base, size_t bytes, int add)
{
    (void)base, (void)bytes, (void)add;
}

void gpumem__nvtx_region(uintptr_t base, size_t bytes, int add)
{
    (void)base, (void)bytes, (void)add;
}

#endif

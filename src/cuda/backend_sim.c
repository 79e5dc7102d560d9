/* The simulated device: CUDA's memory API over host RAM, for machines without a GPU.
 *
 * It answers as the CUDA runtime does (docs/cuda-facts.md, measured on an H200): cudaFree of
 * pinned, interior, already released or foreign pointers and cudaFreeHost of device or
 * managed memory give cudaErrorInvalidValue; cudaFree of stream-ordered memory succeeds;
 * zero bytes give NULL and success; a request beyond the device's capacity
 * (GPUMEM_SIM_DEVICE_BYTES), or pinned memory beyond the machine's physical memory, gives
 * cudaErrorMemoryAllocation and the next one may succeed.
 * Device pointers are 512-byte aligned like consecutive small cudaMalloc results; pinned and
 * stream-ordered ones are page aligned. It keeps its own table of what it handed out, apart
 * from gpumem's registry, as a driver would. Managed memory counts against the capacity
 * (real managed memory is only charged when it migrates; a simulation keeps it simple).
 *
 * Several devices (GPUMEM_SIM_DEVICES, default 1), each with its own capacity and its own part
 * of the address range; a current device per thread, device 0 until set (cudaSetDevice), as
 * the runtime's. Peer access between any two simulated devices is possible unless
 * GPUMEM_SIM_PEER_ACCESS=0; then a peer copy (cuMemcpyPeerAsync) and a direct copy between
 * two devices' memory are refused with cudaErrorPeerAccessUnsupported. Real CUDA would copy
 * without peer access through its own buffers: refusing is stricter, so that a test proves
 * gpumem took its staged path. Where it is possible, peer access is enabled and disabled per
 * ordered pair (cudaDeviceEnablePeerAccess), with CUDA's answers to enabling it twice and to
 * disabling it when it was not enabled; a peer copy works either way, as CUDA's does.
 *
 * Device, managed and stream-ordered memory come from one address range reserved at the first
 * allocation (mmap, without reserving swap: pages exist once touched), split evenly between the
 * devices, never from malloc: a GPU's memory never overlaps the host heap, so host malloc can never return an address a released device allocation
 * had (gpumem would call freeing it a double free). Blocks are powers of two from 512 bytes;
 * a released block goes to its size's free list and the next request of that size takes it,
 * last released first, as cudaMalloc hands a released address out again. Released blocks of
 * 64 KiB or more give their pages back (madvise). Pinned memory is host memory: malloc. */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE, madvise */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../internal.h"
#include "backend.h"

enum { SIM_DEVICE = 1, SIM_MANAGED, SIM_HOST, SIM_ASYNC };

typedef struct sim_block {
    uintptr_t base;
    size_t bytes;
    int type;
    int device;   /* the device whose memory it is (host memory: current at allocation) */
    unsigned flags;
    unsigned cls; /* arena blocks: 1 << cls bytes of address space; 0 for host memory */
    struct sim_block *next;
} sim_block;

#define SIM_BUCKETS 4096u
#define ARENA_MIN_CLS 9u /* 512 bytes, the alignment of cudaMalloc's small results */
#define ARENA_CLASSES 64u
#define SIM_MAX_DEVICES 64 /* GPUMEM_SIM_DEVICES accepts 1 to 64 */

/* One simulated device: its capacity and its part of the reserved range. */
typedef struct sim_dev {
    uint64_t capacity, used;
    uintptr_t arena, arena_end, arena_next; /* its range and bump pointer */
    sim_block *released[ARENA_CLASSES];     /* released arena blocks by class, newest first */
} sim_dev;

static struct {
    pthread_mutex_t lock;
    sim_block *buckets[SIM_BUCKETS];
    size_t live;
    int ndev;
    int peer;              /* peer access between devices (GPUMEM_SIM_PEER_ACCESS) */
    /* enabled[d] bit p: device d has peer access to p's memory enabled (cuCtxEnablePeerAccess) */
    atomic_ullong enabled[SIM_MAX_DEVICES];
    uintptr_t range;       /* the start of device 0's range */
    atomic_uintptr_t span; /* each device's range's size; 0 until reserved (stored last) */
    sim_dev dev[SIM_MAX_DEVICES];
} sim = {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 1, 1, {0}, 0, 0, {{0}}};

static _Thread_local int sim_current; /* the thread's current device (cudaSetDevice) */

static atomic_int poisoned; /* a sticky error: while set, every call returns it */

/* The device whose range holds a, or -1. The ranges are written once, before span is stored
 * (release), so a thread that sees span sees them. */
static int vmm_device_of(uintptr_t a);

static int sim_device_of(uintptr_t a)
{
    uintptr_t span = atomic_load_explicit(&sim.span, memory_order_acquire);
    if (!span || a < sim.range)
        return vmm_device_of(a);
    uintptr_t i = (a - sim.range) / span;
    return i < (uintptr_t)sim.ndev && a < sim.dev[i].arena_end ? (int)i : vmm_device_of(a);
}

static size_t sim_bucket(uintptr_t a)
{
    return (size_t)(((uint64_t)a >> 9) * 0x9E3779B97F4A7C15ull >> 52) & (SIM_BUCKETS - 1);
}

void gpumem__sim_poison(int cuda_error)
{
    atomic_store(&poisoned, cuda_error);
}

size_t gpumem__sim_live_count(void)
{
    pthread_mutex_lock(&sim.lock);
    size_t n = sim.live;
    pthread_mutex_unlock(&sim.lock);
    return n;
}

static int sim_init(char *why, size_t n)
{
    (void)why;
    (void)n;
    uint64_t count = gpumem__opt_u64(GPUMEM__OPT_SIM_DEVICES);
    sim.ndev = count < 1 ? 1 : count > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)count;
    sim.peer = gpumem__opt_bool(GPUMEM__OPT_SIM_PEER_ACCESS);
    for (int i = 0; i < sim.ndev; i++)
        sim.dev[i].capacity = gpumem__opt_u64(GPUMEM__OPT_SIM_DEVICE_BYTES);
    return 0;
}

static int sim_device_count(int *count)
{
    *count = sim.ndev;
    return atomic_load(&poisoned);
}

static int sim_device_get(int ordinal, char *name, size_t n, size_t *total, int *major,
                          int *minor)
{
    if (ordinal < 0 || ordinal >= sim.ndev)
        return cudaErrorInvalidDevice;
    snprintf(name, n, "gpumem simulated device");
    *total = (size_t)sim.dev[ordinal].capacity;
    *major = 9;
    *minor = 0;
    return atomic_load(&poisoned);
}

static int sim_current_device(int *ordinal)
{
    *ordinal = sim_current;
    return atomic_load(&poisoned);
}

static int sim_set_device(int ordinal)
{
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (ordinal < 0 || ordinal >= sim.ndev)
        return cudaErrorInvalidDevice;
    sim_current = ordinal;
    return 0;
}

/* The token is the device that was current, plus one. */
static int sim_device_push(int ordinal, int *token)
{
    *token = 0;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (ordinal < 0 || ordinal >= sim.ndev)
        return cudaErrorInvalidDevice;
    if (ordinal != sim_current) {
        *token = sim_current + 1;
        sim_current = ordinal;
    }
    return 0;
}

static void sim_device_pop(int token)
{
    if (token)
        sim_current = token - 1;
}

static int sim_can_access_peer(int device, int peer, int *can)
{
    *can = 0;
    if (device < 0 || device >= sim.ndev || peer < 0 || peer >= sim.ndev)
        return cudaErrorInvalidDevice;
    *can = device != peer && sim.peer;
    return atomic_load(&poisoned);
}

static int sim_peer_access(int device, int peer, int enable)
{
    if (device < 0 || device >= sim.ndev || peer < 0 || peer >= sim.ndev || device == peer)
        return cudaErrorInvalidDevice;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (!sim.peer)
        return cudaErrorPeerAccessUnsupported;
    unsigned long long bit = 1ull << peer;
    unsigned long long was = enable ? atomic_fetch_or(&sim.enabled[device], bit)
                                    : atomic_fetch_and(&sim.enabled[device], ~bit);
    if (enable && (was & bit))
        return cudaErrorPeerAccessAlreadyEnabled;
    if (!enable && !(was & bit))
        return cudaErrorPeerAccessNotEnabled;
    return 0;
}

static int sim_pointer_device(const void *p, int *ordinal)
{
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    *ordinal = sim_device_of((uintptr_t)p);
    return *ordinal < 0 ? cudaErrorInvalidValue : 0;
}

static int sim_mem_info(int ordinal, size_t *free_bytes, size_t *total)
{
    if (ordinal < 0 || ordinal >= sim.ndev)
        return cudaErrorInvalidDevice;
    pthread_mutex_lock(&sim.lock);
    int err = atomic_load(&poisoned);
    *free_bytes = (size_t)(sim.dev[ordinal].capacity - sim.dev[ordinal].used);
    *total = (size_t)sim.dev[ordinal].capacity;
    pthread_mutex_unlock(&sim.lock);
    return err;
}

static uint64_t host_ram(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
}

/* Reserves every device's address range at once: four times a device's capacity each
 * (blocks are powers of two, and a released block serves only its own size), at most 4 TiB
 * a device and 64 TiB in all, less when the system refuses that much. Locked. */
static int arena_reserve(void)
{
    uint64_t cap = sim.dev[0].capacity;
    uint64_t want = cap > ((uint64_t)1 << 40) ? (uint64_t)4 << 40 : cap * 4;
    if (want < ((uint64_t)1 << 30))
        want = (uint64_t)1 << 30;
    while (want > ((uint64_t)1 << 24) && want * (uint64_t)sim.ndev > ((uint64_t)64 << 40))
        want /= 2;
    const uintptr_t big = (uintptr_t)2 << 20;
    for (; want >= ((uint64_t)1 << 24); want /= 2) {
        size_t total = (size_t)(want * (uint64_t)sim.ndev);
        void *r = mmap(NULL, total, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED)
            continue;
        /* Each range starts on a 2 MiB boundary, so large blocks are aligned as CUDA's are. */
        uintptr_t start = ((uintptr_t)r + big - 1) & ~(big - 1), end = (uintptr_t)r + total;
        for (int i = 0; i < sim.ndev; i++) {
            sim_dev *d = &sim.dev[i];
            d->arena = d->arena_next = start + (uintptr_t)i * (uintptr_t)want;
            d->arena_end = d->arena + (uintptr_t)want < end ? d->arena + (uintptr_t)want : end;
        }
        sim.range = start;
        atomic_store_explicit(&sim.span, (uintptr_t)want, memory_order_release);
        return 0;
    }
    return -1;
}

/* An arena block for bytes (> 0): the newest released block of its class, or a fresh one
 * from the bump pointer. NULL when the range or host memory runs out. Locked. */
static sim_block *arena_take(sim_dev *d, size_t bytes)
{
    unsigned cls = ARENA_MIN_CLS;
    while (cls < ARENA_CLASSES - 1 && ((size_t)1 << cls) < bytes)
        cls++;
    if (((size_t)1 << cls) < bytes)
        return NULL;
    sim_block *b = d->released[cls];
    if (b) {
        d->released[cls] = b->next;
        return b;
    }
    if (!atomic_load_explicit(&sim.span, memory_order_relaxed) && arena_reserve() != 0)
        return NULL;
    size_t size = (size_t)1 << cls;
    uintptr_t align = size < ((uintptr_t)2 << 20) ? size : ((uintptr_t)2 << 20);
    uintptr_t base = (d->arena_next + align - 1) & ~(align - 1);
    if (base < d->arena_next || base > d->arena_end || d->arena_end - base < size)
        return NULL;
    b = malloc(sizeof *b);
    if (!b)
        return NULL;
    d->arena_next = base + size;
    b->base = base;
    b->cls = cls;
    return b;
}

/* Keeps a released arena block for its class; its pages go back to the system when large.
 * Locked. */
static void arena_give(sim_block *b)
{
    if (b->cls >= 16)
        madvise((void *)b->base, (size_t)1 << b->cls, MADV_DONTNEED);
    sim_dev *d = &sim.dev[b->device];
    b->next = d->released[b->cls];
    d->released[b->cls] = b;
}

/* Memory of the given device (host memory: the device only labels it). */
static int sim_alloc(void **p, size_t bytes, int type, unsigned flags, int device)
{
    *p = NULL;
    pthread_mutex_lock(&sim.lock);
    int err = atomic_load(&poisoned);
    if (err || bytes == 0) {
        pthread_mutex_unlock(&sim.lock);
        return err;
    }
    int on_device = type != SIM_HOST;
    sim_dev *d = &sim.dev[device];
    /* Pinned memory cannot exceed physical memory (CUDA cannot lock more); checking this
     * keeps the answer the same on machines whose malloc overcommits. */
    if ((on_device && bytes > d->capacity - d->used) || (!on_device && bytes > host_ram())) {
        pthread_mutex_unlock(&sim.lock);
        return cudaErrorMemoryAllocation;
    }
    void *mem = NULL;
    sim_block *b = NULL;
    if (on_device) {
        b = arena_take(d, bytes);
        mem = b ? (void *)b->base : NULL;
    } else {
        b = malloc(sizeof *b);
        if (bytes <= SIZE_MAX - 4096 && b)
            mem = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
        if (!mem) {
            free(b);
            b = NULL;
        }
        if (b)
            b->cls = 0;
    }
    if (!mem) {
        pthread_mutex_unlock(&sim.lock);
        return cudaErrorMemoryAllocation;
    }
    b->base = (uintptr_t)mem;
    b->bytes = bytes;
    b->type = type;
    b->device = device;
    b->flags = flags;
    size_t k = sim_bucket(b->base);
    b->next = sim.buckets[k];
    sim.buckets[k] = b;
    sim.live++;
    if (on_device)
        d->used += bytes;
    pthread_mutex_unlock(&sim.lock);
    *p = mem;
    return 0;
}

/* Releases p if it is the start of a live block of an accepted type; else InvalidValue. */
static int sim_release(const void *p, unsigned accepted_types)
{
    if (!p)
        return atomic_load(&poisoned);
    pthread_mutex_lock(&sim.lock);
    int err = atomic_load(&poisoned);
    if (err) {
        pthread_mutex_unlock(&sim.lock);
        return err;
    }
    for (sim_block **pp = &sim.buckets[sim_bucket((uintptr_t)p)]; *pp; pp = &(*pp)->next) {
        sim_block *b = *pp;
        if (b->base != (uintptr_t)p)
            continue;
        if (!(accepted_types & (1u << b->type)))
            break;
        *pp = b->next;
        sim.live--;
        if (b->type != SIM_HOST) {
            sim.dev[b->device].used -= b->bytes;
            arena_give(b);
            pthread_mutex_unlock(&sim.lock);
            return 0;
        }
        pthread_mutex_unlock(&sim.lock);
        free((void *)b->base);
        free(b);
        return 0;
    }
    pthread_mutex_unlock(&sim.lock);
    return cudaErrorInvalidValue;
}

/* The block containing a (start or interior), copied out; 0 when none. Linear: tests only. */
static int sim_find(const void *a, sim_block *out)
{
    int found = 0;
    pthread_mutex_lock(&sim.lock);
    for (size_t k = 0; k < SIM_BUCKETS && !found; k++)
        for (sim_block *b = sim.buckets[k]; b && !found; b = b->next)
            if ((uintptr_t)a - b->base < b->bytes)
                *out = *b, found = 1;
    pthread_mutex_unlock(&sim.lock);
    return found;
}

static int sim_malloc_device(void **p, size_t bytes)
{
    return sim_alloc(p, bytes, SIM_DEVICE, 0, sim_current);
}
static int sim_malloc_managed(void **p, size_t bytes, unsigned flags)
{
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost)
        return cudaErrorInvalidValue;
    return sim_alloc(p, bytes, SIM_MANAGED, flags, sim_current);
}
static int sim_host_alloc(void **p, size_t bytes, unsigned flags)
{
    if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped |
                            cudaHostAllocWriteCombined))
        return cudaErrorInvalidValue;
    return sim_alloc(p, bytes, SIM_HOST, flags, sim_current);
}
static int sim_malloc_async(void **p, size_t bytes, cudaStream_t stream)
{
    (void)stream;
    return sim_alloc(p, bytes, SIM_ASYNC, 0, sim_current);
}
static int sim_free(void *p)
{
    return sim_release(p, 1u << SIM_DEVICE | 1u << SIM_MANAGED | 1u << SIM_ASYNC);
}
static int sim_free_host(void *p)
{
    return sim_release(p, 1u << SIM_HOST);
}
static int sim_free_async(void *p, cudaStream_t stream)
{
    (void)stream;
    return sim_release(p, 1u << SIM_DEVICE | 1u << SIM_ASYNC);
}

/* With unified addressing every pinned allocation is mapped at its host address. */
static int sim_host_device_ptr(void **dev, void *host)
{
    sim_block b;
    if (atomic_load(&poisoned))
        return atomic_load(&poisoned);
    if (!sim_find(host, &b) || b.type != SIM_HOST)
        return cudaErrorInvalidValue;
    *dev = host;
    return 0;
}

static int sim_pointer_type(const void *p, int *type)
{
    sim_block b;
    if (atomic_load(&poisoned))
        return atomic_load(&poisoned);
    if (gpumem__sim_registered(p))
        *type = GPUMEM__PTR_HOST;
    else if (vmm_device_of((uintptr_t)p) >= 0)
        *type = GPUMEM__PTR_DEVICE;
    else if (!sim_find(p, &b))
        *type = GPUMEM__PTR_UNREGISTERED;
    else if (b.type == SIM_HOST)
        *type = GPUMEM__PTR_HOST;
    else if (b.type == SIM_MANAGED)
        *type = GPUMEM__PTR_MANAGED;
    else
        *type = GPUMEM__PTR_DEVICE;
    return 0;
}

/* Prefetch and advice change where managed pages live, which host RAM cannot show, so the
 * simulated device only validates, with CUDA's answers: a device that does not exist (other than
 * the host, -1) is cudaErrorInvalidDevice; a range that is not inside one managed allocation, or an
 * advice CUDA does not define, is cudaErrorInvalidValue. */
static int sim_managed_range(const void *p, size_t bytes, int device)
{
    sim_block b;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (device != -1 && (device < 0 || device >= sim.ndev))
        return cudaErrorInvalidDevice;
    if (!p || !sim_find(p, &b) || b.type != SIM_MANAGED)
        return cudaErrorInvalidValue;
    size_t offset = (size_t)((uintptr_t)p - b.base);
    if (bytes == 0 || bytes > b.bytes - offset)
        return cudaErrorInvalidValue;
    return 0;
}

static int sim_prefetch(const void *p, size_t bytes, int device, cudaStream_t stream)
{
    (void)stream;
    return sim_managed_range(p, bytes, device);
}

static int sim_advise(const void *p, size_t bytes, int advice, int device)
{
    if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
        return atomic_load(&poisoned) ? atomic_load(&poisoned) : cudaErrorInvalidValue;
    /* CUDA ignores the device for these two. */
    if (advice == cudaMemAdviseSetReadMostly || advice == cudaMemAdviseUnsetReadMostly ||
        advice == cudaMemAdviseUnsetPreferredLocation)
        device = 0;
    return sim_managed_range(p, bytes, device);
}

/* CUDA's memory pool, simulated: each allocation is a stream-ordered block of the simulated
 * device (SIM_ASYNC, released by free or free_async), so capacity and out-of-memory answers
 * are the device's. The pool itself caches nothing, which only makes the simulation release
 * memory sooner than CUDA would; trimming has nothing to do. */
typedef struct sim_mempool {
    int device;
} sim_mempool;

static int sim_mempool_create(int ordinal, void **pool)
{
    *pool = NULL;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (ordinal < 0 || ordinal >= sim.ndev)
        return cudaErrorInvalidDevice;
    sim_mempool *mp = malloc(sizeof *mp);
    if (!mp)
        return cudaErrorMemoryAllocation;
    mp->device = ordinal;
    *pool = mp;
    return 0;
}

static int sim_mempool_alloc(void *pool, void **p, size_t bytes, cudaStream_t stream)
{
    (void)stream;
    if (!pool) {
        *p = NULL;
        return cudaErrorInvalidValue;
    }
    return sim_alloc(p, bytes, SIM_ASYNC, 0, ((sim_mempool *)pool)->device);
}

static int sim_mempool_trim(void *pool, size_t keep_bytes)
{
    (void)keep_bytes;
    return pool ? atomic_load(&poisoned) : cudaErrorInvalidValue;
}

static int sim_mempool_destroy(void *pool)
{
    if (!pool)
        return cudaErrorInvalidValue;
    free(pool);
    return 0;
}

/* Copies run at once on the calling thread, so every copy is complete when the call returns:
 * the strictest reading of CUDA's stream order, under which events and streams have nothing
 * left to wait for. Addresses are not checked against the simulated device's table: gpumem
 * checks ranges it owns before calling, and a linear search per copy would slow the tests. */
static atomic_uint copies_until_failure; /* 0: no failure planned, else copies left + 1 */
static atomic_int copy_failure;

void gpumem__sim_fail_copy(unsigned after, int cuda_error)
{
    atomic_store(&copy_failure, cuda_error);
    atomic_store(&copies_until_failure, cuda_error ? after + 1 : 0);
}

static void *_Atomic free_in_copy;

void gpumem__sim_free_during_copy(void *p)
{
    atomic_store(&free_in_copy, p);
}

static int sim_memcpy_async(void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
    (void)stream;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    void *f = atomic_exchange(&free_in_copy, NULL);
    if (f)
        free(f); /* as a driver frees its own small blocks inside a copy */
    unsigned left = atomic_load(&copies_until_failure);
    while (left && !atomic_compare_exchange_weak(&copies_until_failure, &left, left - 1)) {
    }
    if (left == 1)
        return atomic_load(&copy_failure);
    if (bytes && (!dst || !src))
        return cudaErrorInvalidValue;
    int from = sim_device_of((uintptr_t)src), to = sim_device_of((uintptr_t)dst);
    if (from >= 0 && to >= 0 && from != to && !sim.peer)
        return cudaErrorPeerAccessUnsupported;
    if (bytes)
        memcpy(dst, src, bytes);
    return 0;
}

/* cuMemcpyPeerAsync: dst on dst_device, src on src_device, each checked against its device's
 * range (a pointer of another device is cudaErrorInvalidValue). */
static atomic_ullong peer_copies, peer_copies_enabled;

unsigned long long gpumem__sim_peer_copies(void)
{
    return atomic_load(&peer_copies);
}

unsigned long long gpumem__sim_peer_copies_enabled(void)
{
    return atomic_load(&peer_copies_enabled);
}

static int sim_memcpy_peer_async(void *dst, int dst_device, const void *src, int src_device,
                                 size_t bytes, cudaStream_t stream)
{
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (dst_device < 0 || dst_device >= sim.ndev || src_device < 0 || src_device >= sim.ndev)
        return cudaErrorInvalidDevice;
    if (!bytes)
        return 0;
    if (sim_device_of((uintptr_t)dst) != dst_device || sim_device_of((uintptr_t)src) != src_device)
        return cudaErrorInvalidValue;
    if (dst_device != src_device && !sim.peer)
        return cudaErrorPeerAccessUnsupported;
    atomic_fetch_add(&peer_copies, 1);
    if (dst_device != src_device && (atomic_load(&sim.enabled[dst_device]) >> src_device & 1))
        atomic_fetch_add(&peer_copies_enabled, 1);
    return sim_memcpy_async(dst, src, bytes, stream);
}

static int sim_stream_sync(cudaStream_t stream)
{
    (void)stream;
    return atomic_load(&poisoned);
}

/* An event is only a token: everything it could wait for is done already. */
static int sim_event_create(void **event)
{
    *event = NULL;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    *event = malloc(1);
    return *event ? 0 : cudaErrorMemoryAllocation;
}

static int sim_event_record(void *event, cudaStream_t stream)
{
    (void)stream;
    return event ? atomic_load(&poisoned) : cudaErrorInvalidResourceHandle;
}

static int sim_event_sync(void *event)
{
    return event ? atomic_load(&poisoned) : cudaErrorInvalidResourceHandle;
}

static int sim_event_destroy(void *event)
{
    if (!event)
        return cudaErrorInvalidResourceHandle;
    free(event);
    return 0;
}

/* Registered host ranges, as cuMemHostRegister keeps them: a range overlapping one already
 * registered is refused (cudaErrorHostMemoryAlreadyRegistered), unregistering an address that
 * does not start one too (cudaErrorHostMemoryNotRegistered); while registered, the range is
 * pinned host memory to sim_pointer_type. */
#define SIM_MAX_REG 256
static struct {
    pthread_mutex_t lock;
    uintptr_t base[SIM_MAX_REG], end[SIM_MAX_REG];
    size_t count;
} reg = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, 0};
static atomic_uint registers_until_failure;
static atomic_int register_failure;

void gpumem__sim_fail_register(unsigned after, int cuda_error)
{
    atomic_store(&register_failure, cuda_error);
    atomic_store(&registers_until_failure, cuda_error ? after + 1 : 0);
}

size_t gpumem__sim_registered_count(void)
{
    pthread_mutex_lock(&reg.lock);
    size_t n = reg.count;
    pthread_mutex_unlock(&reg.lock);
    return n;
}

int gpumem__sim_registered(const void *p)
{
    int found = 0;
    pthread_mutex_lock(&reg.lock);
    for (size_t i = 0; i < reg.count && !found; i++)
        found = (uintptr_t)p >= reg.base[i] && (uintptr_t)p < reg.end[i];
    pthread_mutex_unlock(&reg.lock);
    return found;
}

static int sim_host_register(void *p, size_t bytes)
{
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (!p || !bytes)
        return cudaErrorInvalidValue;
    unsigned left = atomic_load(&registers_until_failure);
    while (left && !atomic_compare_exchange_weak(&registers_until_failure, &left, left - 1)) {
    }
    if (left == 1)
        return atomic_load(&register_failure);
    uintptr_t a = (uintptr_t)p, e = a + bytes;
    pthread_mutex_lock(&reg.lock);
    for (size_t i = 0; i < reg.count; i++)
        if (a < reg.end[i] && reg.base[i] < e) {
            pthread_mutex_unlock(&reg.lock);
            return cudaErrorHostMemoryAlreadyRegistered;
        }
    if (reg.count == SIM_MAX_REG) {
        pthread_mutex_unlock(&reg.lock);
        return cudaErrorMemoryAllocation;
    }
    reg.base[reg.count] = a;
    reg.end[reg.count++] = e;
    pthread_mutex_unlock(&reg.lock);
    return 0;
}

static int sim_host_unregister(void *p)
{
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    pthread_mutex_lock(&reg.lock);
    for (size_t i = 0; i < reg.count; i++)
        if (reg.base[i] == (uintptr_t)p) {
            reg.base[i] = reg.base[reg.count - 1];
            reg.end[i] = reg.end[--reg.count];
            pthread_mutex_unlock(&reg.lock);
            return 0;
        }
    pthread_mutex_unlock(&reg.lock);
    return cudaErrorHostMemoryNotRegistered;
}

/* Virtual memory management, simulated. An address range is reserved with mmap without
 * access (PROT_NONE, no swap reserved), away from the devices' ranges; physical memory is a
 * handle that counts against its device's capacity from creation to release; a mapping
 * makes the handle's bytes of the range readable and writable, and unmapping gives the pages
 * back to the system (madvise) and takes the access away, so that a stray access faults as
 * on a GPU. The contents do not follow a handle mapped at two addresses: nothing gpumem does
 * reads memory through a second mapping. Granularity 2 MiB, as on an H200. */
#define SIM_VMM_GRANULE ((size_t)2 << 20)
#define SIM_VMM_RANGES 256

typedef struct sim_handle {
    size_t bytes;
    int device;
} sim_handle;

static struct {
    pthread_mutex_t lock;
    atomic_uintptr_t base[SIM_VMM_RANGES], end[SIM_VMM_RANGES]; /* end 0: a free slot */
    int device[SIM_VMM_RANGES];
    uintptr_t raw[SIM_VMM_RANGES];
    size_t raw_bytes[SIM_VMM_RANGES];
} vmm = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, {0}, {0}, {0}};

/* The device of the reserved range holding a, or -1; lock-free (copies ask it). */
static int vmm_device_of(uintptr_t a)
{
    for (int i = 0; i < SIM_VMM_RANGES; i++) {
        uintptr_t end = atomic_load_explicit(&vmm.end[i], memory_order_acquire);
        if (end && a < end && a >= atomic_load_explicit(&vmm.base[i], memory_order_relaxed))
            return vmm.device[i];
    }
    return -1;
}

static int sim_vmm_granularity(int ordinal, size_t *granularity)
{
    *granularity = 0;
    if (ordinal < 0 || ordinal >= sim.ndev)
        return cudaErrorInvalidDevice;
    *granularity = SIM_VMM_GRANULE;
    return atomic_load(&poisoned);
}

static int sim_vmm_reserve(void **va, size_t bytes)
{
    *va = NULL;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (!bytes || bytes % SIM_VMM_GRANULE || bytes > SIZE_MAX - SIM_VMM_GRANULE)
        return cudaErrorInvalidValue;
    void *r = mmap(NULL, bytes + SIM_VMM_GRANULE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED)
        return cudaErrorMemoryAllocation;
    uintptr_t base = ((uintptr_t)r + SIM_VMM_GRANULE - 1) & ~(SIM_VMM_GRANULE - 1);
    pthread_mutex_lock(&vmm.lock);
    for (int i = 0; i < SIM_VMM_RANGES; i++) {
        if (atomic_load_explicit(&vmm.end[i], memory_order_relaxed))
            continue;
        vmm.raw[i] = (uintptr_t)r;
        vmm.raw_bytes[i] = bytes + SIM_VMM_GRANULE;
        vmm.device[i] = sim_current;
        atomic_store_explicit(&vmm.base[i], base, memory_order_relaxed);
        atomic_store_explicit(&vmm.end[i], base + bytes, memory_order_release);
        pthread_mutex_unlock(&vmm.lock);
        *va = (void *)base;
        return 0;
    }
    pthread_mutex_unlock(&vmm.lock);
    munmap(r, bytes + SIM_VMM_GRANULE);
    return cudaErrorMemoryAllocation;
}

static int sim_vmm_unreserve(void *va, size_t bytes)
{
    pthread_mutex_lock(&vmm.lock);
    for (int i = 0; i < SIM_VMM_RANGES; i++) {
        if (atomic_load_explicit(&vmm.base[i], memory_order_relaxed) != (uintptr_t)va ||
            atomic_load_explicit(&vmm.end[i], memory_order_relaxed) != (uintptr_t)va + bytes)
            continue;
        atomic_store_explicit(&vmm.end[i], 0, memory_order_release);
        munmap((void *)vmm.raw[i], vmm.raw_bytes[i]);
        pthread_mutex_unlock(&vmm.lock);
        return 0;
    }
    pthread_mutex_unlock(&vmm.lock);
    return cudaErrorInvalidValue;
}

static int sim_vmm_create(unsigned long long *handle, size_t bytes, int ordinal)
{
    *handle = 0;
    if (ordinal < 0 || ordinal >= sim.ndev || !bytes || bytes % SIM_VMM_GRANULE)
        return cudaErrorInvalidValue;
    sim_handle *h = malloc(sizeof *h);
    if (!h)
        return cudaErrorMemoryAllocation;
    pthread_mutex_lock(&sim.lock);
    int err = atomic_load(&poisoned);
    sim_dev *d = &sim.dev[ordinal];
    if (!err && bytes > d->capacity - d->used)
        err = cudaErrorMemoryAllocation;
    if (!err)
        d->used += bytes;
    pthread_mutex_unlock(&sim.lock);
    if (err) {
        free(h);
        return err;
    }
    h->bytes = bytes;
    h->device = ordinal;
    *handle = (unsigned long long)(uintptr_t)h;
    return 0;
}

static int sim_vmm_release(unsigned long long handle)
{
    sim_handle *h = (sim_handle *)(uintptr_t)handle;
    if (!h)
        return cudaErrorInvalidValue;
    pthread_mutex_lock(&sim.lock);
    sim.dev[h->device].used -= h->bytes;
    pthread_mutex_unlock(&sim.lock);
    free(h);
    return 0;
}

static int sim_vmm_map(void *va, size_t bytes, unsigned long long handle, int ordinal)
{
    sim_handle *h = (sim_handle *)(uintptr_t)handle;
    int err = atomic_load(&poisoned);
    if (err)
        return err;
    if (!h || h->bytes != bytes || ordinal != h->device || vmm_device_of((uintptr_t)va) < 0 ||
        (uintptr_t)va % SIM_VMM_GRANULE)
        return cudaErrorInvalidValue;
    return mprotect(va, bytes, PROT_READ | PROT_WRITE) == 0 ? 0 : cudaErrorInvalidValue;
}

static int sim_vmm_unmap(void *va, size_t bytes)
{
    if (vmm_device_of((uintptr_t)va) < 0 || (uintptr_t)va % SIM_VMM_GRANULE)
        return cudaErrorInvalidValue;
    madvise(va, bytes, MADV_DONTNEED);
    return mprotect(va, bytes, PROT_NONE) == 0 ? 0 : cudaErrorInvalidValue;
}

static int sim_event_query(void *event)
{
    return event ? atomic_load(&poisoned) : cudaErrorInvalidResourceHandle;
}

static int sim_stream_wait_event(cudaStream_t stream, void *event)
{
    (void)stream;
    return event ? atomic_load(&poisoned) : cudaErrorInvalidResourceHandle;
}

static int sim_device_sync(void)
{
    return atomic_load(&poisoned);
}

/* fork(): a child gets the simulated device as the parent left it, with no allocation half
 * made (fork.c). The two locks never nest. */
static void sim_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE) {
        pthread_mutex_lock(&sim.lock);
        pthread_mutex_lock(&reg.lock);
        pthread_mutex_lock(&vmm.lock);
    } else {
        pthread_mutex_unlock(&vmm.lock);
        pthread_mutex_unlock(&reg.lock);
        pthread_mutex_unlock(&sim.lock);
    }
}

const gpumem__backend gpumem__backend_sim = {
    "sim",
    sim_init,
    sim_device_count,
    sim_device_get,
    sim_current_device,
    sim_set_device,
    sim_device_push,
    sim_device_pop,
    sim_can_access_peer,
    sim_peer_access,
    sim_pointer_device,
    sim_mem_info,
    sim_malloc_device,
    sim_malloc_managed,
    sim_host_alloc,
    sim_malloc_async,
    sim_free,
    sim_free_host,
    sim_free_async,
    sim_host_device_ptr,
    sim_pointer_type,
    sim_prefetch,
    sim_advise,
    sim_mempool_create,
    sim_mempool_alloc,
    sim_mempool_trim,
    sim_mempool_destroy,
    sim_memcpy_async,
    sim_memcpy_peer_async,
    sim_stream_sync,
    sim_event_create,
    sim_event_record,
    sim_event_sync,
    sim_event_destroy,
    sim_host_register,
    sim_host_unregister,
    sim_at_fork,
    sim_vmm_granularity,
    sim_vmm_reserve,
    sim_vmm_unreserve,
    sim_vmm_create,
    sim_vmm_release,
    sim_vmm_map,
    sim_vmm_unmap,
    sim_event_query,
    sim_stream_wait_event,
    sim_device_sync,
};

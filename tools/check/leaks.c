/* gpumem check's leaks at exit: the live allocations taken out of the registry, the pointer
 * scan that tells definitely lost from still reachable (reach.c), and the groups by call,
 * memory kind, device, stack and leak kind, computed once and reported by engine.c. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "reach.h"
#include "settings.h"

/* The frame the program's main returned to (preload.c), 0 before: the exiting thread's stack
 * below it is dead. The frame that calls main, 0 if unknown: the main thread's stack at and
 * above it is the start code's. */
static atomic_uintptr_t main_frame, start_frame;

void check_main_entered(uintptr_t frame)
{
    atomic_store(&start_frame, frame);
}

void check_main_returned(uintptr_t frame)
{
    atomic_store(&main_frame, frame);
}

/* The leak scan's lists hold the allocations' addresses, so they live outside the heap (which
 * is scanned, freed parts too): in mappings of their own, moved whole when they grow. */
static void *grow_mapping(void *old, size_t old_bytes, size_t bytes)
{
    void *p = old ? mremap(old, old_bytes, bytes, MREMAP_MAYMOVE)
                  : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

typedef struct {
    gpumem__rec *r;
    size_t n, cap;
    int oom;
    int device; /* only this device's records (not registered memory), or -1 for all */
} rec_list;

static int collect_rec(const gpumem__rec *r, void *arg)
{
    rec_list *l = arg;
    if (l->device >= 0 && (r->device != l->device || r->kind == GPUMEM_KIND_REGISTERED))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        gpumem__rec *grown = grow_mapping(l->r, l->cap * sizeof *grown, cap * sizeof *grown);
        if (!grown)
            return l->oom = 1;
        l->r = grown;
        l->cap = cap;
    }
    l->r[l->n++] = *r;
    return 0;
}

typedef struct {
    check_span *s;
    size_t n, cap;
} span_list;

static void add_span(const void *p, size_t bytes, void *arg)
{
    span_list *l = arg;
    if (!p || !bytes)
        return;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        check_span *grown = grow_mapping(l->s, l->cap * sizeof *grown, cap * sizeof *grown);
        if (!grown)
            return;
        l->s = grown;
        l->cap = cap;
    }
    l->s[l->n++] = (check_span){(uintptr_t)p, (uintptr_t)p + bytes};
}

typedef struct {
    const gpumem__rec *r;
    int leak_kind;
    const check_reach_found *from;
} rec_kind;

static int same_call(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static int by_group_key(const void *x, const void *y)
{
    const rec_kind *a = x, *b = y;
    if (a->leak_kind != b->leak_kind)
        return a->leak_kind - b->leak_kind;
    if (a->r->stack != b->r->stack)
        return a->r->stack < b->r->stack ? -1 : 1;
    if (a->r->kind != b->r->kind)
        return a->r->kind - b->r->kind;
    if (a->r->device != b->r->device)
        return a->r->device - b->r->device;
    int c = strcmp(a->r->site.func ? a->r->site.func : "", b->r->site.func ? b->r->site.func : "");
    if (c)
        return c;
    return a->r->seq < b->r->seq ? -1 : a->r->seq > b->r->seq;
}

static int by_bytes_desc(const void *x, const void *y)
{
    const leak_group *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    return a->first_seq < b->first_seq ? -1 : a->first_seq > b->first_seq;
}

/* "reached: cudaMalloc 0x7f..: from 0x55..: 55..-55.. rw-p ... /path" (GPUMEM_CHECK_REACH_WHY).
 * Under out_lock (check_finish holds it). */
static void say_reached_from(const gpumem__rec *r, uintptr_t at)
{
    char line[512] = "?";
    FILE *maps = fopen("/proc/self/maps", "re");
    while (maps && fgets(line, sizeof line, maps)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx", &a, &b) == 2 && at >= a && at < b)
            break;
        snprintf(line, sizeof line, "?");
    }
    if (maps)
        fclose(maps);
    line[strcspn(line, "\n")] = '\0';
    check__say("reached: %s %p from %p in %s", r->site.func ? r->site.func : "?",
        (void *)check__key_shown(r->base), (void *)at, line);
}

/* Where a still reachable allocation's reference was found, in words: "the global d_A in
 * /path/prog", "a live frame of the stack of the main thread", "a live frame of the stack of
 * thread 1234", "a thread-local variable of /path/lib.so (thread 1234)". */
void check__describe_reach(const check_reach_found *f, char *buf, size_t n)
{
    const char *object = NULL, *name = NULL;
    char thread[48];
    if (f->tid == (long)getpid())
        snprintf(thread, sizeof thread, "the main thread");
    else
        snprintf(thread, sizeof thread, "thread %ld", f->tid);
    switch (f->where) {
    case CHECK_REACH_DATA:
        name = gpumem__symbol_of(f->at, &object);
        if (name)
            snprintf(buf, n, "the global %s in %s", name, object ? object : "?");
        else
            snprintf(buf, n, "the data of %s at %p (no symbol holds it)", object ? object : "?",
                     (void *)f->at);
        break;
    case CHECK_REACH_TLS:
        snprintf(buf, n, "a thread-local variable of %s (%s)",
                 f->object && *f->object ? f->object : "the program", thread);
        break;
    case CHECK_REACH_STACK:
        if (f->tid)
            snprintf(buf, n, "a live frame of the stack of %s", thread);
        else
            snprintf(buf, n, "the stack of a thread that was running (which one could not be "
                             "told)");
        break;
    default:
        snprintf(buf, n, "?");
    }
}

/* The live allocations, taken out of the registry into a mapping of their own. */
static int leak_records(rec_list *l, int *skipped)
{
    *skipped = gpumem__reg_foreach(collect_rec, l, 1);
    return l->oom ? -1 : 0;
}

/* The scan (reach.c): reached[i] and found[i] for each record. Everything of gpumem check's
 * that holds the allocations' addresses is left out. Returns the bytes read, or -1. */
static long long leak_scan(const rec_list *l, uintptr_t entry, check_span *targets,
                           unsigned char *reached, check_reach_found *found)
{
    span_list skip = {0};
    for (size_t i = 0; i < l->n; i++) {
        const gpumem__rec *r = &l->r[i];
        uintptr_t shown = check__key_shown(r->base);
        int handle = (r->base >> 62) >= 2; /* cuMemCreate handles and arrays: the value */
        targets[i] = (check_span){shown, shown + (handle || !r->bytes ? 1 : r->bytes)};
        /* CUDA's own host memory is not read: managed memory would migrate. */
        if (r->kind == GPUMEM_KIND_PINNED || r->kind == GPUMEM_KIND_HOST ||
            r->kind == GPUMEM_KIND_MANAGED)
            add_span((const void *)r->base, r->bytes, &skip);
    }
    gpumem__reg_storage(add_span, &skip);
    add_span(l->r, l->cap * sizeof *l->r, &skip);
    add_span(targets, l->n * sizeof *targets, &skip);
    add_span(found, l->n * sizeof *found, &skip);
    const void *kept;
    size_t kept_bytes;
    check__findings_storage(&kept, &kept_bytes);
    add_span(kept, kept_bytes, &skip);
    add_span(&skip, sizeof skip, &skip);
    add_span(skip.s, (skip.cap + 1) * sizeof *skip.s, &skip); /* +1: if this add grows it */
    add_span(skip.s, skip.cap * sizeof *skip.s, &skip);
    /* From the higher of the two: main's caller once main returned (the exit handlers run
     * below it), else the engine's entry. */
    uintptr_t from = atomic_load(&main_frame);
    if (from < entry)
        from = entry;
    if (!from)
        from = (uintptr_t)__builtin_frame_address(0);
    long long scanned = check_reach_scan(targets, l->n, reached, found, skip.s, skip.n, from,
                                         atomic_load(&start_frame));
    munmap(skip.s, skip.cap * sizeof *skip.s);
    /* GPUMEM_CHECK_REACH_WHY=1: where each reached allocation was reached from. */
    for (size_t i = 0; check_setting_get(CHECK_SET_REACH_WHY, NULL) && i < l->n; i++)
        if (reached[i])
            say_reached_from(&l->r[i], found[i].at);
    return scanned;
}

/* Groups the records by leak kind, stack, memory kind, device and call into g; returns how
 * many groups, largest first. */
static long group_records(rec_kind *rk, size_t n, leak_group *g)
{
    if (n)
        qsort(rk, n, sizeof *rk, by_group_key);
    long ng = 0;
    for (size_t i = 0; i < n; i++) {
        const gpumem__rec *r = rk[i].r;
        leak_group *last = ng ? &g[ng - 1] : NULL;
        if (!last || last->leak_kind != rk[i].leak_kind || last->stack != r->stack ||
            last->memory != r->kind || last->device != r->device ||
            !same_call(last->call, r->site.func)) {
            g[ng++] = (leak_group){.call = r->site.func, .memory = r->kind,
                                   .leak_kind = rk[i].leak_kind, .device = r->device,
                                   .stack = r->stack, .first_seq = r->seq};
            last = &g[ng - 1];
            if (rk[i].from)
                last->from = *rk[i].from;
        }
        last->count++;
        last->bytes += r->bytes;
    }
    if (ng)
        qsort(g, (size_t)ng, sizeof *g, by_bytes_desc);
    return ng;
}

/* The live allocations (of one device, but for registered host memory, when device >= 0),
 * grouped by call, memory kind, stack and leak kind, largest first. With scan, the process's
 * memory is scanned for pointers into them (reach.c); without (after a signal), or when the
 * scan cannot run, every one is definitely lost (*scanned is then -1). */
long check__leak_groups(int scan, int device, uintptr_t entry, leak_group **out, int *skipped,
                        long long *scanned)
{
    rec_list l = {.device = device};
    *out = NULL;
    *scanned = -1;
    int failed = leak_records(&l, skipped);
    size_t n = l.n;
    check_span *targets = n ? grow_mapping(NULL, 0, n * sizeof *targets) : NULL;
    check_reach_found *found = n ? grow_mapping(NULL, 0, n * sizeof *found) : NULL;
    unsigned char *reached = n ? calloc(n, 1) : NULL;
    rec_kind *rk = n ? malloc(n * sizeof *rk) : NULL;
    leak_group *g = n ? malloc(n * sizeof *g) : NULL;
    long ng = 0;
    if (n && !failed && targets && found && reached && rk && g) {
        if (scan)
            *scanned = leak_scan(&l, entry, targets, reached, found);
        for (size_t i = 0; i < n; i++) {
            int reach = *scanned >= 0 && reached[i];
            rk[i] = (rec_kind){&l.r[i], reach ? LEAK_REACHABLE : LEAK_DEFINITE,
                               reach ? &found[i] : NULL};
        }
        ng = group_records(rk, n, g);
        *out = g;
        g = NULL;
    }
    /* rk pointed into the records: wiped with the rest of what holds addresses. */
    if (rk)
        memset(rk, 0, n * sizeof *rk);
    if (l.r)
        munmap(l.r, l.cap * sizeof *l.r);
    if (targets)
        munmap(targets, n * sizeof *targets);
    if (found)
        munmap(found, n * sizeof *found);
    free(reached), free(rk), free(g);
    return ng;
}

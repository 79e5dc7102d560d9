/* A stand-in NVTX tool that records what an allocator tells it about heaps and regions, and
 * checks the order the NVTX memory API asks for: a region lies inside a live heap and overlaps
 * no live region, an unregistered region or heap is a live one, a heap goes only once its
 * regions are gone, and descriptors carry the type, usage and version compute-sanitizer
 * accepts. NVTX3 loads it when NVTX_INJECTION64_PATH names it: the core through
 * InitializeInjectionNvtx2 (for nvtxDomainCreateA), the memory extension through
 * InitializeInjectionNvtxExtension. Tests read the record with nvtx_stub_get (dlsym). */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nvtx_stub.h"

/* The entry points NVTX3 looks up in a tool. */
int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);
int NVTX_API InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info);

#define MAX_LIVE 4096

typedef struct {
    uintptr_t base;
    size_t bytes;
    int live;
} span;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static nvtx_stub_counts counts;
static span heaps[MAX_LIVE], regions[MAX_LIVE];
static int domain_token;

static void violation(const char *fmt, ...)
{
    if (counts.violations++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(counts.first_violation, sizeof counts.first_violation, fmt, ap);
        va_end(ap);
    }
}

static int overlaps(const span *s, uintptr_t base, size_t bytes)
{
    return s->live && base < s->base + s->bytes && s->base < base + bytes;
}

/* A free slot of table t, or -1. */
static int free_slot(const span *t)
{
    for (int i = 0; i < MAX_LIVE; i++)
        if (!t[i].live)
            return i;
    return -1;
}

static nvtxDomainHandle_t NVTX_API domain_create(const char *name)
{
    pthread_mutex_lock(&lock);
    counts.domains++;
    snprintf(counts.domain, sizeof counts.domain, "%s", name ? name : "");
    pthread_mutex_unlock(&lock);
    return (nvtxDomainHandle_t)&domain_token;
}

static int good_domain(nvtxDomainHandle_t d)
{
    if (d == (nvtxDomainHandle_t)&domain_token)
        return 1;
    violation("a call named domain %p, not the one nvtxDomainCreateA gave", (void *)d);
    return 0;
}

static nvtxMemHeapHandle_t NVTX_API heap_register(nvtxDomainHandle_t d, nvtxMemHeapDesc_t const *desc)
{
    pthread_mutex_lock(&lock);
    nvtxMemHeapHandle_t out = NULL;
    const nvtxMemVirtualRangeDesc_t *r = desc->typeSpecificDesc;
    if (!good_domain(d)) {
    } else if (desc->extCompatID != NVTX_EXT_COMPATID_MEM || desc->structSize != sizeof *desc ||
               desc->usage != NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR ||
               desc->type != NVTX_MEM_TYPE_VIRTUAL_ADDRESS || !r ||
               desc->typeSpecificDescSize != sizeof *r || !r->size) {
        violation("heap descriptor malformed (usage %u, type %u)", desc->usage, desc->type);
    } else {
        uintptr_t base = (uintptr_t)r->ptr;
        int i = free_slot(heaps);
        for (int k = 0; k < MAX_LIVE; k++)
            if (overlaps(&heaps[k], base, r->size))
                violation("heap %#lx+%zu overlaps a live heap", (unsigned long)base, r->size);
        if (i >= 0) {
            heaps[i] = (span){base, r->size, 1};
            out = (nvtxMemHeapHandle_t)&heaps[i];
            counts.heaps_registered++;
            counts.heaps_live++;
            counts.last_heap_base = base;
            counts.last_heap_bytes = r->size;
        }
    }
    pthread_mutex_unlock(&lock);
    return out;
}

/* The live heap of handle h, or NULL (a violation). Locked. */
static span *heap_of(nvtxMemHeapHandle_t h)
{
    span *s = (span *)h;
    if (s >= heaps && s < heaps + MAX_LIVE && s->live)
        return s;
    violation("heap handle %p is not a live heap", (void *)h);
    return NULL;
}

static void NVTX_API heap_unregister(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h)
{
    pthread_mutex_lock(&lock);
    span *s = good_domain(d) ? heap_of(h) : NULL;
    if (s) {
        for (int k = 0; k < MAX_LIVE; k++)
            if (overlaps(&regions[k], s->base, s->bytes))
                violation("heap %#lx unregistered with region %#lx still live",
                          (unsigned long)s->base, (unsigned long)regions[k].base);
        s->live = 0;
        counts.heaps_unregistered++;
        counts.heaps_live--;
    }
    pthread_mutex_unlock(&lock);
}

static void NVTX_API heap_reset(nvtxDomainHandle_t d, nvtxMemHeapHandle_t h)
{
    pthread_mutex_lock(&lock);
    span *s = good_domain(d) ? heap_of(h) : NULL;
    for (int k = 0; s && k < MAX_LIVE; k++) {
        if (overlaps(&regions[k], s->base, s->bytes)) {
            regions[k].live = 0;
            counts.regions_unregistered++;
            counts.regions_live--;
        }
    }
    pthread_mutex_unlock(&lock);
}

static void region_add(span *heap, uintptr_t base, size_t bytes)
{
    if (base < heap->base || bytes > heap->bytes || base - heap->base > heap->bytes - bytes) {
        violation("region %#lx+%zu outside its heap %#lx+%zu", (unsigned long)base, bytes,
                  (unsigned long)heap->base, heap->bytes);
        return;
    }
    for (int k = 0; k < MAX_LIVE; k++)
        if (overlaps(&regions[k], base, bytes))
            violation("region %#lx+%zu overlaps live region %#lx", (unsigned long)base, bytes,
                      (unsigned long)regions[k].base);
    int i = free_slot(regions);
    if (i < 0)
        return;
    regions[i] = (span){base, bytes, 1};
    counts.regions_registered++;
    counts.regions_live++;
    counts.last_region_base = base;
    counts.last_region_bytes = bytes;
}

static void NVTX_API regions_register(nvtxDomainHandle_t d, nvtxMemRegionsRegisterBatch_t const *b)
{
    pthread_mutex_lock(&lock);
    span *heap = good_domain(d) ? heap_of(b->heap) : NULL;
    if (heap && (b->extCompatID != NVTX_EXT_COMPATID_MEM || b->structSize != sizeof *b ||
                 b->regionType != NVTX_MEM_TYPE_VIRTUAL_ADDRESS ||
                 b->regionDescElementSize != sizeof(nvtxMemVirtualRangeDesc_t)))
        violation("region batch malformed (type %u)", b->regionType);
    else if (heap) {
        const nvtxMemVirtualRangeDesc_t *r = b->regionDescElements;
        for (size_t i = 0; i < b->regionCount; i++)
            region_add(heap, (uintptr_t)r[i].ptr, r[i].size);
    }
    pthread_mutex_unlock(&lock);
}

static void NVTX_API regions_unregister(nvtxDomainHandle_t d, nvtxMemRegionsUnregisterBatch_t const *b)
{
    pthread_mutex_lock(&lock);
    if (good_domain(d) && (b->refType != NVTX_MEM_REGION_REF_TYPE_POINTER ||
                           b->refElementSize != sizeof(nvtxMemRegionRef_t)))
        violation("region reference batch malformed (type %u)", b->refType);
    for (size_t i = 0; i < b->refCount && b->refType == NVTX_MEM_REGION_REF_TYPE_POINTER; i++) {
        uintptr_t p = (uintptr_t)b->refElements[i].pointer;
        int found = 0;
        for (int k = 0; k < MAX_LIVE && !found; k++) {
            if (regions[k].live && regions[k].base == p) {
                regions[k].live = 0;
                found = 1;
            }
        }
        if (!found) {
            violation("region %#lx unregistered but not live", (unsigned long)p);
            continue;
        }
        counts.regions_unregistered++;
        counts.regions_live--;
    }
    pthread_mutex_unlock(&lock);
}

__attribute__((visibility("default"))) void nvtx_stub_get(nvtx_stub_counts *out)
{
    pthread_mutex_lock(&lock);
    *out = counts;
    pthread_mutex_unlock(&lock);
}

/* The core: only nvtxDomainCreateA is attached. */
__attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    const NvtxExportTableCallbacks *cb = get_table(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) ||
        size <= NVTX_CBID_CORE2_DomainCreateA)
        return 0;
    *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)domain_create;
    return 1;
}

__attribute__((visibility("default"))) int NVTX_API
InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t *info)
{
    if (info->moduleId != NVTX_EXT_MODULEID_MEM || info->segmentsCount < 1)
        return 1;
    intptr_t *slot = info->segments[0].functionSlots;
    slot[NVTX3EXT_CBID_nvtxMemHeapRegister] = (intptr_t)heap_register;
    slot[NVTX3EXT_CBID_nvtxMemHeapUnregister] = (intptr_t)heap_unregister;
    slot[NVTX3EXT_CBID_nvtxMemHeapReset] = (intptr_t)heap_reset;
    slot[NVTX3EXT_CBID_nvtxMemRegionsRegister] = (intptr_t)regions_register;
    slot[NVTX3EXT_CBID_nvtxMemRegionsUnregister] = (intptr_t)regions_unregister;
    return 1;
}

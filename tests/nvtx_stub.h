/* What the NVTX stub tool (nvtx_stub.c) saw: a test loads the stub through
 * NVTX_INJECTION64_PATH and reads these through nvtx_stub_get(). */
#ifndef GPUMEM_TEST_NVTX_STUB_H
#define GPUMEM_TEST_NVTX_STUB_H

#include <stddef.h>
#include <stdint.h>

typedef struct nvtx_stub_counts {
    int domains;                 /* nvtxDomainCreateA calls */
    char domain[32];             /* the name of the last domain made */
    int heaps_registered, heaps_unregistered, heaps_live;
    int regions_registered, regions_unregistered, regions_live;
    uintptr_t last_heap_base;    /* the last heap registered */
    size_t last_heap_bytes;
    uintptr_t last_region_base;  /* the last region registered */
    size_t last_region_bytes;
    int violations;              /* calls out of order or malformed */
    char first_violation[256];
} nvtx_stub_counts;

/* Copies the record so far (the stub exports it; tests find it with dlsym). */
void nvtx_stub_get(nvtx_stub_counts *out);
typedef void (*nvtx_stub_get_fn)(nvtx_stub_counts *out);

#endif

/* gpumem check's CUDA front end: CUPTI callbacks on the memory API, turned into engine events.
 *
 * libcuda loads this library at its initialization when CUDA_INJECTION64_PATH names it, and
 * calls InitializeInjection, which subscribes to the allocation and release calls of the
 * runtime and driver APIs. That works whether the program carries the runtime statically
 * (nvcc's default) or links libcudart.so. A runtime call makes driver calls of its own: those
 * are seen inside the runtime call on the same thread and left out, so that each allocation is
 * counted once, under the name the program called. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backtrace.h"
#include "engine.h"
#include "front.h"
#include "graphs.h"
#include "internal.h"

/* ---- the driver calls gpumem check makes itself ---- */

static struct {
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_free_host)(void *);
    CUresult (*host_unregister)(void *);
    CUresult (*stream_capture_info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
} drv;

static void load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return;
    *(void **)(&drv.ctx_get_device) = dlsym(h, "cuCtxGetDevice");
    *(void **)(&drv.ctx_push) = dlsym(h, "cuCtxPushCurrent_v2");
    *(void **)(&drv.ctx_pop) = dlsym(h, "cuCtxPopCurrent_v2");
    *(void **)(&drv.mem_free) = dlsym(h, "cuMemFree_v2");
    *(void **)(&drv.mem_free_host) = dlsym(h, "cuMemFreeHost");
    *(void **)(&drv.host_unregister) = dlsym(h, "cuMemHostUnregister");
    /* The first form (status and id), which every driver since CUDA 10.1 exports. */
    *(void **)(&drv.stream_capture_info) = dlsym(h, "cuStreamGetCaptureInfo");
}

static int current_device(void)
{
    CUdevice d = 0;
    if (!drv.ctx_get_device || drv.ctx_get_device(&d) != CUDA_SUCCESS)
        return 0;
    return (int)d;
}

void check_front_release(int kind, void *p, void (*pass_free)(void *))
{
    check_tls_busy++; /* these calls are gpumem check's, not the program's */
    /* The release the program should have made, in place of its free(), which returns
     * nothing: there is no one to give a failure to (the mismatch is reported already). */
    if (kind == GPUMEM_KIND_PINNED || kind == GPUMEM_KIND_HOST) {
        if (drv.mem_free_host)
            (void)drv.mem_free_host(p);
    } else if (kind == GPUMEM_KIND_MANAGED) {
        if (drv.mem_free)
            (void)drv.mem_free((CUdeviceptr)(uintptr_t)p);
    } else if (kind == GPUMEM_KIND_REGISTERED) {
        if (drv.host_unregister)
            (void)drv.host_unregister(p);
        pass_free(p);
    }
    check_tls_busy--;
}

/* ---- events ---- */

#define BIT(k) (1u << GPUMEM_KIND_##k)
/* cudaFree and cudaFreeAsync also release a graph's allocation once the graph ran. */
static const unsigned free_mask = BIT(DEVICE) | BIT(DEVICE_ASYNC) | BIT(MANAGED) | BIT(GRAPH);
static const unsigned free_host_mask = BIT(PINNED) | BIT(HOST);
static const unsigned free_async_mask = BIT(DEVICE) | BIT(DEVICE_ASYNC) | BIT(GRAPH);

/* ---- sizes of CUDA arrays ---- */

static size_t extent_bytes(size_t elem, size_t w, size_t h, size_t d)
{
    return elem * (w ? w : 1) * (h ? h : 1) * (d ? d : 1);
}

/* Every level of a mipmapped array: each half the one before in each dimension, at least 1. */
static size_t mipmap_bytes(size_t elem, size_t w, size_t h, size_t d, unsigned levels)
{
    size_t total = 0;
    for (unsigned l = 0; l < (levels ? levels : 1) && l < 64; l++) {
        total += extent_bytes(elem, w, h, d);
        w = w > 1 ? w / 2 : w;
        h = h > 1 ? h / 2 : h;
        d = d > 1 ? d / 2 : d;
    }
    return total;
}

static size_t channel_bytes(const struct cudaChannelFormatDesc *desc)
{
    if (!desc)
        return 1;
    int bits = (desc->x > 0 ? desc->x : 0) + (desc->y > 0 ? desc->y : 0) +
               (desc->z > 0 ? desc->z : 0) + (desc->w > 0 ? desc->w : 0);
    return bits >= 8 ? (size_t)bits / 8 : 1;
}

/* Bytes of one element of a driver array: the format's size times its channels. */
static size_t format_bytes(CUarray_format format, unsigned channels)
{
    size_t size;
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        size = 2;
        break;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        size = 4;
        break;
    default:
        size = 1;
        break;
    }
    return size * (channels ? channels : 1);
}

/* Per thread: how deep inside watched runtime calls, and the releases in flight. */
static _Thread_local int rt_depth __attribute__((tls_model("initial-exec")));
typedef struct {
    const char *call;
    uintptr_t p;
    uint32_t stack;
    int state;        /* check_release_begin's answer, or RELEASE_CAPTURED */
    uint64_t capture; /* RELEASE_CAPTURED: the capture the free node goes to */
} pending_release;
/* A release on a capturing stream: it adds a free node to the graph being captured. */
enum { RELEASE_CAPTURED = 100 };
static _Thread_local pending_release pending[8] __attribute__((tls_model("initial-exec")));
static _Thread_local int npending __attribute__((tls_model("initial-exec")));
static _Thread_local int reset_device __attribute__((tls_model("initial-exec")));

/* The call's status: a cudaError_t or a CUresult, 0 for success in both. */
static int return_code(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    /* NULL for calls returning void: never dereference it blindly. */
    if (!cd->functionReturnValue)
        return 0;
    return dom == CUPTI_CB_DOMAIN_RUNTIME_API ? (int)*(const cudaError_t *)cd->functionReturnValue
                                              : (int)*(const CUresult *)cd->functionReturnValue;
}

static int returned_ok(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    return return_code(cd, dom) == 0;
}

static void alloc_exit(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom, const char *call,
                       int kind, uintptr_t base, size_t bytes)
{
    int rc = return_code(cd, dom);
    /* The driver's CUresult and the runtime's cudaError_t share the values that matter here
     * (out of memory is 2 in both); the report names them with the runtime's names. */
    check_alloc(call, kind, rc ? 0 : base, bytes, rc ? 0 : current_device(), rc,
                gpumem__stack_capture(0));
}

static void release_enter(const char *call, unsigned mask, uintptr_t p)
{
    uint32_t stack = p ? gpumem__stack_capture(0) : 0;
    int state = check_release_begin(call, mask, p, stack);
    if (npending < 8)
        pending[npending] = (pending_release){call, p, stack, state, 0};
    npending++;
}

static void release_exit(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    if (npending <= 0)
        return;
    npending--;
    if (npending >= 8)
        return;
    const pending_release *r = &pending[npending];
    if (r->state == CHECK_GO)
        check_release_end(r->p, returned_ok(cd, dom));
    else if (r->state == CHECK_UNKNOWN)
        check_release_unknown_end(r->call, r->p, r->stack, returned_ok(cd, dom));
    else if (r->state == RELEASE_CAPTURED && returned_ok(cd, dom))
        check_graph_free_node(check_capture_key(r->capture), r->call, r->p, r->stack);
}

/* ---- graph memory and stream capture (the model is graphs.c's) ---- */

/* Whether s is capturing, and into which capture sequence: cudaMallocAsync and cudaFreeAsync
 * on it add nodes to the graph being captured instead of allocating or releasing now.
 * per_thread: a call of the per-thread default stream API (_ptsz), where stream 0 is that
 * stream. */
static int capturing(CUstream s, int per_thread, uint64_t *capture)
{
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    if (!drv.stream_capture_info)
        return 0;
    if (!s && per_thread)
        s = CU_STREAM_PER_THREAD;
    check_tls_busy++;
    CUresult rc = drv.stream_capture_info(s, &status, &id);
    check_tls_busy--;
    if (rc != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return 0;
    *capture = id;
    return 1;
}

/* cudaMallocAsync and the like returned: on a capturing stream, an allocation node of the graph
 * being captured (allocated when the graph is launched); otherwise memory live now. */
static void alloc_async_exit(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom,
                             const char *call, uintptr_t base, size_t bytes, CUstream s,
                             int per_thread)
{
    uint64_t capture;
    if (returned_ok(cd, dom) && capturing(s, per_thread, &capture))
        check_graph_alloc_node(check_capture_key(capture), call, base, bytes, current_device(),
                               gpumem__stack_capture(0));
    else
        alloc_exit(cd, dom, call, GPUMEM_KIND_DEVICE_ASYNC, base, bytes);
}

/* cudaFreeAsync and cuMemFreeAsync: on a capturing stream, a free node of the graph being
 * captured (release_exit records it when the call succeeded); otherwise a release now. */
static void free_async_enter(const char *call, uintptr_t p, CUstream s, int per_thread)
{
    uint64_t capture;
    if (!p || !capturing(s, per_thread, &capture)) {
        release_enter(call, free_async_mask, p);
        return;
    }
    if (npending < 8)
        pending[npending] = (pending_release){call, p, gpumem__stack_capture(0),
                                              RELEASE_CAPTURED, capture};
    npending++;
}

/* An allocation node was added; the pool's location says on which device it allocates. */
static void alloc_node_added(const char *call, uintptr_t graph, uintptr_t p, size_t bytes,
                             int location_type, int location_id)
{
    int device = location_type == CU_MEM_LOCATION_TYPE_DEVICE ? location_id : current_device();
    check_graph_alloc_node(graph, call, p, bytes, device, gpumem__stack_capture(0));
}

#if CUDA_VERSION >= 12030
/* The runtime's node parameters are the driver's, field for field. */
_Static_assert(sizeof(struct cudaGraphNodeParams) == sizeof(CUgraphNodeParams) &&
                   offsetof(struct cudaGraphNodeParams, alloc) ==
                       offsetof(CUgraphNodeParams, alloc) &&
                   offsetof(struct cudaGraphNodeParams, free) ==
                       offsetof(CUgraphNodeParams, free),
               "cudaGraphNodeParams and CUgraphNodeParams differ");

/* cudaGraphAddNode / cuGraphAddNode returned a node: memory nodes, and child graphs moved into
 * their parent (the only way a graph with memory nodes can be a child). */
static void node_added(const char *call, uintptr_t graph, const CUgraphNodeParams *np)
{
    if (!np)
        return;
    if (np->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
        alloc_node_added(call, graph, (uintptr_t)np->alloc.dptr, np->alloc.bytesize,
                         np->alloc.poolProps.location.type, np->alloc.poolProps.location.id);
    else if (np->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
        check_graph_free_node(graph, call, (uintptr_t)np->free.dptr, gpumem__stack_capture(0));
#if CUDA_VERSION >= 13000
    else if (np->type == CU_GRAPH_NODE_TYPE_GRAPH &&
             np->graph.ownership == CU_GRAPH_CHILD_GRAPH_OWNERSHIP_MOVE)
        check_graph_merge(graph, (uintptr_t)np->graph.graph);
#endif
}
#endif

/* Per thread: the capture a cudaStreamEndCapture in flight ends. */
static _Thread_local uint64_t ending_capture __attribute__((tls_model("initial-exec")));
static _Thread_local int ending __attribute__((tls_model("initial-exec")));

/* cudaStreamEndCapture and cuStreamEndCapture: the nodes of the capture become graph's. */
static void end_capture(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom, int enter,
                        CUstream s, int per_thread, CUgraph *graph)
{
    if (enter) {
        ending = capturing(s, per_thread, &ending_capture);
    } else if (ending) {
        ending = 0;
        if (returned_ok(cd, dom) && graph && *graph)
            check_graph_merge((uintptr_t)*graph, check_capture_key(ending_capture));
        else
            check_graph_destroyed(check_capture_key(ending_capture));
    }
}

#define P(type) ((const type##_params *)cd->functionParams)
#define RT(name) CUPTI_RUNTIME_TRACE_CBID_##name
#define DRV(name) CUPTI_DRIVER_TRACE_CBID_##name

/* The runtime's allocation calls: what they returned becomes live.
 * Returns 0 for a call of another group. */
static int runtime_alloc_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_RUNTIME_API;
    switch (id) {
    case RT(cudaMalloc_v3020):
        if (!enter)
            alloc_exit(cd, dom, "cudaMalloc", GPUMEM_KIND_DEVICE, (uintptr_t)*P(cudaMalloc_v3020)->devPtr,
                       P(cudaMalloc_v3020)->size);
        break;
    case RT(cudaMallocPitch_v3020):
        if (!enter)
            alloc_exit(cd, dom, "cudaMallocPitch", GPUMEM_KIND_DEVICE, (uintptr_t)*P(cudaMallocPitch_v3020)->devPtr,
                       *P(cudaMallocPitch_v3020)->pitch * P(cudaMallocPitch_v3020)->height);
        break;
    case RT(cudaMalloc3D_v3020):
        if (!enter) {
            const struct cudaPitchedPtr *pp = P(cudaMalloc3D_v3020)->pitchedDevPtr;
            struct cudaExtent e = P(cudaMalloc3D_v3020)->extent;
            alloc_exit(cd, dom, "cudaMalloc3D", GPUMEM_KIND_DEVICE, (uintptr_t)pp->ptr,
                       pp->pitch * e.height * (e.depth ? e.depth : 1));
        }
        break;
    case RT(cudaMallocHost_v3020):
        if (!enter)
            alloc_exit(cd, dom, "cudaMallocHost", GPUMEM_KIND_PINNED, (uintptr_t)*P(cudaMallocHost_v3020)->ptr,
                       P(cudaMallocHost_v3020)->size);
        break;
    case RT(cudaHostAlloc_v3020):
        /* The runtime header's C++ cudaMallocHost(&p, n) is cudaHostAlloc(&p, n, 0), and
         * cudaHostAlloc without flags is cudaMallocHost: name it as the program wrote it. */
        if (!enter && P(cudaHostAlloc_v3020)->flags == 0)
            alloc_exit(cd, dom, "cudaMallocHost", GPUMEM_KIND_PINNED,
                       (uintptr_t)*P(cudaHostAlloc_v3020)->pHost, P(cudaHostAlloc_v3020)->size);
        else if (!enter)
            alloc_exit(cd, dom, "cudaHostAlloc", GPUMEM_KIND_HOST,
                       (uintptr_t)*P(cudaHostAlloc_v3020)->pHost, P(cudaHostAlloc_v3020)->size);
        break;
    case RT(cudaMallocManaged_v6000):
        if (!enter)
            alloc_exit(cd, dom, "cudaMallocManaged", GPUMEM_KIND_MANAGED, (uintptr_t)*P(cudaMallocManaged_v6000)->devPtr,
                       P(cudaMallocManaged_v6000)->size);
        break;
    case RT(cudaMallocAsync_v11020):
    case RT(cudaMallocAsync_ptsz_v11020):
        if (!enter)
            alloc_async_exit(cd, dom, "cudaMallocAsync",
                             (uintptr_t)*P(cudaMallocAsync_v11020)->devPtr,
                             P(cudaMallocAsync_v11020)->size, P(cudaMallocAsync_v11020)->hStream,
                             id == RT(cudaMallocAsync_ptsz_v11020));
        break;
    case RT(cudaMallocFromPoolAsync_v11020):
    case RT(cudaMallocFromPoolAsync_ptsz_v11020):
        if (!enter)
            alloc_async_exit(cd, dom, "cudaMallocFromPoolAsync",
                             (uintptr_t)*P(cudaMallocFromPoolAsync_v11020)->ptr,
                             P(cudaMallocFromPoolAsync_v11020)->size,
                             P(cudaMallocFromPoolAsync_v11020)->stream,
                             id == RT(cudaMallocFromPoolAsync_ptsz_v11020));
        break;
    case RT(cudaHostRegister_v4000):
        if (!enter)
            alloc_exit(cd, dom, "cudaHostRegister", GPUMEM_KIND_REGISTERED, (uintptr_t)P(cudaHostRegister_v4000)->ptr,
                       P(cudaHostRegister_v4000)->size);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The runtime's CUDA arrays, kept by their handles: made and destroyed.
 * Returns 0 for a call of another group. */
static int runtime_array_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_RUNTIME_API;
    switch (id) {
    case RT(cudaMallocArray_v3020):
        if (!enter) {
            const cudaMallocArray_v3020_params *a = P(cudaMallocArray_v3020);
            alloc_exit(cd, dom, "cudaMallocArray", GPUMEM_KIND_ARRAY,
                       check_array_key((uintptr_t)*a->array),
                       extent_bytes(channel_bytes(a->desc), a->width, a->height, 1));
        }
        break;
    case RT(cudaMalloc3DArray_v3020):
        if (!enter) {
            const cudaMalloc3DArray_v3020_params *a = P(cudaMalloc3DArray_v3020);
            alloc_exit(cd, dom, "cudaMalloc3DArray", GPUMEM_KIND_ARRAY,
                       check_array_key((uintptr_t)*a->array),
                       extent_bytes(channel_bytes(a->desc), a->extent.width, a->extent.height,
                                    a->extent.depth));
        }
        break;
    case RT(cudaMallocMipmappedArray_v5000):
        if (!enter) {
            const cudaMallocMipmappedArray_v5000_params *a = P(cudaMallocMipmappedArray_v5000);
            alloc_exit(cd, dom, "cudaMallocMipmappedArray", GPUMEM_KIND_MIPMAPPED,
                       check_array_key((uintptr_t)*a->mipmappedArray),
                       mipmap_bytes(channel_bytes(a->desc), a->extent.width, a->extent.height,
                                    a->extent.depth, a->numLevels));
        }
        break;
    case RT(cudaFreeArray_v3020):
        if (enter)
            release_enter("cudaFreeArray", BIT(ARRAY),
                          check_array_key((uintptr_t)P(cudaFreeArray_v3020)->array));
        else
            release_exit(cd, dom);
        break;
    case RT(cudaFreeMipmappedArray_v5000):
        if (enter)
            release_enter("cudaFreeMipmappedArray", BIT(MIPMAPPED),
                          check_array_key((uintptr_t)P(cudaFreeMipmappedArray_v5000)->mipmappedArray));
        else
            release_exit(cd, dom);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The runtime's release calls. Returns 0 for a call of another group. */
static int runtime_release_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_RUNTIME_API;
    switch (id) {
    case RT(cudaFree_v3020):
        if (enter)
            release_enter("cudaFree", free_mask, (uintptr_t)P(cudaFree_v3020)->devPtr);
        else
            release_exit(cd, dom);
        break;
    case RT(cudaFreeHost_v3020):
        if (enter)
            release_enter("cudaFreeHost", free_host_mask, (uintptr_t)P(cudaFreeHost_v3020)->ptr);
        else
            release_exit(cd, dom);
        break;
    case RT(cudaFreeAsync_v11020):
    case RT(cudaFreeAsync_ptsz_v11020):
        if (enter)
            free_async_enter("cudaFreeAsync", (uintptr_t)P(cudaFreeAsync_v11020)->devPtr,
                             P(cudaFreeAsync_v11020)->hStream, id == RT(cudaFreeAsync_ptsz_v11020));
        else
            release_exit(cd, dom);
        break;
    case RT(cudaHostUnregister_v4000):
        if (enter)
            release_enter("cudaHostUnregister", BIT(REGISTERED), (uintptr_t)P(cudaHostUnregister_v4000)->ptr);
        else
            release_exit(cd, dom);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The runtime's calls that release all of a device's memory at
 * once. Returns 0 for a call of another group. */
static int runtime_reset_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_RUNTIME_API;
    switch (id) {
    case RT(cudaDeviceReset_v3020):
        if (enter)
            reset_device = current_device();
        else if (returned_ok(cd, dom))
            check_device_reset(reset_device);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The runtime's graph memory: memory nodes, captures, instantiation, launches.
 * Returns 0 for a call of another group. */
static int runtime_graph_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_RUNTIME_API;
    switch (id) {
    case RT(cudaGraphAddMemAllocNode_v11040):
        if (!enter && returned_ok(cd, dom)) {
            const struct cudaMemAllocNodeParams *np = P(cudaGraphAddMemAllocNode_v11040)->nodeParams;
            alloc_node_added("cudaGraphAddMemAllocNode",
                             (uintptr_t)P(cudaGraphAddMemAllocNode_v11040)->graph,
                             (uintptr_t)np->dptr, np->bytesize, np->poolProps.location.type,
                             np->poolProps.location.id);
        }
        break;
    case RT(cudaGraphAddMemFreeNode_v11040):
        if (!enter && returned_ok(cd, dom))
            check_graph_free_node((uintptr_t)P(cudaGraphAddMemFreeNode_v11040)->graph,
                                  "cudaGraphAddMemFreeNode",
                                  (uintptr_t)P(cudaGraphAddMemFreeNode_v11040)->dptr,
                                  gpumem__stack_capture(0));
        break;
#if CUDA_VERSION >= 12030
    case RT(cudaGraphAddNode_v12030):
        if (!enter && returned_ok(cd, dom))
            node_added("cudaGraphAddNode", (uintptr_t)P(cudaGraphAddNode_v12030)->graph,
                       (const CUgraphNodeParams *)(const void *)
                           P(cudaGraphAddNode_v12030)->nodeParams);
        break;
#endif
    case RT(cudaStreamEndCapture_v10000):
    case RT(cudaStreamEndCapture_ptsz_v10000):
        end_capture(cd, dom, enter, P(cudaStreamEndCapture_v10000)->stream,
                    id == RT(cudaStreamEndCapture_ptsz_v10000),
                    P(cudaStreamEndCapture_v10000)->pGraph);
        break;
    case RT(cudaGraphInstantiate_v10000):
        /* CUDA 11's (pGraphExec, graph, error node, log, log size): the same first fields,
         * no flags. */
        if (!enter && returned_ok(cd, dom))
            check_graph_instantiated((uintptr_t)P(cudaGraphInstantiate_v12000)->graph,
                                     (uintptr_t)*P(cudaGraphInstantiate_v12000)->pGraphExec, 0);
        break;
    case RT(cudaGraphInstantiate_v12000):
    case RT(cudaGraphInstantiateWithFlags_v11040):
        if (!enter && returned_ok(cd, dom))
            check_graph_instantiated((uintptr_t)P(cudaGraphInstantiate_v12000)->graph,
                                     (uintptr_t)*P(cudaGraphInstantiate_v12000)->pGraphExec,
                                     P(cudaGraphInstantiate_v12000)->flags);
        break;
    case RT(cudaGraphInstantiateWithParams_v12000):
    case RT(cudaGraphInstantiateWithParams_ptsz_v12000): {
        const cudaGraphInstantiateWithParams_v12000_params *a =
            P(cudaGraphInstantiateWithParams_v12000);
        if (!enter && returned_ok(cd, dom))
            check_graph_instantiated((uintptr_t)a->graph, (uintptr_t)*a->pGraphExec,
                                     a->instantiateParams ? a->instantiateParams->flags : 0);
        break;
    }
    case RT(cudaGraphLaunch_v10000):
    case RT(cudaGraphLaunch_ptsz_v10000):
        if (!enter && returned_ok(cd, dom))
            check_graph_launched((uintptr_t)P(cudaGraphLaunch_v10000)->graphExec);
        break;
    case RT(cudaGraphExecDestroy_v10000):
        if (enter)
            check_graph_exec_destroyed((uintptr_t)P(cudaGraphExecDestroy_v10000)->graphExec);
        break;
    case RT(cudaGraphDestroy_v10000):
        if (enter)
            check_graph_destroyed((uintptr_t)P(cudaGraphDestroy_v10000)->graph);
        break;
    default:
        return 0;
    }
    return 1;
}

/* One callback of the runtime API, handed to the group of calls it belongs to. */
static void runtime_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    (void)(runtime_alloc_call(id, cd, enter) ||
           runtime_array_call(id, cd, enter) ||
           runtime_release_call(id, cd, enter) ||
           runtime_reset_call(id, cd, enter) ||
           runtime_graph_call(id, cd, enter));
}

/* The driver's allocation calls: what they returned becomes live.
 * Returns 0 for a call of another group. */
static int driver_alloc_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_DRIVER_API;
    switch (id) {
    case DRV(cuMemAlloc_v2):
        if (!enter)
            alloc_exit(cd, dom, "cuMemAlloc", GPUMEM_KIND_DEVICE, (uintptr_t)*P(cuMemAlloc_v2)->dptr,
                       P(cuMemAlloc_v2)->bytesize);
        break;
    case DRV(cuMemAllocPitch_v2):
        if (!enter)
            alloc_exit(cd, dom, "cuMemAllocPitch", GPUMEM_KIND_DEVICE, (uintptr_t)*P(cuMemAllocPitch_v2)->dptr,
                       *P(cuMemAllocPitch_v2)->pPitch * P(cuMemAllocPitch_v2)->Height);
        break;
    case DRV(cuMemAllocHost_v2):
        if (!enter)
            alloc_exit(cd, dom, "cuMemAllocHost", GPUMEM_KIND_PINNED, (uintptr_t)*P(cuMemAllocHost_v2)->pp,
                       P(cuMemAllocHost_v2)->bytesize);
        break;
    case DRV(cuMemHostAlloc):
        if (!enter)
            alloc_exit(cd, dom, "cuMemHostAlloc", GPUMEM_KIND_HOST, (uintptr_t)*P(cuMemHostAlloc)->pp,
                       P(cuMemHostAlloc)->bytesize);
        break;
    case DRV(cuMemAllocManaged):
        if (!enter)
            alloc_exit(cd, dom, "cuMemAllocManaged", GPUMEM_KIND_MANAGED, (uintptr_t)*P(cuMemAllocManaged)->dptr,
                       P(cuMemAllocManaged)->bytesize);
        break;
    case DRV(cuMemAllocAsync):
    case DRV(cuMemAllocAsync_ptsz):
        if (!enter)
            alloc_async_exit(cd, dom, "cuMemAllocAsync", (uintptr_t)*P(cuMemAllocAsync)->dptr,
                             P(cuMemAllocAsync)->bytesize, P(cuMemAllocAsync)->hStream,
                             id == DRV(cuMemAllocAsync_ptsz));
        break;
    case DRV(cuMemAllocFromPoolAsync):
    case DRV(cuMemAllocFromPoolAsync_ptsz):
        if (!enter)
            alloc_async_exit(cd, dom, "cuMemAllocFromPoolAsync",
                             (uintptr_t)*P(cuMemAllocFromPoolAsync)->dptr,
                             P(cuMemAllocFromPoolAsync)->bytesize,
                             P(cuMemAllocFromPoolAsync)->hStream,
                             id == DRV(cuMemAllocFromPoolAsync_ptsz));
        break;
    case DRV(cuMemHostRegister_v2):
        if (!enter)
            alloc_exit(cd, dom, "cuMemHostRegister", GPUMEM_KIND_REGISTERED, (uintptr_t)P(cuMemHostRegister_v2)->p,
                       P(cuMemHostRegister_v2)->bytesize);
        break;
    case DRV(cuMemCreate):
        if (!enter)
            alloc_exit(cd, dom, "cuMemCreate", GPUMEM_KIND_VIRTUAL, check_handle_key(*P(cuMemCreate)->handle),
                       P(cuMemCreate)->size);
        break;
    case DRV(cuMemMap):
        if (!enter)
            alloc_exit(cd, dom, "cuMemMap", GPUMEM_KIND_VIRTUAL, (uintptr_t)P(cuMemMap)->ptr,
                       P(cuMemMap)->size);
        break;
    case DRV(cuMemAddressReserve):
        if (!enter)
            alloc_exit(cd, dom, "cuMemAddressReserve", GPUMEM_KIND_RESERVED,
                       check_reserve_key((uintptr_t)*P(cuMemAddressReserve)->ptr),
                       P(cuMemAddressReserve)->size);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The driver's CUDA arrays, kept by their handles: made and destroyed.
 * Returns 0 for a call of another group. */
static int driver_array_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_DRIVER_API;
    switch (id) {
    case DRV(cuArrayCreate_v2):
        if (!enter) {
            const CUDA_ARRAY_DESCRIPTOR *d = P(cuArrayCreate_v2)->pAllocateArray;
            alloc_exit(cd, dom, "cuArrayCreate", GPUMEM_KIND_ARRAY,
                       check_array_key((uintptr_t)*P(cuArrayCreate_v2)->pHandle),
                       d ? extent_bytes(format_bytes(d->Format, d->NumChannels), d->Width,
                                        d->Height, 1) : 0);
        }
        break;
    case DRV(cuArray3DCreate_v2):
        if (!enter) {
            const CUDA_ARRAY3D_DESCRIPTOR *d = P(cuArray3DCreate_v2)->pAllocateArray;
            alloc_exit(cd, dom, "cuArray3DCreate", GPUMEM_KIND_ARRAY,
                       check_array_key((uintptr_t)*P(cuArray3DCreate_v2)->pHandle),
                       d ? extent_bytes(format_bytes(d->Format, d->NumChannels), d->Width,
                                        d->Height, d->Depth) : 0);
        }
        break;
    case DRV(cuMipmappedArrayCreate):
        if (!enter) {
            const CUDA_ARRAY3D_DESCRIPTOR *d = P(cuMipmappedArrayCreate)->pMipmappedArrayDesc;
            alloc_exit(cd, dom, "cuMipmappedArrayCreate", GPUMEM_KIND_MIPMAPPED,
                       check_array_key((uintptr_t)*P(cuMipmappedArrayCreate)->pHandle),
                       d ? mipmap_bytes(format_bytes(d->Format, d->NumChannels), d->Width,
                                        d->Height, d->Depth,
                                        P(cuMipmappedArrayCreate)->numMipmapLevels) : 0);
        }
        break;
    case DRV(cuArrayDestroy):
        if (enter)
            release_enter("cuArrayDestroy", BIT(ARRAY),
                          check_array_key((uintptr_t)P(cuArrayDestroy)->hArray));
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMipmappedArrayDestroy):
        if (enter)
            release_enter("cuMipmappedArrayDestroy", BIT(MIPMAPPED),
                          check_array_key((uintptr_t)P(cuMipmappedArrayDestroy)->hMipmappedArray));
        else
            release_exit(cd, dom);
        break;
    default:
        return 0;
    }
    return 1;
}

/* The driver's release calls. Returns 0 for a call of another group. */
static int driver_release_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_DRIVER_API;
    switch (id) {
    case DRV(cuMemAddressFree):
        if (enter)
            release_enter("cuMemAddressFree", BIT(RESERVED),
                          check_reserve_key((uintptr_t)P(cuMemAddressFree)->ptr));
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMemFree_v2):
        if (enter)
            release_enter("cuMemFree", free_mask, (uintptr_t)P(cuMemFree_v2)->dptr);
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMemFreeHost):
        if (enter)
            release_enter("cuMemFreeHost", free_host_mask, (uintptr_t)P(cuMemFreeHost)->p);
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMemFreeAsync):
    case DRV(cuMemFreeAsync_ptsz):
        if (enter)
            free_async_enter("cuMemFreeAsync", (uintptr_t)P(cuMemFreeAsync)->dptr,
                             P(cuMemFreeAsync)->hStream, id == DRV(cuMemFreeAsync_ptsz));
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMemHostUnregister):
        if (enter)
            release_enter("cuMemHostUnregister", BIT(REGISTERED), (uintptr_t)P(cuMemHostUnregister)->p);
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMemRelease):
        if (enter)
            release_enter("cuMemRelease", BIT(VIRTUAL), check_handle_key(P(cuMemRelease)->handle));
        else
            release_exit(cd, dom);
        break;
    case DRV(cuMemUnmap):
        if (enter) {
            release_enter("cuMemUnmap", BIT(VIRTUAL), (uintptr_t)P(cuMemUnmap)->ptr);
        } else {
            release_exit(cd, dom);
            /* One call may unmap several mappings: all of its range goes. */
            if (returned_ok(cd, dom))
                check_unmap_rest((uintptr_t)P(cuMemUnmap)->ptr, P(cuMemUnmap)->size);
        }
        break;
    default:
        return 0;
    }
    return 1;
}

/* The driver's calls that release all of a device's memory at
 * once. Returns 0 for a call of another group. */
static int driver_reset_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_DRIVER_API;
    switch (id) {
    case DRV(cuDevicePrimaryCtxReset_v2):
        if (!enter && returned_ok(cd, dom))
            check_device_reset((int)P(cuDevicePrimaryCtxReset_v2)->dev);
        break;
    case DRV(cuCtxDestroy_v2):
        if (enter) {
            CUcontext ctx = P(cuCtxDestroy_v2)->ctx, popped;
            reset_device = -1;
            if (drv.ctx_push && drv.ctx_pop && drv.ctx_push(ctx) == CUDA_SUCCESS) {
                reset_device = current_device();
                (void)drv.ctx_pop(&popped); /* pops what was pushed just above */
            }
        } else if (returned_ok(cd, dom) && reset_device >= 0) {
            check_device_reset(reset_device);
        }
        break;
    default:
        return 0;
    }
    return 1;
}

/* The driver's graph memory: memory nodes, captures, instantiation, launches.
 * Returns 0 for a call of another group. */
static int driver_graph_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    const CUpti_CallbackDomain dom = CUPTI_CB_DOMAIN_DRIVER_API;
    switch (id) {
    case DRV(cuGraphAddMemAllocNode):
        if (!enter && returned_ok(cd, dom)) {
            const CUDA_MEM_ALLOC_NODE_PARAMS *np = P(cuGraphAddMemAllocNode)->nodeParams;
            alloc_node_added("cuGraphAddMemAllocNode", (uintptr_t)P(cuGraphAddMemAllocNode)->hGraph,
                             (uintptr_t)np->dptr, np->bytesize, np->poolProps.location.type,
                             np->poolProps.location.id);
        }
        break;
    case DRV(cuGraphAddMemFreeNode):
        if (!enter && returned_ok(cd, dom))
            check_graph_free_node((uintptr_t)P(cuGraphAddMemFreeNode)->hGraph,
                                  "cuGraphAddMemFreeNode",
                                  (uintptr_t)P(cuGraphAddMemFreeNode)->dptr,
                                  gpumem__stack_capture(0));
        break;
#if CUDA_VERSION >= 12030
    case DRV(cuGraphAddNode):
        if (!enter && returned_ok(cd, dom))
            node_added("cuGraphAddNode", (uintptr_t)P(cuGraphAddNode)->hGraph,
                       P(cuGraphAddNode)->nodeParams);
        break;
#endif
#if CUDA_VERSION >= 12030
    case DRV(cuGraphAddNode_v2):
        if (!enter && returned_ok(cd, dom))
            node_added("cuGraphAddNode", (uintptr_t)P(cuGraphAddNode_v2)->hGraph,
                       P(cuGraphAddNode_v2)->nodeParams);
        break;
#endif
    case DRV(cuStreamEndCapture):
    case DRV(cuStreamEndCapture_ptsz):
        end_capture(cd, dom, enter, P(cuStreamEndCapture)->hStream,
                    id == DRV(cuStreamEndCapture_ptsz), P(cuStreamEndCapture)->phGraph);
        break;
    case DRV(cuGraphInstantiate):
    case DRV(cuGraphInstantiate_v2):
        /* The forms before CUDA 12: (exec, graph, error node, log, log size), no flags. */
        if (!enter && returned_ok(cd, dom))
            check_graph_instantiated((uintptr_t)P(cuGraphInstantiate)->hGraph,
                                     (uintptr_t)*P(cuGraphInstantiate)->phGraphExec, 0);
        break;
    case DRV(cuGraphInstantiateWithFlags):
        if (!enter && returned_ok(cd, dom))
            check_graph_instantiated((uintptr_t)P(cuGraphInstantiateWithFlags)->hGraph,
                                     (uintptr_t)*P(cuGraphInstantiateWithFlags)->phGraphExec,
                                     P(cuGraphInstantiateWithFlags)->flags);
        break;
    case DRV(cuGraphInstantiateWithParams):
    case DRV(cuGraphInstantiateWithParams_ptsz): {
        const cuGraphInstantiateWithParams_params *a = P(cuGraphInstantiateWithParams);
        if (!enter && returned_ok(cd, dom))
            check_graph_instantiated((uintptr_t)a->hGraph, (uintptr_t)*a->phGraphExec,
                                     a->instantiateParams ? a->instantiateParams->flags : 0);
        break;
    }
    case DRV(cuGraphLaunch):
        if (!enter && returned_ok(cd, dom))
            check_graph_launched((uintptr_t)P(cuGraphLaunch)->hGraph);
        break;
    case DRV(cuGraphLaunch_ptsz):
        if (!enter && returned_ok(cd, dom))
            check_graph_launched((uintptr_t)P(cuGraphLaunch_ptsz)->hGraphExec);
        break;
    case DRV(cuGraphExecDestroy):
        if (enter)
            check_graph_exec_destroyed((uintptr_t)P(cuGraphExecDestroy)->hGraphExec);
        break;
    case DRV(cuGraphDestroy):
        if (enter)
            check_graph_destroyed((uintptr_t)P(cuGraphDestroy)->hGraph);
        break;
    default:
        return 0;
    }
    return 1;
}

/* One callback of the driver API, handed to the group of calls it belongs to. */
static void driver_call(CUpti_CallbackId id, const CUpti_CallbackData *cd, int enter)
{
    (void)(driver_alloc_call(id, cd, enter) ||
           driver_array_call(id, cd, enter) ||
           driver_release_call(id, cd, enter) ||
           driver_reset_call(id, cd, enter) ||
           driver_graph_call(id, cd, enter));
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                             const void *data)
{
    (void)userdata;
    const CUpti_CallbackData *cd = data;
    if (check_tls_busy)
        return;
    int enter = cd->callbackSite == CUPTI_API_ENTER;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
        if (enter)
            rt_depth++;
        runtime_call(id, cd, enter);
        if (!enter)
            rt_depth--;
    } else if (dom == CUPTI_CB_DOMAIN_DRIVER_API && rt_depth == 0) {
        driver_call(id, cd, enter);
    }
}

static const CUpti_CallbackId runtime_ids[] = {
    RT(cudaMalloc_v3020), RT(cudaMallocPitch_v3020), RT(cudaMalloc3D_v3020),
    RT(cudaMallocHost_v3020), RT(cudaHostAlloc_v3020), RT(cudaMallocManaged_v6000),
    RT(cudaMallocAsync_v11020), RT(cudaMallocAsync_ptsz_v11020),
    RT(cudaMallocFromPoolAsync_v11020), RT(cudaMallocFromPoolAsync_ptsz_v11020),
    RT(cudaHostRegister_v4000), RT(cudaFree_v3020), RT(cudaFreeHost_v3020),
    RT(cudaFreeAsync_v11020), RT(cudaFreeAsync_ptsz_v11020), RT(cudaHostUnregister_v4000),
    RT(cudaDeviceReset_v3020), RT(cudaMallocArray_v3020), RT(cudaMalloc3DArray_v3020),
    RT(cudaMallocMipmappedArray_v5000), RT(cudaFreeArray_v3020), RT(cudaFreeMipmappedArray_v5000),
    RT(cudaGraphAddMemAllocNode_v11040), RT(cudaGraphAddMemFreeNode_v11040),
#if CUDA_VERSION >= 12030
    RT(cudaGraphAddNode_v12030),
#endif
    RT(cudaStreamEndCapture_v10000), RT(cudaStreamEndCapture_ptsz_v10000),
    RT(cudaGraphInstantiate_v10000), RT(cudaGraphInstantiate_v12000),
    RT(cudaGraphInstantiateWithFlags_v11040), RT(cudaGraphInstantiateWithParams_v12000),
    RT(cudaGraphInstantiateWithParams_ptsz_v12000), RT(cudaGraphLaunch_v10000),
    RT(cudaGraphLaunch_ptsz_v10000), RT(cudaGraphExecDestroy_v10000), RT(cudaGraphDestroy_v10000)};

static const CUpti_CallbackId driver_ids[] = {
    DRV(cuMemAlloc_v2), DRV(cuMemAllocPitch_v2), DRV(cuMemAllocHost_v2), DRV(cuMemHostAlloc),
    DRV(cuMemAllocManaged), DRV(cuMemAllocAsync), DRV(cuMemAllocAsync_ptsz),
    DRV(cuMemAllocFromPoolAsync), DRV(cuMemAllocFromPoolAsync_ptsz), DRV(cuMemHostRegister_v2),
    DRV(cuMemCreate), DRV(cuMemMap), DRV(cuMemFree_v2), DRV(cuMemFreeHost),
    DRV(cuMemFreeAsync), DRV(cuMemFreeAsync_ptsz), DRV(cuMemHostUnregister), DRV(cuMemRelease),
    DRV(cuMemUnmap), DRV(cuDevicePrimaryCtxReset_v2), DRV(cuCtxDestroy_v2),
    DRV(cuArrayCreate_v2), DRV(cuArray3DCreate_v2), DRV(cuMipmappedArrayCreate),
    DRV(cuArrayDestroy), DRV(cuMipmappedArrayDestroy), DRV(cuMemAddressReserve),
    DRV(cuMemAddressFree), DRV(cuGraphAddMemAllocNode), DRV(cuGraphAddMemFreeNode),
#if CUDA_VERSION >= 12030
    DRV(cuGraphAddNode), DRV(cuGraphAddNode_v2),
#endif
    DRV(cuStreamEndCapture), DRV(cuStreamEndCapture_ptsz), DRV(cuGraphInstantiate),
    DRV(cuGraphInstantiate_v2), DRV(cuGraphInstantiateWithFlags), DRV(cuGraphInstantiateWithParams),
    DRV(cuGraphInstantiateWithParams_ptsz), DRV(cuGraphLaunch), DRV(cuGraphLaunch_ptsz),
    DRV(cuGraphExecDestroy), DRV(cuGraphDestroy)};

/* ---- the process's end ---- */

static volatile sig_atomic_t injected;

static void on_exit_report(int status, void *arg)
{
    (void)arg;
    check_finish("exited", status);
}

static void on_fatal_signal(int sig)
{
    check_finish("signaled", sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* A crash or a kill still writes what was seen; the program's own handlers stay its own. */
static void catch_fatal_signals(void)
{
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGINT, SIGTERM, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

/* CUDA_INJECTION64_PATH named this library when the process started: the driver then calls
 * InitializeInjection when it initializes, so a process that was never injected never
 * initialized CUDA, whatever it loaded. libcuda.so.1 is loaded without being initialized by
 * programs that only ask for the driver's version, that link it and never call it, or whose
 * work is done by the children they fork; such a process used no CUDA. */
static int injection_is_ours;

static int names_this_library(const char *path)
{
    Dl_info self;
    struct stat a, b;
    return path && *path && dladdr((const void *)&injection_is_ours, &self) && self.dli_fname &&
           stat(path, &a) == 0 && stat(self.dli_fname, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Processes that initialize CUDA without InitializeInjection: another tool replaced
 * CUDA_INJECTION64_PATH (Nsight Systems, compute-sanitizer). Say so rather than report a
 * clean run. */
static void not_injected_at_exit(int status, void *arg)
{
    (void)arg;
    if (injected || injection_is_ours)
        return; /* injected, or CUDA never initialized: nothing to say */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return; /* no CUDA in this process: nothing to say */
    dlclose(h);
    static char why[512];
    const char *other = getenv("CUDA_INJECTION64_PATH");
    snprintf(why, sizeof why, "the CUDA driver was loaded, but gpumem check was not injected: "
             "CUDA_INJECTION64_PATH %s%s, so what CUDA did here was not watched (run the two "
             "tools one at a time)", other && *other ? "names another tool's library, " : "is unset",
             other && *other ? other : "");
    check_unchecked(why);
    check_finish("exited", status);
}

void check_front_preloaded(void)
{
    injection_is_ours = names_this_library(getenv("CUDA_INJECTION64_PATH"));
    on_exit(not_injected_at_exit, NULL);
}

__attribute__((visibility("default"))) int InitializeInjection(void);

static void after_fork_in_child(void)
{
    check_forked();
}

int InitializeInjection(void)
{
    injected = 1;
    pthread_atfork(NULL, NULL, after_fork_in_child);
    check_setup();
    load_driver();
    CUpti_SubscriberHandle sub;
    CUptiResult r = cuptiSubscribe(&sub, on_call, NULL);
    if (r != CUPTI_SUCCESS) {
        const char *why = NULL;
        cuptiGetResultString(r, &why);
        static char msg[256];
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
            snprintf(msg, sizeof msg, "another CUPTI subscriber is present (a profiler, a "
                                      "sanitizer or the program itself)");
        else
            snprintf(msg, sizeof msg, "CUPTI refused the subscription (%s)", why ? why : "?");
        check_unchecked(msg);
        on_exit(on_exit_report, NULL);
        return 1;
    }
    for (size_t i = 0; i < sizeof runtime_ids / sizeof *runtime_ids; i++)
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, runtime_ids[i]);
    for (size_t i = 0; i < sizeof driver_ids / sizeof *driver_ids; i++)
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_ids[i]);
    on_exit(on_exit_report, NULL);
    catch_fatal_signals();
    return 1;
}

/* gpumem check's table of the CUDA memory calls it watches (cupti.c subscribes to them): for
 * each, what its CUPTI callbacks do to the engine. Allocations make memory live when they
 * return; releases are checked when entered and settled when they returned; the graph calls
 * and stream captures feed graphs.c's model, the virtual memory calls vmm.c's. One row per
 * call, the runtime's and the driver's side by side. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti.h>
#include <stdint.h>
#include <string.h>

#include "backtrace.h"
#include "cupti_int.h"
#include "engine.h"
#include "graphs.h"
#include "internal.h"


_Thread_local int check__failure_handled __attribute__((tls_model("initial-exec")));

/* The kinds a release may release are src/kinds.def's (check_release_kinds): the release
 * rows of the table below take them from there by their names. */

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


/* Per thread: the releases in flight. */
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
static _Thread_local uint32_t reset_stack __attribute__((tls_model("initial-exec")));

static void alloc_exit(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom, const char *call,
                       int kind, uintptr_t base, size_t bytes)
{
    int rc = return_code(cd, dom);
    /* The driver's CUresult and the runtime's cudaError_t share the values that matter here
     * (out of memory is 2 in both); the report names them with the runtime's names. */
    check_alloc(call, kind, rc ? 0 : base, bytes, rc ? 0 : check__current_device(), rc,
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
    if (!check__drv.stream_capture_info)
        return 0;
    if (!s && per_thread)
        s = CU_STREAM_PER_THREAD;
    check_tls_busy++;
    CUresult rc = check__drv.stream_capture_info(s, &status, &id);
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
        check_graph_alloc_node(check_capture_key(capture), call, base, bytes, check__current_device(),
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
        release_enter(call, check_release_kinds(call), p);
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
    int device = location_type == CU_MEM_LOCATION_TYPE_DEVICE ? location_id : check__current_device();
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

/* ---- the calls watched: one table ---- */

/* A row of the table: a call of the runtime or the driver API and what its callbacks do. The
 * handler gets its row (the call's name as the report gives it, and ARG: the kind of what an
 * allocation makes, the kinds a release may release, or PER_THREAD where stream 0 is the
 * per-thread default stream: the _ptsz forms), the callback's data, and whether the call is
 * being entered (else it has returned). InitializeInjection subscribes to the rows' calls and
 * on_call finds a callback's row by its id. */
typedef check_cupti_call call;
enum { LEGACY_STREAM = 0, PER_THREAD = 1 };

#define P(type) ((const type##_params *)cd->functionParams)
/* A handler; the destroy calls do not need their row. */
#define ON(fn)                                                                                    \
    static void fn(const call *r __attribute__((unused)), const CUpti_CallbackData *cd, int enter)

/* An allocation returned: what it made becomes live, of the row's kind. */
static void allocated(const call *r, const CUpti_CallbackData *cd, uintptr_t base, size_t bytes)
{
    alloc_exit(cd, r->dom, r->name, (int)r->arg, base, bytes);
}

/* A release of one of the kinds its name releases: checked when entered, settled when it
 * returned. */
static void release(const call *r, const CUpti_CallbackData *cd, int enter, uintptr_t p)
{
    if (enter)
        release_enter(r->name, check_release_kinds(r->name), p);
    else
        release_exit(cd, r->dom);
}

/* cudaFreeAsync and cuMemFreeAsync: a free node when the stream is capturing. */
static void release_async(const call *r, const CUpti_CallbackData *cd, int enter, uintptr_t p,
                          CUstream s)
{
    if (enter)
        free_async_enter(r->name, p, s, r->arg == PER_THREAD);
    else
        release_exit(cd, r->dom);
}

/* A call that succeeded: for the graph calls, which change the model only then. */
static int succeeded(const call *r, const CUpti_CallbackData *cd, int enter)
{
    return !enter && returned_ok(cd, r->dom);
}

/* The runtime's allocations. */
ON(on_cudaMalloc)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cudaMalloc_v3020)->devPtr, P(cudaMalloc_v3020)->size);
}
ON(on_cudaMallocPitch)
{
    const cudaMallocPitch_v3020_params *a = P(cudaMallocPitch_v3020);
    if (!enter)
        allocated(r, cd, (uintptr_t)*a->devPtr, *a->pitch * a->height);
}
ON(on_cudaMalloc3D)
{
    const cudaMalloc3D_v3020_params *a = P(cudaMalloc3D_v3020);
    if (!enter)
        allocated(r, cd, (uintptr_t)a->pitchedDevPtr->ptr,
                  a->pitchedDevPtr->pitch * a->extent.height * (a->extent.depth ? a->extent.depth : 1));
}
ON(on_cudaMallocHost)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cudaMallocHost_v3020)->ptr, P(cudaMallocHost_v3020)->size);
}
ON(on_cudaHostAlloc)
{
    const cudaHostAlloc_v3020_params *a = P(cudaHostAlloc_v3020);
    if (enter)
        return;
    /* The runtime header's C++ cudaMallocHost(&p, n) is cudaHostAlloc(&p, n, 0), and
     * cudaHostAlloc without flags is cudaMallocHost: name it as the program wrote it. */
    if (a->flags == 0)
        alloc_exit(cd, r->dom, "cudaMallocHost", GPUMEM_KIND_PINNED, (uintptr_t)*a->pHost, a->size);
    else
        allocated(r, cd, (uintptr_t)*a->pHost, a->size);
}
ON(on_cudaMallocManaged)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cudaMallocManaged_v6000)->devPtr,
                  P(cudaMallocManaged_v6000)->size);
}
ON(on_cudaMallocAsync)
{
    const cudaMallocAsync_v11020_params *a = P(cudaMallocAsync_v11020);
    if (!enter)
        alloc_async_exit(cd, r->dom, r->name, (uintptr_t)*a->devPtr, a->size, a->hStream,
                         r->arg == PER_THREAD);
}
ON(on_cudaMallocFromPoolAsync)
{
    const cudaMallocFromPoolAsync_v11020_params *a = P(cudaMallocFromPoolAsync_v11020);
    if (!enter)
        alloc_async_exit(cd, r->dom, r->name, (uintptr_t)*a->ptr, a->size, a->stream,
                         r->arg == PER_THREAD);
}
ON(on_cudaHostRegister)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)P(cudaHostRegister_v4000)->ptr, P(cudaHostRegister_v4000)->size);
}

/* The runtime's CUDA arrays, kept by their handles. */
ON(on_cudaMallocArray)
{
    const cudaMallocArray_v3020_params *a = P(cudaMallocArray_v3020);
    if (!enter)
        allocated(r, cd, check_array_key((uintptr_t)*a->array),
                  extent_bytes(channel_bytes(a->desc), a->width, a->height, 1));
}
ON(on_cudaMalloc3DArray)
{
    const cudaMalloc3DArray_v3020_params *a = P(cudaMalloc3DArray_v3020);
    if (!enter)
        allocated(r, cd, check_array_key((uintptr_t)*a->array),
                  extent_bytes(channel_bytes(a->desc), a->extent.width, a->extent.height,
                               a->extent.depth));
}
ON(on_cudaMallocMipmappedArray)
{
    const cudaMallocMipmappedArray_v5000_params *a = P(cudaMallocMipmappedArray_v5000);
    if (!enter)
        allocated(r, cd, check_array_key((uintptr_t)*a->mipmappedArray),
                  mipmap_bytes(channel_bytes(a->desc), a->extent.width, a->extent.height,
                               a->extent.depth, a->numLevels));
}
ON(on_cudaFreeArray)
{
    release(r, cd, enter, check_array_key((uintptr_t)P(cudaFreeArray_v3020)->array));
}
ON(on_cudaFreeMipmappedArray)
{
    release(r, cd, enter,
            check_array_key((uintptr_t)P(cudaFreeMipmappedArray_v5000)->mipmappedArray));
}

/* The runtime's releases. */
ON(on_cudaFree)
{
    release(r, cd, enter, (uintptr_t)P(cudaFree_v3020)->devPtr);
}
ON(on_cudaFreeHost)
{
    release(r, cd, enter, (uintptr_t)P(cudaFreeHost_v3020)->ptr);
}
ON(on_cudaFreeAsync)
{
    release_async(r, cd, enter, (uintptr_t)P(cudaFreeAsync_v11020)->devPtr,
                  P(cudaFreeAsync_v11020)->hStream);
}
ON(on_cudaHostUnregister)
{
    release(r, cd, enter, (uintptr_t)P(cudaHostUnregister_v4000)->ptr);
}
/* All of a device's memory at once: what is live then is reported as leaked. */
ON(on_cudaDeviceReset)
{
    if (enter) {
        reset_device = check__current_device();
        reset_stack = gpumem__stack_capture(0);
    } else if (returned_ok(cd, r->dom)) {
        check_device_reset(r->name, reset_device, reset_stack);
    }
}

/* The runtime's graph memory: memory nodes, captures, instantiation, launches. */
ON(on_cudaGraphAddMemAllocNode)
{
    const cudaGraphAddMemAllocNode_v11040_params *a = P(cudaGraphAddMemAllocNode_v11040);
    if (succeeded(r, cd, enter))
        alloc_node_added(r->name, (uintptr_t)a->graph, (uintptr_t)a->nodeParams->dptr,
                         a->nodeParams->bytesize, a->nodeParams->poolProps.location.type,
                         a->nodeParams->poolProps.location.id);
}
ON(on_cudaGraphAddMemFreeNode)
{
    const cudaGraphAddMemFreeNode_v11040_params *a = P(cudaGraphAddMemFreeNode_v11040);
    if (succeeded(r, cd, enter))
        check_graph_free_node((uintptr_t)a->graph, r->name, (uintptr_t)a->dptr,
                              gpumem__stack_capture(0));
}
#if CUDA_VERSION >= 12030
ON(on_cudaGraphAddNode)
{
    const cudaGraphAddNode_v12030_params *a = P(cudaGraphAddNode_v12030);
    if (succeeded(r, cd, enter))
        node_added(r->name, (uintptr_t)a->graph,
                   (const CUgraphNodeParams *)(const void *)a->nodeParams);
}
#endif
ON(on_cudaStreamEndCapture)
{
    const cudaStreamEndCapture_v10000_params *a = P(cudaStreamEndCapture_v10000);
    end_capture(cd, r->dom, enter, a->stream, r->arg == PER_THREAD, a->pGraph);
}
ON(on_cudaGraphInstantiate)
{
    /* CUDA 11's form, (pGraphExec, graph, error node, log, log size), has the same first
     * fields as CUDA 12's and no flags: the row's ARG says which it is. */
    const cudaGraphInstantiate_v12000_params *a = P(cudaGraphInstantiate_v12000);
    if (succeeded(r, cd, enter))
        check_graph_instantiated((uintptr_t)a->graph, (uintptr_t)*a->pGraphExec,
                                 r->arg ? a->flags : 0);
}
ON(on_cudaGraphInstantiateWithParams)
{
    const cudaGraphInstantiateWithParams_v12000_params *a = P(cudaGraphInstantiateWithParams_v12000);
    if (succeeded(r, cd, enter))
        check_graph_instantiated((uintptr_t)a->graph, (uintptr_t)*a->pGraphExec,
                                 a->instantiateParams ? a->instantiateParams->flags : 0);
}
ON(on_cudaGraphLaunch)
{
    if (succeeded(r, cd, enter))
        check_graph_launched((uintptr_t)P(cudaGraphLaunch_v10000)->graphExec);
}
ON(on_cudaGraphExecDestroy)
{
    if (enter)
        check_graph_exec_destroyed((uintptr_t)P(cudaGraphExecDestroy_v10000)->graphExec);
}
ON(on_cudaGraphDestroy)
{
    if (enter)
        check_graph_destroyed((uintptr_t)P(cudaGraphDestroy_v10000)->graph);
}

/* The driver's allocations. */
ON(on_cuMemAlloc)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cuMemAlloc_v2)->dptr, P(cuMemAlloc_v2)->bytesize);
}
ON(on_cuMemAllocPitch)
{
    const cuMemAllocPitch_v2_params *a = P(cuMemAllocPitch_v2);
    if (!enter)
        allocated(r, cd, (uintptr_t)*a->dptr, *a->pPitch * a->Height);
}
ON(on_cuMemAllocHost)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cuMemAllocHost_v2)->pp, P(cuMemAllocHost_v2)->bytesize);
}
ON(on_cuMemHostAlloc)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cuMemHostAlloc)->pp, P(cuMemHostAlloc)->bytesize);
}
ON(on_cuMemAllocManaged)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)*P(cuMemAllocManaged)->dptr, P(cuMemAllocManaged)->bytesize);
}
ON(on_cuMemAllocAsync)
{
    const cuMemAllocAsync_params *a = P(cuMemAllocAsync);
    if (!enter)
        alloc_async_exit(cd, r->dom, r->name, (uintptr_t)*a->dptr, a->bytesize, a->hStream,
                         r->arg == PER_THREAD);
}
ON(on_cuMemAllocFromPoolAsync)
{
    const cuMemAllocFromPoolAsync_params *a = P(cuMemAllocFromPoolAsync);
    if (!enter)
        alloc_async_exit(cd, r->dom, r->name, (uintptr_t)*a->dptr, a->bytesize, a->hStream,
                         r->arg == PER_THREAD);
}
ON(on_cuMemHostRegister)
{
    if (!enter)
        allocated(r, cd, (uintptr_t)P(cuMemHostRegister_v2)->p, P(cuMemHostRegister_v2)->bytesize);
}
/* Virtual memory: handles with references, and mappings that hold them (vmm.c). */
static int location_device(const CUmemLocation *l)
{
    return l && l->type == CU_MEM_LOCATION_TYPE_DEVICE ? l->id : check__current_device();
}
/* cuMemCreate refused for a shareable handle type the machine does not offer (fabric handles
 * where there is no fabric, say): CUDA's way of telling which types exist, which NCCL asks
 * before it falls back to another. Not a failed allocation. */
static int handle_type_probe(const CUmemAllocationProp *prop, int rc)
{
    return prop && prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE &&
           (rc == CUDA_ERROR_NOT_SUPPORTED || rc == CUDA_ERROR_NOT_PERMITTED ||
            rc == CUDA_ERROR_INVALID_VALUE);
}
ON(on_cuMemCreate)
{
    const cuMemCreate_params *a = P(cuMemCreate);
    if (enter)
        return;
    int rc = return_code(cd, r->dom);
    int device = location_device(a->prop ? &a->prop->location : NULL);
    if (rc == 0)
        check_vmm_handle(r->name, *a->handle, a->size, device, gpumem__stack_capture(0));
    else if (handle_type_probe(a->prop, rc))
        check__failure_handled = 1, check_call_probed(r->name, rc);
    else
        check_alloc(r->name, GPUMEM_KIND_VIRTUAL, 0, a->size, device, rc, gpumem__stack_capture(0));
}
ON(on_cuMemImportFromShareableHandle)
{
    const cuMemImportFromShareableHandle_params *a = P(cuMemImportFromShareableHandle);
    if (succeeded(r, cd, enter))
        check_vmm_handle(r->name, *a->handle, 0, check__current_device(), gpumem__stack_capture(0));
}
ON(on_cuMulticastCreate)
{
    const cuMulticastCreate_params *a = P(cuMulticastCreate);
    if (succeeded(r, cd, enter))
        check_vmm_handle(r->name, *a->mcHandle, a->prop ? a->prop->size : 0, check__current_device(),
                         gpumem__stack_capture(0));
}
ON(on_cuMemRetainAllocationHandle)
{
    if (succeeded(r, cd, enter))
        check_vmm_retain(*P(cuMemRetainAllocationHandle)->handle);
}
ON(on_cuMemMap)
{
    const cuMemMap_params *a = P(cuMemMap);
    if (succeeded(r, cd, enter))
        check_vmm_map((uintptr_t)a->ptr, a->size, a->handle, gpumem__stack_capture(0));
}
ON(on_cuMulticastBindMem)
{
    const cuMulticastBindMem_params *a = P(cuMulticastBindMem);
    if (succeeded(r, cd, enter))
        check_vmm_bind(a->mcHandle, a->mcOffset, a->size, a->memHandle);
}
ON(on_cuMulticastBindAddr)
{
    const cuMulticastBindAddr_params *a = P(cuMulticastBindAddr);
    if (succeeded(r, cd, enter))
        check_vmm_bind_addr(a->mcHandle, a->mcOffset, a->size, (uintptr_t)a->memptr);
}
ON(on_cuMulticastUnbind)
{
    const cuMulticastUnbind_params *a = P(cuMulticastUnbind);
    if (succeeded(r, cd, enter))
        check_vmm_unbind(a->mcHandle, a->mcOffset, a->size, gpumem__stack_capture(0));
}
ON(on_cuMemAddressReserve)
{
    if (!enter)
        allocated(r, cd, check_reserve_key((uintptr_t)*P(cuMemAddressReserve)->ptr),
                  P(cuMemAddressReserve)->size);
}

/* The driver's CUDA arrays, kept by their handles. */
ON(on_cuArrayCreate)
{
    const CUDA_ARRAY_DESCRIPTOR *d = P(cuArrayCreate_v2)->pAllocateArray;
    if (!enter)
        allocated(r, cd, check_array_key((uintptr_t)*P(cuArrayCreate_v2)->pHandle),
                  d ? extent_bytes(format_bytes(d->Format, d->NumChannels), d->Width, d->Height, 1)
                    : 0);
}
ON(on_cuArray3DCreate)
{
    const CUDA_ARRAY3D_DESCRIPTOR *d = P(cuArray3DCreate_v2)->pAllocateArray;
    if (!enter)
        allocated(r, cd, check_array_key((uintptr_t)*P(cuArray3DCreate_v2)->pHandle),
                  d ? extent_bytes(format_bytes(d->Format, d->NumChannels), d->Width, d->Height,
                                   d->Depth)
                    : 0);
}
ON(on_cuMipmappedArrayCreate)
{
    const cuMipmappedArrayCreate_params *a = P(cuMipmappedArrayCreate);
    const CUDA_ARRAY3D_DESCRIPTOR *d = a->pMipmappedArrayDesc;
    if (!enter)
        allocated(r, cd, check_array_key((uintptr_t)*a->pHandle),
                  d ? mipmap_bytes(format_bytes(d->Format, d->NumChannels), d->Width, d->Height,
                                   d->Depth, a->numMipmapLevels)
                    : 0);
}
ON(on_cuArrayDestroy)
{
    release(r, cd, enter, check_array_key((uintptr_t)P(cuArrayDestroy)->hArray));
}
ON(on_cuMipmappedArrayDestroy)
{
    release(r, cd, enter, check_array_key((uintptr_t)P(cuMipmappedArrayDestroy)->hMipmappedArray));
}

/* The driver's releases. */
ON(on_cuMemAddressFree)
{
    release(r, cd, enter, check_reserve_key((uintptr_t)P(cuMemAddressFree)->ptr));
}
ON(on_cuMemFree)
{
    release(r, cd, enter, (uintptr_t)P(cuMemFree_v2)->dptr);
}
ON(on_cuMemFreeHost)
{
    release(r, cd, enter, (uintptr_t)P(cuMemFreeHost)->p);
}
ON(on_cuMemFreeAsync)
{
    release_async(r, cd, enter, (uintptr_t)P(cuMemFreeAsync)->dptr, P(cuMemFreeAsync)->hStream);
}
ON(on_cuMemHostUnregister)
{
    release(r, cd, enter, (uintptr_t)P(cuMemHostUnregister)->p);
}
/* cuMemRelease drops one reference; cuMemUnmap every mapping that starts in its range. The
 * memory goes with the last of them (vmm.c). Both are checked when entered (a double
 * release is reported before CUDA sees it) and settled when they returned. */
static _Thread_local struct {
    int state;
    uint32_t stack;
} vmm_pending __attribute__((tls_model("initial-exec")));

ON(on_cuMemRelease)
{
    unsigned long long h = P(cuMemRelease)->handle;
    if (enter) {
        vmm_pending.stack = gpumem__stack_capture(0);
        vmm_pending.state = check_vmm_release_begin(r->name, h, vmm_pending.stack);
    } else if (vmm_pending.state == CHECK_GO) {
        check_vmm_release_end(r->name, h, returned_ok(cd, r->dom), vmm_pending.stack);
    } else if (vmm_pending.state == CHECK_UNKNOWN) {
        check_release_unknown_end(r->name, check_handle_key(h), vmm_pending.stack,
                                  returned_ok(cd, r->dom));
    }
}
ON(on_cuMemUnmap)
{
    const cuMemUnmap_params *a = P(cuMemUnmap);
    if (enter) {
        vmm_pending.stack = gpumem__stack_capture(0);
        vmm_pending.state = check_vmm_unmap_begin((uintptr_t)a->ptr, a->size);
    } else if (vmm_pending.state == CHECK_GO && returned_ok(cd, r->dom)) {
        check_vmm_unmap_end(r->name, (uintptr_t)a->ptr, a->size, vmm_pending.stack);
    } else if (vmm_pending.state == CHECK_UNKNOWN) {
        check_release_unknown_end(r->name, (uintptr_t)a->ptr, vmm_pending.stack,
                                  returned_ok(cd, r->dom));
    }
}
/* All of a device's memory at once: what is live then is reported as leaked. */
ON(on_cuDevicePrimaryCtxReset)
{
    if (enter)
        reset_stack = gpumem__stack_capture(0);
    else if (returned_ok(cd, r->dom))
        check_device_reset(r->name, (int)P(cuDevicePrimaryCtxReset_v2)->dev, reset_stack);
}
ON(on_cuCtxDestroy)
{
    if (enter) {
        CUcontext ctx = P(cuCtxDestroy_v2)->ctx, popped;
        reset_device = -1;
        reset_stack = gpumem__stack_capture(0);
        check_tls_busy++;
        if (check__drv.ctx_push && check__drv.ctx_pop && check__drv.ctx_push(ctx) == CUDA_SUCCESS) {
            reset_device = check__current_device();
            (void)check__drv.ctx_pop(&popped); /* pops what was pushed just above */
        }
        check_tls_busy--;
    } else if (returned_ok(cd, r->dom) && reset_device >= 0) {
        check_device_reset(r->name, reset_device, reset_stack);
    }
}

/* The driver's graph memory. */
ON(on_cuGraphAddMemAllocNode)
{
    const cuGraphAddMemAllocNode_params *a = P(cuGraphAddMemAllocNode);
    if (succeeded(r, cd, enter))
        alloc_node_added(r->name, (uintptr_t)a->hGraph, (uintptr_t)a->nodeParams->dptr,
                         a->nodeParams->bytesize, a->nodeParams->poolProps.location.type,
                         a->nodeParams->poolProps.location.id);
}
ON(on_cuGraphAddMemFreeNode)
{
    const cuGraphAddMemFreeNode_params *a = P(cuGraphAddMemFreeNode);
    if (succeeded(r, cd, enter))
        check_graph_free_node((uintptr_t)a->hGraph, r->name, (uintptr_t)a->dptr,
                              gpumem__stack_capture(0));
}
#if CUDA_VERSION >= 12030
ON(on_cuGraphAddNode)
{
    if (succeeded(r, cd, enter))
        node_added(r->name, (uintptr_t)P(cuGraphAddNode)->hGraph, P(cuGraphAddNode)->nodeParams);
}
ON(on_cuGraphAddNode_v2)
{
    if (succeeded(r, cd, enter))
        node_added(r->name, (uintptr_t)P(cuGraphAddNode_v2)->hGraph,
                   P(cuGraphAddNode_v2)->nodeParams);
}
#endif
ON(on_cuStreamEndCapture)
{
    end_capture(cd, r->dom, enter, P(cuStreamEndCapture)->hStream, r->arg == PER_THREAD,
                P(cuStreamEndCapture)->phGraph);
}
ON(on_cuGraphInstantiate)
{
    /* The forms before CUDA 12: (exec, graph, error node, log, log size), no flags. */
    if (succeeded(r, cd, enter))
        check_graph_instantiated((uintptr_t)P(cuGraphInstantiate)->hGraph,
                                 (uintptr_t)*P(cuGraphInstantiate)->phGraphExec, 0);
}
ON(on_cuGraphInstantiateWithFlags)
{
    const cuGraphInstantiateWithFlags_params *a = P(cuGraphInstantiateWithFlags);
    if (succeeded(r, cd, enter))
        check_graph_instantiated((uintptr_t)a->hGraph, (uintptr_t)*a->phGraphExec, a->flags);
}
ON(on_cuGraphInstantiateWithParams)
{
    const cuGraphInstantiateWithParams_params *a = P(cuGraphInstantiateWithParams);
    if (succeeded(r, cd, enter))
        check_graph_instantiated((uintptr_t)a->hGraph, (uintptr_t)*a->phGraphExec,
                                 a->instantiateParams ? a->instantiateParams->flags : 0);
}
ON(on_cuGraphLaunch)
{
    if (succeeded(r, cd, enter))
        check_graph_launched((uintptr_t)P(cuGraphLaunch)->hGraph);
}
ON(on_cuGraphLaunch_ptsz)
{
    if (succeeded(r, cd, enter))
        check_graph_launched((uintptr_t)P(cuGraphLaunch_ptsz)->hGraphExec);
}
ON(on_cuGraphExecDestroy)
{
    if (enter)
        check_graph_exec_destroyed((uintptr_t)P(cuGraphExecDestroy)->hGraphExec);
}
ON(on_cuGraphDestroy)
{
    if (enter)
        check_graph_destroyed((uintptr_t)P(cuGraphDestroy)->hGraph);
}

#define RT(id, name, fn, arg) {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##id, name, fn, arg}
#define DRV(id, name, fn, arg) {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##id, name, fn, arg}
#define KIND(k) GPUMEM_KIND_##k
/* Every call gpumem check watches, runtime and driver side by side. A runtime call makes
 * driver calls of its own, which on_call leaves out (rt_depth). */
static const call calls[] = {
    /* allocations: ARG is the kind of what they make */
    RT(cudaMalloc_v3020, "cudaMalloc", on_cudaMalloc, KIND(DEVICE)),
    DRV(cuMemAlloc_v2, "cuMemAlloc", on_cuMemAlloc, KIND(DEVICE)),
    RT(cudaMallocPitch_v3020, "cudaMallocPitch", on_cudaMallocPitch, KIND(DEVICE)),
    DRV(cuMemAllocPitch_v2, "cuMemAllocPitch", on_cuMemAllocPitch, KIND(DEVICE)),
    RT(cudaMalloc3D_v3020, "cudaMalloc3D", on_cudaMalloc3D, KIND(DEVICE)),
    RT(cudaMallocHost_v3020, "cudaMallocHost", on_cudaMallocHost, KIND(PINNED)),
    DRV(cuMemAllocHost_v2, "cuMemAllocHost", on_cuMemAllocHost, KIND(PINNED)),
    RT(cudaHostAlloc_v3020, "cudaHostAlloc", on_cudaHostAlloc, KIND(HOST)),
    DRV(cuMemHostAlloc, "cuMemHostAlloc", on_cuMemHostAlloc, KIND(HOST)),
    RT(cudaMallocManaged_v6000, "cudaMallocManaged", on_cudaMallocManaged, KIND(MANAGED)),
    DRV(cuMemAllocManaged, "cuMemAllocManaged", on_cuMemAllocManaged, KIND(MANAGED)),
    RT(cudaHostRegister_v4000, "cudaHostRegister", on_cudaHostRegister, KIND(REGISTERED)),
    DRV(cuMemHostRegister_v2, "cuMemHostRegister", on_cuMemHostRegister, KIND(REGISTERED)),
    DRV(cuMemCreate, "cuMemCreate", on_cuMemCreate, KIND(VIRTUAL)),
    DRV(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle",
        on_cuMemImportFromShareableHandle, KIND(VIRTUAL)),
    DRV(cuMulticastCreate, "cuMulticastCreate", on_cuMulticastCreate, KIND(VIRTUAL)),
    DRV(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", on_cuMemRetainAllocationHandle,
        KIND(VIRTUAL)),
    DRV(cuMemMap, "cuMemMap", on_cuMemMap, KIND(VIRTUAL)),
    DRV(cuMulticastBindMem, "cuMulticastBindMem", on_cuMulticastBindMem, KIND(VIRTUAL)),
    DRV(cuMulticastBindAddr, "cuMulticastBindAddr", on_cuMulticastBindAddr, KIND(VIRTUAL)),
    DRV(cuMulticastUnbind, "cuMulticastUnbind", on_cuMulticastUnbind, KIND(VIRTUAL)),
    DRV(cuMemAddressReserve, "cuMemAddressReserve", on_cuMemAddressReserve, KIND(RESERVED)),
    RT(cudaMallocArray_v3020, "cudaMallocArray", on_cudaMallocArray, KIND(ARRAY)),
    DRV(cuArrayCreate_v2, "cuArrayCreate", on_cuArrayCreate, KIND(ARRAY)),
    RT(cudaMalloc3DArray_v3020, "cudaMalloc3DArray", on_cudaMalloc3DArray, KIND(ARRAY)),
    DRV(cuArray3DCreate_v2, "cuArray3DCreate", on_cuArray3DCreate, KIND(ARRAY)),
    RT(cudaMallocMipmappedArray_v5000, "cudaMallocMipmappedArray", on_cudaMallocMipmappedArray,
       KIND(MIPMAPPED)),
    DRV(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", on_cuMipmappedArrayCreate,
        KIND(MIPMAPPED)),
    /* stream-ordered allocations (a node of the graph being captured, on a capturing stream):
     * ARG says whether stream 0 is the per-thread stream */
    RT(cudaMallocAsync_v11020, "cudaMallocAsync", on_cudaMallocAsync, LEGACY_STREAM),
    RT(cudaMallocAsync_ptsz_v11020, "cudaMallocAsync", on_cudaMallocAsync, PER_THREAD),
    DRV(cuMemAllocAsync, "cuMemAllocAsync", on_cuMemAllocAsync, LEGACY_STREAM),
    DRV(cuMemAllocAsync_ptsz, "cuMemAllocAsync", on_cuMemAllocAsync, PER_THREAD),
    RT(cudaMallocFromPoolAsync_v11020, "cudaMallocFromPoolAsync", on_cudaMallocFromPoolAsync,
       LEGACY_STREAM),
    RT(cudaMallocFromPoolAsync_ptsz_v11020, "cudaMallocFromPoolAsync",
       on_cudaMallocFromPoolAsync, PER_THREAD),
    DRV(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", on_cuMemAllocFromPoolAsync,
        LEGACY_STREAM),
    DRV(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", on_cuMemAllocFromPoolAsync,
        PER_THREAD),
    /* releases: the kinds each may release are its name's in src/kinds.def */
    RT(cudaFree_v3020, "cudaFree", on_cudaFree, 0),
    DRV(cuMemFree_v2, "cuMemFree", on_cuMemFree, 0),
    RT(cudaFreeHost_v3020, "cudaFreeHost", on_cudaFreeHost, 0),
    DRV(cuMemFreeHost, "cuMemFreeHost", on_cuMemFreeHost, 0),
    RT(cudaHostUnregister_v4000, "cudaHostUnregister", on_cudaHostUnregister, 0),
    DRV(cuMemHostUnregister, "cuMemHostUnregister", on_cuMemHostUnregister, 0),
    DRV(cuMemRelease, "cuMemRelease", on_cuMemRelease, 0),
    DRV(cuMemUnmap, "cuMemUnmap", on_cuMemUnmap, 0),
    DRV(cuMemAddressFree, "cuMemAddressFree", on_cuMemAddressFree, 0),
    RT(cudaFreeArray_v3020, "cudaFreeArray", on_cudaFreeArray, 0),
    DRV(cuArrayDestroy, "cuArrayDestroy", on_cuArrayDestroy, 0),
    RT(cudaFreeMipmappedArray_v5000, "cudaFreeMipmappedArray", on_cudaFreeMipmappedArray,
       0),
    DRV(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", on_cuMipmappedArrayDestroy,
        0),
    /* stream-ordered releases: ARG as for the allocations */
    RT(cudaFreeAsync_v11020, "cudaFreeAsync", on_cudaFreeAsync, LEGACY_STREAM),
    RT(cudaFreeAsync_ptsz_v11020, "cudaFreeAsync", on_cudaFreeAsync, PER_THREAD),
    DRV(cuMemFreeAsync, "cuMemFreeAsync", on_cuMemFreeAsync, LEGACY_STREAM),
    DRV(cuMemFreeAsync_ptsz, "cuMemFreeAsync", on_cuMemFreeAsync, PER_THREAD),
    /* all of a device's memory at once */
    RT(cudaDeviceReset_v3020, "cudaDeviceReset", on_cudaDeviceReset, 0),
    DRV(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", on_cuDevicePrimaryCtxReset, 0),
    DRV(cuCtxDestroy_v2, "cuCtxDestroy", on_cuCtxDestroy, 0),
    /* graph memory: memory nodes, captures, instantiation, launches */
    RT(cudaGraphAddMemAllocNode_v11040, "cudaGraphAddMemAllocNode", on_cudaGraphAddMemAllocNode, 0),
    DRV(cuGraphAddMemAllocNode, "cuGraphAddMemAllocNode", on_cuGraphAddMemAllocNode, 0),
    RT(cudaGraphAddMemFreeNode_v11040, "cudaGraphAddMemFreeNode", on_cudaGraphAddMemFreeNode, 0),
    DRV(cuGraphAddMemFreeNode, "cuGraphAddMemFreeNode", on_cuGraphAddMemFreeNode, 0),
#if CUDA_VERSION >= 12030
    RT(cudaGraphAddNode_v12030, "cudaGraphAddNode", on_cudaGraphAddNode, 0),
    DRV(cuGraphAddNode, "cuGraphAddNode", on_cuGraphAddNode, 0),
    DRV(cuGraphAddNode_v2, "cuGraphAddNode", on_cuGraphAddNode_v2, 0),
#endif
    RT(cudaStreamEndCapture_v10000, "cudaStreamEndCapture", on_cudaStreamEndCapture, LEGACY_STREAM),
    RT(cudaStreamEndCapture_ptsz_v10000, "cudaStreamEndCapture", on_cudaStreamEndCapture,
       PER_THREAD),
    DRV(cuStreamEndCapture, "cuStreamEndCapture", on_cuStreamEndCapture, LEGACY_STREAM),
    DRV(cuStreamEndCapture_ptsz, "cuStreamEndCapture", on_cuStreamEndCapture, PER_THREAD),
    /* ARG: whether the call has flags */
    RT(cudaGraphInstantiate_v10000, "cudaGraphInstantiate", on_cudaGraphInstantiate, 0),
    RT(cudaGraphInstantiate_v12000, "cudaGraphInstantiate", on_cudaGraphInstantiate, 1),
    RT(cudaGraphInstantiateWithFlags_v11040, "cudaGraphInstantiateWithFlags",
       on_cudaGraphInstantiate, 1),
    DRV(cuGraphInstantiate, "cuGraphInstantiate", on_cuGraphInstantiate, 0),
    DRV(cuGraphInstantiate_v2, "cuGraphInstantiate", on_cuGraphInstantiate, 0),
    DRV(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", on_cuGraphInstantiateWithFlags,
        0),
    RT(cudaGraphInstantiateWithParams_v12000, "cudaGraphInstantiateWithParams",
       on_cudaGraphInstantiateWithParams, 0),
    RT(cudaGraphInstantiateWithParams_ptsz_v12000, "cudaGraphInstantiateWithParams",
       on_cudaGraphInstantiateWithParams, 0),
    DRV(cuGraphInstantiateWithParams, "cuGraphInstantiateWithParams",
        on_cuGraphInstantiateWithParams, 0),
    DRV(cuGraphInstantiateWithParams_ptsz, "cuGraphInstantiateWithParams",
        on_cuGraphInstantiateWithParams, 0),
    RT(cudaGraphLaunch_v10000, "cudaGraphLaunch", on_cudaGraphLaunch, 0),
    RT(cudaGraphLaunch_ptsz_v10000, "cudaGraphLaunch", on_cudaGraphLaunch, 0),
    DRV(cuGraphLaunch, "cuGraphLaunch", on_cuGraphLaunch, 0),
    DRV(cuGraphLaunch_ptsz, "cuGraphLaunch", on_cuGraphLaunch_ptsz, 0),
    RT(cudaGraphExecDestroy_v10000, "cudaGraphExecDestroy", on_cudaGraphExecDestroy, 0),
    DRV(cuGraphExecDestroy, "cuGraphExecDestroy", on_cuGraphExecDestroy, 0),
    RT(cudaGraphDestroy_v10000, "cudaGraphDestroy", on_cudaGraphDestroy, 0),
    DRV(cuGraphDestroy, "cuGraphDestroy", on_cuGraphDestroy, 0),
};

/* A callback's row, by its id: filled from calls[] when the callbacks are enabled. */
static const call *runtime_row[CUPTI_RUNTIME_TRACE_CBID_SIZE];
static const call *driver_row[CUPTI_DRIVER_TRACE_CBID_SIZE];

const check_cupti_call *check__cupti_row(CUpti_CallbackDomain dom, CUpti_CallbackId id)
{
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
        return id < CUPTI_RUNTIME_TRACE_CBID_SIZE ? runtime_row[id] : NULL;
    return id < CUPTI_DRIVER_TRACE_CBID_SIZE ? driver_row[id] : NULL;
}


void check__cupti_enable_rows(CUpti_SubscriberHandle sub)
{
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        const call *r = &calls[i];
        if (r->dom == CUPTI_CB_DOMAIN_RUNTIME_API)
            runtime_row[r->id] = r;
        else
            driver_row[r->id] = r;
        cuptiEnableCallback(1, sub, r->dom, r->id);
    }
}

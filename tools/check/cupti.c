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
#include "settings.h"

/* ---- the driver calls gpumem check makes itself ---- */

static struct {
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_free_host)(void *);
    CUresult (*host_unregister)(void *);
    CUresult (*stream_capture_info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*get_error_string)(CUresult, const char **);
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
    *(void **)(&drv.get_error_name) = dlsym(h, "cuGetErrorName");
    *(void **)(&drv.get_error_string) = dlsym(h, "cuGetErrorString");
}

static int current_device(void)
{
    CUdevice d = 0;
    check_tls_busy++; /* a call of gpumem check's own: its failure (no context) is not the program's */
    CUresult rc = drv.ctx_get_device ? drv.ctx_get_device(&d) : CUDA_ERROR_NOT_INITIALIZED;
    check_tls_busy--;
    return rc == CUDA_SUCCESS ? (int)d : 0;
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

/* Failed calls (on_call): whether they are watched; per thread, the findings reported when the
 * call in flight began, and whether a handler decided its failure is no error. */
static int watch_failures;
static _Thread_local unsigned call_reports __attribute__((tls_model("initial-exec")));
static _Thread_local int failure_handled __attribute__((tls_model("initial-exec")));

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
static _Thread_local uint32_t reset_stack __attribute__((tls_model("initial-exec")));

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

/* ---- the calls watched: one table ---- */

/* A row of the table: a call of the runtime or the driver API and what its callbacks do. The
 * handler gets its row (the call's name as the report gives it, and ARG: the kind of what an
 * allocation makes, the kinds a release may release, or PER_THREAD where stream 0 is the
 * per-thread default stream: the _ptsz forms), the callback's data, and whether the call is
 * being entered (else it has returned). InitializeInjection subscribes to the rows' calls and
 * on_call finds a callback's row by its id. */
typedef struct call call;
typedef void call_fn(const call *r, const CUpti_CallbackData *cd, int enter);
struct call {
    CUpti_CallbackDomain dom;
    CUpti_CallbackId id;
    const char *name;
    call_fn *fn;
    unsigned arg;
};
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
        reset_device = current_device();
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
    return l && l->type == CU_MEM_LOCATION_TYPE_DEVICE ? l->id : current_device();
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
        failure_handled = 1, check_call_probed(r->name, rc);
    else
        check_alloc(r->name, GPUMEM_KIND_VIRTUAL, 0, a->size, device, rc, gpumem__stack_capture(0));
}
ON(on_cuMemImportFromShareableHandle)
{
    const cuMemImportFromShareableHandle_params *a = P(cuMemImportFromShareableHandle);
    if (succeeded(r, cd, enter))
        check_vmm_handle(r->name, *a->handle, 0, current_device(), gpumem__stack_capture(0));
}
ON(on_cuMulticastCreate)
{
    const cuMulticastCreate_params *a = P(cuMulticastCreate);
    if (succeeded(r, cd, enter))
        check_vmm_handle(r->name, *a->mcHandle, a->prop ? a->prop->size : 0, current_device(),
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
        if (drv.ctx_push && drv.ctx_pop && drv.ctx_push(ctx) == CUDA_SUCCESS) {
            reset_device = current_device();
            (void)drv.ctx_pop(&popped); /* pops what was pushed just above */
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

static const call *row_of(CUpti_CallbackDomain dom, CUpti_CallbackId id)
{
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
        return id < CUPTI_RUNTIME_TRACE_CBID_SIZE ? runtime_row[id] : NULL;
    return id < CUPTI_DRIVER_TRACE_CBID_SIZE ? driver_row[id] : NULL;
}

/* ---- failed calls ----
 *
 * With --failed-calls=error or note (the default is error), every runtime and driver call
 * comes through on_call, and one that returned an error is handed to the engine (calls.c),
 * unless a row of the table made a finding of it already (a failed allocation, a release
 * CUDA refused) or decided it is no error (handle_type_probe). A driver call the runtime
 * makes inside a runtime call is the runtime's business: the runtime call's own status says
 * whether it failed. */

static void call_begins(void)
{
    call_reports = check_tls_reports;
    failure_handled = 0;
}

static void call_ended(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    int rc = return_code(cd, dom);
    if (!rc || !watch_failures || failure_handled || check_tls_reports != call_reports ||
        rc == CUDA_ERROR_NOT_READY) /* the answer of a query, every time: the common case */
        return;
    const char *name = NULL, *text = NULL;
    check_tls_busy++; /* the driver's names for its statuses: calls of gpumem check's own */
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
        name = gpumem__cuda_error_name(rc);
        text = gpumem__cuda_error_string(rc);
    } else {
        if (drv.get_error_name)
            drv.get_error_name((CUresult)rc, &name);
        if (drv.get_error_string)
            drv.get_error_string((CUresult)rc, &text);
    }
    check_tls_busy--;
    check_call_failed(cd->functionName ? cd->functionName : "?", rc, name, text, 0);
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                             const void *data)
{
    (void)userdata;
    const CUpti_CallbackData *cd = data;
    if (check_tls_busy)
        return;
    const call *r = row_of(dom, id);
    int enter = cd->callbackSite == CUPTI_API_ENTER;
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
        if (enter && rt_depth++ == 0)
            call_begins();
        if (r)
            r->fn(r, cd, enter);
        if (!enter && --rt_depth == 0)
            call_ended(cd, dom);
    } else if (rt_depth == 0) {
        if (enter)
            call_begins();
        if (r)
            r->fn(r, cd, enter);
        if (!enter)
            call_ended(cd, dom);
    }
}

/* The calls whose failures are not watched unless --watch-calls=all: the ones frameworks make
 * for every operation, where a watched call costs (CUPTI calls a subscriber at the entry and at
 * the exit of every call it is enabled for: on an H200, watching every call made 20 000 empty
 * launches 23 % and a PyTorch training loop about 30 % slower). Their failures are a query's
 * answer (stream and event queries, capture status, pointer and device attributes, the
 * current context), the state of an earlier call (the last error), or the kernel launches'
 * own: a launch that fails is then seen only by the program's own check of it, or by
 * --watch-calls=all. Table rows (the memory calls) stay watched whatever this list says. */
static const struct {
    CUpti_CallbackDomain dom;
    CUpti_CallbackId id;
} hot_calls[] = {
#define HOT_RT(id) {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_##id}
#define HOT_DRV(id) {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##id}
    /* the runtime: launches and their configuration */
    HOT_RT(cudaLaunchKernel_v7000), HOT_RT(cudaLaunchKernel_ptsz_v7000),
    HOT_RT(cudaLaunchKernelExC_v11060), HOT_RT(cudaLaunchKernelExC_ptsz_v11060),
#if CUDA_VERSION >= 13000
    HOT_RT(__cudaPushCallConfiguration_v13000), HOT_RT(__cudaPopCallConfiguration_v13000),
#endif
    /* the runtime: errors, devices, streams, events, captures, pointers, functions */
    HOT_RT(cudaGetLastError_v3020), HOT_RT(cudaPeekAtLastError_v3020), HOT_RT(cudaGetDevice_v3020),
    HOT_RT(cudaSetDevice_v3020), HOT_RT(cudaDeviceGetAttribute_v5000),
    HOT_RT(cudaStreamQuery_v3020), HOT_RT(cudaStreamQuery_ptsz_v7000), HOT_RT(cudaEventQuery_v3020),
    HOT_RT(cudaEventRecord_v3020), HOT_RT(cudaEventRecord_ptsz_v7000),
    HOT_RT(cudaEventRecordWithFlags_v11010), HOT_RT(cudaEventRecordWithFlags_ptsz_v11010),
    HOT_RT(cudaStreamWaitEvent_v3020), HOT_RT(cudaStreamWaitEvent_ptsz_v7000),
    HOT_RT(cudaStreamGetPriority_v5050), HOT_RT(cudaStreamIsCapturing_v10000),
    HOT_RT(cudaStreamIsCapturing_ptsz_v10000), HOT_RT(cudaStreamGetCaptureInfo_v10010),
    HOT_RT(cudaStreamGetCaptureInfo_ptsz_v10010), HOT_RT(cudaStreamGetCaptureInfo_v2_v11030),
    HOT_RT(cudaStreamGetCaptureInfo_v2_ptsz_v11030),
#if CUDA_VERSION >= 12030
    HOT_RT(cudaStreamGetCaptureInfo_v12030), HOT_RT(cudaStreamGetCaptureInfo_ptsz_v12030),
#endif
    HOT_RT(cudaPointerGetAttributes_v4000),
    /* the driver: the same, and the current context */
    HOT_DRV(cuLaunchKernel), HOT_DRV(cuLaunchKernel_ptsz), HOT_DRV(cuLaunchKernelEx),
    HOT_DRV(cuLaunchKernelEx_ptsz), HOT_DRV(cuCtxGetCurrent), HOT_DRV(cuCtxSetCurrent),
    HOT_DRV(cuCtxGetDevice), HOT_DRV(cuCtxPushCurrent_v2), HOT_DRV(cuCtxPopCurrent_v2),
    HOT_DRV(cuCtxGetId), HOT_DRV(cuCtxGetStreamPriorityRange), HOT_DRV(cuDevicePrimaryCtxGetState),
    HOT_DRV(cuDeviceGetAttribute), HOT_DRV(cuStreamQuery), HOT_DRV(cuStreamQuery_ptsz),
    HOT_DRV(cuEventQuery), HOT_DRV(cuEventRecord), HOT_DRV(cuEventRecord_ptsz),
    HOT_DRV(cuEventRecordWithFlags), HOT_DRV(cuEventRecordWithFlags_ptsz),
    HOT_DRV(cuStreamWaitEvent), HOT_DRV(cuStreamWaitEvent_ptsz), HOT_DRV(cuStreamGetCtx),
    HOT_DRV(cuStreamGetId), HOT_DRV(cuStreamGetId_ptsz), HOT_DRV(cuStreamIsCapturing),
    HOT_DRV(cuStreamIsCapturing_ptsz), HOT_DRV(cuStreamGetCaptureInfo),
    HOT_DRV(cuStreamGetCaptureInfo_ptsz), HOT_DRV(cuStreamGetCaptureInfo_v2),
    HOT_DRV(cuStreamGetCaptureInfo_v2_ptsz), HOT_DRV(cuGetProcAddress), HOT_DRV(cuGetProcAddress_v2),
    HOT_DRV(cuPointerGetAttribute), HOT_DRV(cuPointerGetAttributes), HOT_DRV(cuFuncGetAttribute),
    HOT_DRV(cuFuncSetAttribute), HOT_DRV(cuOccupancyMaxActiveBlocksPerMultiprocessor),
    HOT_DRV(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags),
#if CUDA_VERSION >= 12030
    HOT_DRV(cuStreamGetCtx_v2), HOT_DRV(cuStreamGetCaptureInfo_v3),
    HOT_DRV(cuStreamGetCaptureInfo_v3_ptsz),
#endif
#if CUDA_VERSION >= 13000
    HOT_DRV(cuCtxGetDevice_v2),
#endif
#undef HOT_RT
#undef HOT_DRV
};

/* Subscribes on_call to every call of the table and, when failures are watched, to every
 * other call of both APIs (but the hot ones, unless --watch-calls=all). */
static void enable_calls(CUpti_SubscriberHandle sub)
{
    watch_failures = check_failed_calls_mode() != CHECK_CALLS_NO;
    if (watch_failures) {
        cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
        if (!check_watch_all_calls())
            for (size_t i = 0; i < sizeof hot_calls / sizeof *hot_calls; i++)
                cuptiEnableCallback(0, sub, hot_calls[i].dom, hot_calls[i].id);
    } /* the table's rows, enabled below, are watched either way */
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
        const call *r = &calls[i];
        if (r->dom == CUPTI_CB_DOMAIN_RUNTIME_API)
            runtime_row[r->id] = r;
        else
            driver_row[r->id] = r;
        cuptiEnableCallback(1, sub, r->dom, r->id);
    }
}

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

/* The process that CUDA injected this library into: a child made by vfork() shares its memory
 * but is not it, and must not end its report. */
static pid_t injected_pid;

int check_front_ending(const char *how, int code)
{
    if (!injected || getpid() != injected_pid)
        return 0;
    check_finish(how, code);
    return 1;
}

void check_front_exec_failed(void)
{
    check_exec_failed();
}

void check_front_preloaded(void)
{
    check_settings_start_dir();
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
    injected_pid = getpid();
    pthread_atfork(NULL, NULL, after_fork_in_child);
    check_setup();
    check_started();
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
    enable_calls(sub);
    on_exit(on_exit_report, NULL);
    catch_fatal_signals();
    return 1;
}

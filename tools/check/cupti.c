/* gpumem check's CUDA front end: CUPTI callbacks on the CUDA API, turned into engine events.
 *
 * libcuda loads this library at its initialization when CUDA_INJECTION64_PATH names it, and
 * calls InitializeInjection, which subscribes to the allocation and release calls of the
 * runtime and driver APIs (the table of cupti_calls.c) and, to see every failed call, to the
 * others. That works whether the program carries the runtime statically
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
#include "cupti_int.h"
#include "front.h"
#include "graphs.h"
#include "internal.h"
#include "settings.h"

void check_front_release(int kind, void *p, void (*pass_free)(void *))
{
    check_tls_busy++; /* these calls are gpumem check's, not the program's */
    /* The release the program should have made, in place of its free(), which returns
     * nothing: there is no one to give a failure to (the mismatch is reported already). */
    if (kind == GPUMEM_KIND_PINNED || kind == GPUMEM_KIND_HOST) {
        if (check__drv.mem_free_host)
            (void)check__drv.mem_free_host(p);
    } else if (kind == GPUMEM_KIND_MANAGED) {
        if (check__drv.mem_free)
            (void)check__drv.mem_free((CUdeviceptr)(uintptr_t)p);
    } else if (kind == GPUMEM_KIND_REGISTERED) {
        if (check__drv.host_unregister)
            (void)check__drv.host_unregister(p);
        pass_free(p);
    }
    check_tls_busy--;
}

/* Failed calls (on_call): whether they are watched; per thread, the findings reported when the
 * call in flight began, and whether a handler decided its failure is no error. */
static int watch_failures, count_calls;
static _Thread_local unsigned call_reports __attribute__((tls_model("initial-exec")));
static _Thread_local int rt_depth __attribute__((tls_model("initial-exec")));

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
    check__failure_handled = 0;
}

static void call_ended(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    int rc = return_code(cd, dom);
    if (!rc || !watch_failures || check__failure_handled || check_tls_reports != call_reports ||
        rc == CUDA_ERROR_NOT_READY) /* the answer of a query, every time: the common case */
        return;
    const char *name = NULL, *text = NULL;
    check_tls_busy++; /* the driver's names for its statuses: calls of gpumem check's own */
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
        name = gpumem__cuda_error_name(rc);
        text = gpumem__cuda_error_string(rc);
    } else {
        if (check__drv.get_error_name)
            check__drv.get_error_name((CUresult)rc, &name);
        if (check__drv.get_error_string)
            check__drv.get_error_string((CUresult)rc, &text);
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
    const check_cupti_call *r = check__cupti_row(dom, id);
    int enter = cd->callbackSite == CUPTI_API_ENTER;
    if (GPUMEM__UNLIKELY(count_calls) && enter)
        check_call_seen(dom == CUPTI_CB_DOMAIN_DRIVER_API, id, cd->functionName);
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
 * current context, function lookups), the state of an earlier call (the last error), or the
 * kernel launches' own and their kind's (graph kernel-node updates, host functions, tensor-map
 * encodings): such a call that fails is then seen only by the program's own check of it, or
 * by --watch-calls=all. Table rows (the memory calls) stay watched whatever this list says. */
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
    HOT_RT(cudaPointerGetAttributes_v4000), HOT_RT(cudaGetFuncBySymbol_v11000),
    HOT_RT(cudaOccupancyMaxActiveClusters_v11070),
    /* the runtime: kernel-node updates of an instantiated graph and host functions, which
     * XLA makes for every step (a JAX training step on an H100: 15 and 7 of its 33 calls) */
    HOT_RT(cudaGraphExecKernelNodeSetParams_v10010), HOT_RT(cudaLaunchHostFunc_v10000),
    HOT_RT(cudaLaunchHostFunc_ptsz_v10000),
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
    HOT_DRV(cuOccupancyMaxActiveClusters), HOT_DRV(cuKernelGetFunction),
    HOT_DRV(cuKernelGetAttribute), HOT_DRV(cuGraphExecKernelNodeSetParams),
    HOT_DRV(cuGraphExecKernelNodeSetParams_v2), HOT_DRV(cuLaunchHostFunc),
    HOT_DRV(cuLaunchHostFunc_ptsz), HOT_DRV(cuTensorMapEncodeTiled),
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
    count_calls = check_count_calls();
    if (watch_failures) {
        cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
        if (!check_watch_all_calls())
            for (size_t i = 0; i < sizeof hot_calls / sizeof *hot_calls; i++)
                cuptiEnableCallback(0, sub, hot_calls[i].dom, hot_calls[i].id);
    } /* the table's rows are watched either way */
    check__cupti_enable_rows(sub);
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
    check__load_driver();
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

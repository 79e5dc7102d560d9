/* What gpumem check's CUPTI front end shares between its files, in layer order: driver.c (the
 * driver calls gpumem check makes itself), cupti_calls.c (the table of the memory calls it
 * watches, and their handlers) and cupti.c (the subscription, the failed calls, the process's
 * end), each calling only the ones before it. Only in libgpumem_check.so. */
#ifndef GPUMEM_CHECK_CUPTI_INT_H
#define GPUMEM_CHECK_CUPTI_INT_H

#include <cuda.h>
#include <cupti.h>

/* The driver calls gpumem check makes itself (driver.c; loaded when CUDA starts, NULL where the
 * driver lacks one). Each is made with check_tls_busy raised. */
struct check_cupti_driver {
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_free_host)(void *);
    CUresult (*host_unregister)(void *);
    CUresult (*stream_capture_info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
    CUresult (*get_error_name)(CUresult, const char **);
    CUresult (*get_error_string)(CUresult, const char **);
};
extern struct check_cupti_driver check__drv;
/* Fills check__drv from the libcuda already loaded (InitializeInjection). */
void check__load_driver(void);

/* The device of the calling thread's current context, or 0. */
int check__current_device(void);

/* Set by a handler whose call failed in a way that is no error (a probe it recognized): the
 * failed-call watch (cupti.c) then says nothing of it. Per thread, for the call in flight;
 * defined beside the handlers (cupti_calls.c). */
extern _Thread_local int check__failure_handled __attribute__((tls_model("initial-exec")));

/* The call's status: a cudaError_t or a CUresult, 0 for success in both. */
static inline int return_code(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    /* NULL for calls returning void: never dereference it blindly. */
    if (!cd->functionReturnValue)
        return 0;
    return dom == CUPTI_CB_DOMAIN_RUNTIME_API ? (int)*(const cudaError_t *)cd->functionReturnValue
                                              : (int)*(const CUresult *)cd->functionReturnValue;
}

static inline int returned_ok(const CUpti_CallbackData *cd, CUpti_CallbackDomain dom)
{
    return return_code(cd, dom) == 0;
}


/* A row of the table: a call of the runtime or the driver API and what its callbacks do. The
 * handler gets its row (the call's name as the report gives it, and ARG: the kind of what an
 * allocation makes, or PER_THREAD where stream 0 is the per-thread default stream: the _ptsz
 * forms), the callback's data, and whether the call is being entered (else it has returned). */
typedef struct check_cupti_call check_cupti_call;
struct check_cupti_call {
    CUpti_CallbackDomain dom;
    CUpti_CallbackId id;
    const char *name;
    void (*fn)(const check_cupti_call *r, const CUpti_CallbackData *cd, int enter);
    unsigned arg;
};

/* A callback's row, by its id; NULL for a call the table does not have. */
const check_cupti_call *check__cupti_row(CUpti_CallbackDomain dom, CUpti_CallbackId id);
/* Subscribes sub to every call of the table (and makes check__cupti_row answer). */
void check__cupti_enable_rows(CUpti_SubscriberHandle sub);

#endif

/* The CUDA driver calls gpumem check makes itself (cupti_int.h): looked up in the libcuda the
 * program loaded, once CUDA has started. Below both CUPTI files: the subscription (cupti.c)
 * and the table's handlers (cupti_calls.c) call them. Only in libgpumem_check.so. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "cupti_int.h"
#include "engine.h"

struct check_cupti_driver check__drv;

void check__load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        return;
    *(void **)(&check__drv.ctx_get_device) = dlsym(h, "cuCtxGetDevice");
    *(void **)(&check__drv.ctx_push) = dlsym(h, "cuCtxPushCurrent_v2");
    *(void **)(&check__drv.ctx_pop) = dlsym(h, "cuCtxPopCurrent_v2");
    *(void **)(&check__drv.mem_free) = dlsym(h, "cuMemFree_v2");
    *(void **)(&check__drv.mem_free_host) = dlsym(h, "cuMemFreeHost");
    *(void **)(&check__drv.host_unregister) = dlsym(h, "cuMemHostUnregister");
    /* The first form (status and id), which every driver since CUDA 10.1 exports. */
    *(void **)(&check__drv.stream_capture_info) = dlsym(h, "cuStreamGetCaptureInfo");
    *(void **)(&check__drv.get_error_name) = dlsym(h, "cuGetErrorName");
    *(void **)(&check__drv.get_error_string) = dlsym(h, "cuGetErrorString");
}

int check__current_device(void)
{
    CUdevice d = 0;
    check_tls_busy++; /* a call of gpumem check's own: its failure (no context) is not the program's */
    CUresult rc = check__drv.ctx_get_device ? check__drv.ctx_get_device(&d) : CUDA_ERROR_NOT_INITIALIZED;
    check_tls_busy--;
    return rc == CUDA_SUCCESS ? (int)d : 0;
}

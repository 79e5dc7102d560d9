/* The program's own CUDA calls, checked: GPUMEM_CHECK (gpumem_check_at), with the
 * out-of-memory context of checkpoint.c, and GPUMEM_CHECK_LAUNCH's gpumem_sync_launch. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int gpumem_sync_launch(void)
{
    gpumem__init_once(); /* the option only; a missing device is the launch's to report */
    return gpumem__opt_bool(GPUMEM__OPT_SYNC_LAUNCH);
}

int gpumem_check_at(int status, const char *expr, gpumem_site site)
{
    if (GPUMEM__LIKELY(status == 0))
        return 0;
    if (status < 0) {
        /* A gpumem call failed inside expr and has already reported the details through the
         * handler; keep its record's fields (sites, sizes) and make the message the one line
         * that says where the check was, so the details are not printed twice. */
        gpumem_error *e = gpumem__err_record();
        if (e->code != status)
            e = gpumem__err_begin(status, expr, site);
        e->checked = 1;
        snprintf(e->message, sizeof e->message, "gpumem: error: %s:%d: %s: %s: %s: %s",
                 site.file, site.line, site.func, expr, gpumem_err_name(status),
                 gpumem_strerror(status));
        gpumem__err_raise(e);
        return status;
    }
    gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(status), expr, site);
    gpumem__err_cuda(e, status);
    e->checked = 1;
    snprintf(e->message, sizeof e->message, "gpumem: error: %s:%d: %s: %s: %s: %s", site.file,
             site.line, site.func, expr, e->cuda_name, e->cuda_string);
    if (status == cudaErrorMemoryAllocation)
        gpumem__err_oom(e, -1);
    gpumem__err_sticky_hint(e);
    gpumem__err_raise(e);
    return status;
}

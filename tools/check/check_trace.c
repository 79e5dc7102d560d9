/* gpumem check --trace (check_trace.h): where the trace goes, and its writer thread. The
 * events themselves are the library's trace hooks, called by the engine (events.c) where the
 * registry changes, so that the trace and the report always agree. */
#include "check_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "settings.h"
#include "trace.h"

/* The writer thread is gpumem check's own: what it does (allocate, write) is not the
 * program's and is not watched. */
static void writer_is_ours(void)
{
    check_tls_busy++;
}

void check_trace_setup(void)
{
    const char *path = check_setting_get(CHECK_SET_TRACE, NULL);
    if (!path)
        return;
    char full[4096];
    long root = strtol(check_setting_get(CHECK_SET_ROOT, "0"), NULL, 10);
    if (!strstr(path, "%p") && root && root != (long)getpid())
        snprintf(full, sizeof full, "%s.%ld", path, (long)getpid());
    else
        snprintf(full, sizeof full, "%s", path);
    gpumem__trace_open(full, "gpumem check", writer_is_ours);
}

/* gpumem check --trace (check_trace.h): where the trace goes, and its writer thread. The
 * events themselves are the library's trace hooks, called by the engine (events.c) where the
 * registry changes, so that the trace and the report always agree. */
#include "check_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rank.h"
#include "settings.h"
#include "trace.h"

void check_trace_setup(void (*writer_started)(void))
{
    const char *path = check_setting_path(CHECK_SET_TRACE);
    if (!path)
        return;
    /* %p and %r as in the other files' names (rank.h); a child of the program without either
     * gets ".PID", so that it writes a trace of its own. */
    char full[4096];
    long root = strtol(check_setting_value(CHECK_SET_ROOT), NULL, 10), pid = (long)getpid();
    check_rank r;
    check_rank_read(&r);
    int image = atoi(check_setting_value(CHECK_SET_IMAGE));
    if (check_path_expand(path, pid, r.rank, root && root != pid, image, full, sizeof full) != 0) {
        fprintf(stderr, "gpumem check: warning: --trace=%s is too long a name once %%p and %%r are "
                        "expanded; no trace is written\n", path);
        return;
    }
    gpumem__trace_set_rank(r.rank);
    gpumem__trace_open(full, "gpumem check", writer_started);
}

/* Shared by the library's tests: an error handler that records what it was given instead of
 * printing it, and the number of allocations live. Tests install it with
 * gpumem_set_error_handler(capture, NULL). */
#ifndef GPUMEM_TEST_CAPTURE_H
#define GPUMEM_TEST_CAPTURE_H

#include <stdio.h>
#include <string.h>

#include "gpumem.h"

static struct {
    int calls;                           /* failures reported since the last reset */
    int code;                            /* the last one's status */
    char message[sizeof(gpumem_error){0}.message];
    gpumem_error last;                   /* the last record, whole */
} seen;

static void capture(const gpumem_error *e, void *arg)
{
    (void)arg;
    seen.calls++;
    seen.code = e->code;
    seen.last = *e;
    snprintf(seen.message, sizeof seen.message, "%s", e->message);
}

static inline void reset_seen(void)
{
    memset(&seen, 0, sizeof seen);
}

static inline uint64_t live_total(void)
{
    gpumem_live l;
    gpumem_live_get(&l);
    return l.count[0];
}

#endif

/* Errors: the status table, the per-thread record and the replaceable handler.
 *
 * The record is filled by the function that detects the failure (it knows the sites, sizes
 * and kinds); callers only pass the status on. Error paths allocate nothing: the message is
 * built in the record's own buffer. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local gpumem_error tls_err;

static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static gpumem_error_handler handler_fn = gpumem_default_error_handler;
static void *handler_arg;

const char *gpumem_strerror(int code)
{
    if (code > 0) {
        const char *s = gpumem__cuda_error_string(code);
        return s ? s : "unknown CUDA error";
    }
    switch (code) {
#define GPUMEM__STATUS_TEXT(name, value, text)                                                   \
    case value:                                                                                  \
        return text;
        GPUMEM_STATUS_MAP(GPUMEM__STATUS_TEXT)
#undef GPUMEM__STATUS_TEXT
    }
    return "unknown status";
}

const char *gpumem_err_name(int code)
{
    if (code > 0) {
        const char *s = gpumem__cuda_error_name(code);
        return s ? s : "cudaErrorUnknownCode";
    }
    switch (code) {
#define GPUMEM__STATUS_NAME(name, value, text)                                                   \
    case value:                                                                                  \
        return "GPUMEM_" #name;
        GPUMEM_STATUS_MAP(GPUMEM__STATUS_NAME)
#undef GPUMEM__STATUS_NAME
    }
    return "GPUMEM_EUNKNOWN";
}

/* The kinds of kinds.def agree with gpumem.h's enum, value for value, and are all of it. */
#define KIND(id, value, name) _Static_assert(GPUMEM_KIND_##id == value, "kinds.def: " #id);
#include "kinds.def"
enum {
    kinds_listed = 1
#define KIND(id, value, name) +1
#include "kinds.def"
};
_Static_assert((int)kinds_listed == (int)GPUMEM_KIND_COUNT_, "kinds.def lists every gpumem_kind");

const char *gpumem_kind_name(int kind)
{
    static const char *names[GPUMEM_KIND_COUNT_] = {
        [GPUMEM_KIND_NONE] = "none",
#define KIND(id, value, name) [GPUMEM_KIND_##id] = name,
#include "kinds.def"
    };
    return kind >= 0 && kind < GPUMEM_KIND_COUNT_ ? names[kind] : "unknown";
}

const gpumem_error *gpumem_last_error(void)
{
    return &tls_err;
}

gpumem_error *gpumem__err_record(void)
{
    return &tls_err;
}

const char *gpumem__site_str(gpumem_site s, char *buf, size_t n)
{
    if (!s.file)
        snprintf(buf, n, "(unknown site)");
    else if (s.func && *s.func)
        snprintf(buf, n, "%s:%d (%s)", s.file, s.line, s.func);
    else
        snprintf(buf, n, "%s:%d", s.file, s.line);
    return buf;
}

void gpumem__err_clear(void)
{
    tls_err.code = GPUMEM_OK;
}

gpumem_error *gpumem__err_begin(int code, const char *expr, gpumem_site site)
{
    gpumem_error *e = &tls_err;
    memset(e, 0, offsetof(gpumem_error, message));
    e->code = code;
    e->expr = expr;
    e->site = site;
    snprintf(e->message, sizeof e->message, "gpumem: error: ");
    return e;
}

void gpumem__err_append(gpumem_error *e, const char *fmt, ...)
{
    size_t used = strlen(e->message);
    if (used + 1 >= sizeof e->message)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message + used, sizeof e->message - used, fmt, ap);
    va_end(ap);
}

void gpumem__err_cuda(gpumem_error *e, int cuda_error)
{
    e->cuda_error = cuda_error;
    e->cuda_name = gpumem__cuda_error_name(cuda_error);
    e->cuda_string = gpumem__cuda_error_string(cuda_error);
    if (!e->cuda_name)
        e->cuda_name = "cudaErrorUnknownCode";
    if (!e->cuda_string)
        e->cuda_string = "unknown CUDA error";
}

void gpumem__err_alloc(gpumem_error *e, const gpumem__rec *r)
{
    e->alloc_kind = r->kind;
    e->alloc_flags = r->flags;
    e->alloc_base = (void *)r->base;
    e->alloc_bytes = r->bytes;
    e->alloc_site = r->site;
    e->alloc_thread = r->thread;
    e->alloc_seq = r->seq;
    e->freed_site = r->freed_site;
    e->freed_thread = r->freed_thread;
}

int gpumem__status_from_cuda(int cuda_error)
{
    if (cuda_error == 0)
        return GPUMEM_OK;
    if (cuda_error == cudaErrorMemoryAllocation)
        return GPUMEM_ENOMEM;
    if (gpumem__cuda_error_is_sticky(cuda_error))
        return GPUMEM_ESTICKY;
    if (cuda_error == cudaErrorNoDevice || cuda_error == cudaErrorInsufficientDriver ||
        cuda_error == cudaErrorStubLibrary || cuda_error == cudaErrorDevicesUnavailable ||
        cuda_error == cudaErrorCudartUnloading)
        return GPUMEM_ENODEV;
    return GPUMEM_ECUDA;
}

void gpumem_set_error_handler(gpumem_error_handler fn, void *arg)
{
    pthread_mutex_lock(&handler_lock);
    handler_fn = fn ? fn : gpumem_default_error_handler;
    handler_arg = fn ? arg : NULL;
    pthread_mutex_unlock(&handler_lock);
}

void gpumem_get_error_handler(gpumem_error_handler *fn, void **arg)
{
    pthread_mutex_lock(&handler_lock);
    if (fn)
        *fn = handler_fn;
    if (arg)
        *arg = handler_arg;
    pthread_mutex_unlock(&handler_lock);
}

void gpumem__err_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        pthread_mutex_lock(&handler_lock);
    else
        pthread_mutex_unlock(&handler_lock);
}

/* "No usable CUDA device" is the same news for every call that meets it: the first says why
 * and what to do, and later ones only their first line (the record keeps the whole message). */
static atomic_int nodev_said;

void gpumem_default_error_handler(const gpumem_error *err, void *arg)
{
    (void)arg;
    const char *nl = strchr(err->message, '\n');
    if (err->code == GPUMEM_ENODEV && nl && atomic_exchange(&nodev_said, 1))
        fprintf(stderr, "%.*s (why: the first such error above)\n", (int)(nl - err->message),
                err->message);
    else
        fprintf(stderr, "%s\n", err->message);
    fflush(stderr);
    if (err->checked || gpumem__opt_bool(GPUMEM__OPT_ABORT_ON_ERROR))
        abort();
}

void gpumem__err_alloc_site(gpumem_error *e, const gpumem__rec *r)
{
    char where[256];
    gpumem__err_append(e, "\n    %-18s %s, thread %u, #%llu", "allocated at",
                       gpumem__site_str(r->site, where, sizeof where), r->thread,
                       (unsigned long long)r->seq);
}

int gpumem__err_sticky_hint(gpumem_error *e)
{
    if (e->code != GPUMEM_ESTICKY)
        return 0;
    gpumem__err_append(e, "\n  this error is sticky: the CUDA context is unusable and every "
                          "later CUDA call fails too; restart the process");
    return 1;
}

int gpumem__err_raise(gpumem_error *e)
{
    pthread_mutex_lock(&handler_lock);
    gpumem_error_handler fn = handler_fn;
    void *arg = handler_arg;
    pthread_mutex_unlock(&handler_lock);
    /* The handler gets a copy, and the record is put back afterwards: a handler may call
     * gpumem, which refills (or clears) this thread's record, and the failing call must still
     * return its own status and leave its own record. */
    gpumem_error snap = *e;
    fn(&snap, arg);
    *e = snap;
    return snap.code;
}

int gpumem__err_stream(FILE *out, int write_error, const char *fn)
{
    errno = 0;
    int e = write_error;
    if (fflush(out) != 0 && !e)
        e = errno ? errno : EIO;
    if (!e && ferror(out))
        e = EIO; /* an earlier write failed; its errno is gone */
    if (!e)
        return GPUMEM_OK;
    gpumem_error *err = gpumem__err_begin(GPUMEM_EIO, fn, (gpumem_site){NULL, NULL, 0});
    gpumem__err_append(err, "%s could not write to the stream it was given (%s): what it "
                            "wrote is incomplete\n  hint: free space where the stream goes "
                            "(a full disk?), or pass another stream", fn, strerror(e));
    return gpumem__err_raise(err);
}

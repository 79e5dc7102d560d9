/* Lazy, once-only initialization: options, then the backend.
 *
 * The simulated device is used only when chosen (GPUMEM_BACKEND=sim or
 * gpumem_backend_select("sim")): on a machine with a GPU, gpumem uses the GPU, and on one
 * without, every call reports GPUMEM_ENODEV with CUDA's reason rather than pretending. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "trace.h"

const gpumem__backend *_Atomic gpumem__be;

/* Options and the registry are set up once. The backend is initialized at first use and may
 * be initialized again only after it failed: a program may then choose the simulated device
 * explicitly (the demo does), but a working backend is never swapped under live memory. */
enum { BACKEND_NONE, BACKEND_UP, BACKEND_FAILED };
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int backend_state;
static const char *selected; /* gpumem_backend_select(), else GPUMEM_BACKEND */
static int init_cuda_error;  /* >0: CUDA's error; -1: no CUDA error (e.g. no driver) */
static char init_why[512];

static void init_once(void)
{
    gpumem__options_load();
    gpumem__reg_setup();
    gpumem__report_at_exit_setup();
    if (*gpumem__opt_str(GPUMEM__OPT_TRACE))
        gpumem__trace_open(gpumem__opt_str(GPUMEM__OPT_TRACE), "gpumem", NULL);
    gpumem__fork_setup(); /* the locks its handlers take are all set up now */
}

void gpumem__init_once(void)
{
    pthread_once(&once, init_once);
}

int gpumem_option_count(void)
{
    return GPUMEM__OPT_COUNT;
}

int gpumem_option_get(int i, const char **name, const char **value, const char **default_value,
                      const char **help)
{
    if (i < 0 || i >= GPUMEM__OPT_COUNT)
        return GPUMEM_EINVAL;
    gpumem__init_once(); /* reads the options; needs no device */
    const char *n, *d, *h;
    gpumem__opt_describe(i, &n, &d, &h);
    if (name)
        *name = n;
    if (value)
        *value = gpumem__opt_str(i);
    if (default_value)
        *default_value = d;
    if (help)
        *help = h;
    return GPUMEM_OK;
}

void gpumem__init_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        pthread_mutex_lock(&backend_lock);
    else
        pthread_mutex_unlock(&backend_lock);
}

/* Both backends, whichever is in use: a program may have started one, seen it fail, and
 * chosen the other. */
void gpumem__be_at_fork(int phase)
{
    gpumem__backend_sim.at_fork(phase);
    gpumem__backend_cuda.at_fork(phase);
}

int gpumem__backend_up(void)
{
    return atomic_load_explicit(&backend_state, memory_order_acquire) == BACKEND_UP;
}

/* Initializes the backend if nothing has been tried yet; returns the resulting state. */
static int backend_start(void)
{
    int state = atomic_load_explicit(&backend_state, memory_order_acquire);
    if (GPUMEM__LIKELY(state != BACKEND_NONE))
        return state;
    gpumem__init_once();
    pthread_mutex_lock(&backend_lock);
    state = atomic_load_explicit(&backend_state, memory_order_relaxed);
    if (state == BACKEND_NONE) {
        const char *name = selected ? selected : gpumem__opt_str(GPUMEM__OPT_BACKEND);
        gpumem__be = strcmp(name, "sim") == 0 ? &gpumem__backend_sim : &gpumem__backend_cuda;
        init_why[0] = '\0';
        init_cuda_error = gpumem__be->init(init_why, sizeof init_why);
        state = init_cuda_error ? BACKEND_FAILED : BACKEND_UP;
        atomic_store_explicit(&backend_state, state, memory_order_release);
    }
    pthread_mutex_unlock(&backend_lock);
    return state;
}

int gpumem__backend_try(void)
{
    return backend_start() == BACKEND_UP;
}

int gpumem__ready(const char *expr, gpumem_site site)
{
    if (GPUMEM__LIKELY(backend_start() == BACKEND_UP))
        return GPUMEM_OK;
    /* The reason, read under the lock: gpumem_backend_select may be starting another backend
     * on another thread, which rewrites it. */
    char why[sizeof init_why];
    pthread_mutex_lock(&backend_lock);
    int cuda_error = init_cuda_error;
    memcpy(why, init_why, sizeof why);
    pthread_mutex_unlock(&backend_lock);
    gpumem_error *e = gpumem__err_begin(GPUMEM_ENODEV, expr, site);
    if (cuda_error > 0)
        gpumem__err_cuda(e, cuda_error);
    char where[256] = "", site_text[240];
    if (site.file)
        snprintf(where, sizeof where, " at %s", gpumem__site_str(site, site_text, sizeof site_text));
    gpumem__err_append(e, "%s%s: no usable CUDA device\n    %s", expr, where, why);
    gpumem__err_append(e, "\n  hint: for tests without a GPU, choose the simulated device with "
                          "GPUMEM_BACKEND=sim");
    return gpumem__err_raise(e);
}

int gpumem_init(void)
{
    return gpumem__ready("gpumem_init", (gpumem_site){NULL, NULL, 0});
}

const char *gpumem_backend(void)
{
    backend_start();
    const gpumem__backend *be = gpumem__be;
    return be ? be->name : "cuda";
}

int gpumem_backend_select(const char *name)
{
    if (!name || (strcmp(name, "cuda") != 0 && strcmp(name, "sim") != 0))
        return GPUMEM_EINVAL;
    int rc = GPUMEM_OK;
    pthread_mutex_lock(&backend_lock);
    int state = atomic_load_explicit(&backend_state, memory_order_relaxed);
    if (state == BACKEND_UP && strcmp(gpumem__be->name, name) != 0) {
        rc = GPUMEM_EBUSY;
    } else if (state != BACKEND_UP) {
        selected = strcmp(name, "sim") == 0 ? "sim" : "cuda";
        atomic_store_explicit(&backend_state, BACKEND_NONE, memory_order_release);
    }
    pthread_mutex_unlock(&backend_lock);
    return rc;
}

uint64_t gpumem__now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

unsigned gpumem__thread_id(void)
{
    static atomic_uint next = 1;
    static _Thread_local unsigned id;
    if (GPUMEM__UNLIKELY(id == 0))
        id = atomic_fetch_add_explicit(&next, 1, memory_order_relaxed);
    return id;
}

/* Device queries are made by gpumem on the caller's behalf; no caller site is known. */
#define NO_SITE ((gpumem_site){NULL, NULL, 0})

static int device_query_failed(const char *fn, int ordinal, int err)
{
    gpumem_error *e = gpumem__err_begin(gpumem__status_from_cuda(err), fn, NO_SITE);
    gpumem__err_cuda(e, err);
    if (ordinal >= 0)
        gpumem__err_append(e, "%s(%d): CUDA failed with %s: %s", fn, ordinal, e->cuda_name,
                           e->cuda_string);
    else
        gpumem__err_append(e, "%s: CUDA failed with %s: %s", fn, e->cuda_name, e->cuda_string);
    gpumem__err_sticky_hint(e);
    return gpumem__err_raise(e);
}

int gpumem_device_count(void)
{
    if (gpumem__ready("gpumem_device_count", NO_SITE) != GPUMEM_OK)
        return 0;
    int n = 0;
    int err = gpumem__be->device_count(&n);
    if (err) {
        device_query_failed("gpumem_device_count", -1, err);
        return 0;
    }
    return n;
}

int gpumem_device_get(int ordinal, gpumem_device_info *out)
{
    static const char fn[] = "gpumem_device_get";
    int rc = gpumem__ready(fn, NO_SITE);
    if (rc != GPUMEM_OK)
        return rc;
    int n = 0;
    int err = gpumem__be->device_count(&n);
    if (err)
        return device_query_failed(fn, ordinal, err);
    if (ordinal < 0 || ordinal >= n || !out) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, NO_SITE);
        if (!out)
            gpumem__err_append(e, "%s(%d, NULL): no place to write the result", fn, ordinal);
        else
            gpumem__err_append(e, "%s(%d): device %d does not exist (%d device%s)", fn, ordinal,
                               ordinal, n, n == 1 ? "" : "s");
        return gpumem__err_raise(e);
    }
    gpumem_device_info d;
    memset(&d, 0, sizeof d);
    d.ordinal = ordinal;
    err = gpumem__be->device_get(ordinal, d.name, sizeof d.name, &d.total_bytes, &d.cc_major,
                                 &d.cc_minor);
    if (!err)
        err = gpumem__be->mem_info(ordinal, &d.free_bytes, &d.total_bytes);
    if (err)
        return device_query_failed(fn, ordinal, err);
    *out = d;
    return GPUMEM_OK;
}

/* An ordinal of a device that exists; else the record is filled (GPUMEM_EINVAL). */
static int check_ordinal(const char *fn, const char *what, int ordinal)
{
    int n = 0;
    int err = gpumem__be->device_count(&n);
    if (err)
        return device_query_failed(fn, ordinal, err);
    if (ordinal >= 0 && ordinal < n)
        return GPUMEM_OK;
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, NO_SITE);
    gpumem__err_append(e, "%s: %s %d does not exist (%d device%s, 0 to %d)\n  hint: "
                          "gpumem_device_count() says how many there are", fn, what, ordinal,
                       n, n == 1 ? "" : "s", n - 1);
    return gpumem__err_raise(e);
}

int gpumem_device_set(int ordinal)
{
    static const char fn[] = "gpumem_device_set";
    int rc = gpumem__ready(fn, NO_SITE);
    if (rc == GPUMEM_OK)
        rc = check_ordinal(fn, "device", ordinal);
    if (rc != GPUMEM_OK)
        return rc;
    int err = gpumem__be->set_device(ordinal);
    if (err)
        return device_query_failed(fn, ordinal, err);
    gpumem__err_clear();
    return GPUMEM_OK;
}

int gpumem_device_current(int *ordinal)
{
    static const char fn[] = "gpumem_device_current";
    if (!ordinal) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, NO_SITE);
        gpumem__err_append(e, "%s(NULL): no place to write the result", fn);
        return gpumem__err_raise(e);
    }
    int rc = gpumem__ready(fn, NO_SITE);
    if (rc != GPUMEM_OK)
        return rc;
    int dev = 0;
    int err = gpumem__be->current_device(&dev);
    if (err)
        return device_query_failed(fn, -1, err);
    *ordinal = dev;
    gpumem__err_clear();
    return GPUMEM_OK;
}

int gpumem_device_can_access_peer(int device, int peer, int *can)
{
    static const char fn[] = "gpumem_device_can_access_peer";
    if (!can) {
        gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, NO_SITE);
        gpumem__err_append(e, "%s(%d, %d, NULL): no place to write the result", fn, device, peer);
        return gpumem__err_raise(e);
    }
    int rc = gpumem__ready(fn, NO_SITE);
    if (rc == GPUMEM_OK)
        rc = check_ordinal(fn, "device", device);
    if (rc == GPUMEM_OK)
        rc = check_ordinal(fn, "peer device", peer);
    if (rc != GPUMEM_OK)
        return rc;
    int ok = 0;
    int err = gpumem__be->can_access_peer(device, peer, &ok);
    if (err)
        return device_query_failed(fn, device, err);
    *can = ok != 0;
    gpumem__err_clear();
    return GPUMEM_OK;
}

/* The hooks PyTorch, CuPy and Numba allocate through (gpumem_python.h).
 *
 * A library of its own beside libgpumem.so, not a part of it: it is the one place that knows
 * Python (it reads the caller's Python frame through the interpreter's own symbols, found at
 * run time), and libgpumem stays a C library that knows nothing of any framework. It uses
 * gpumem's public API only, and links libgpumem.so, so a process that loads both (the Python
 * package loads libgpumem through ctypes, PyTorch loads this library by path) has one
 * registry, one set of statistics and one leak report.
 *
 * Pools: one gpumem device pool per device, made at the first request for the device and
 * never destroyed: blocks may still be live when the process ends (the leak report lists
 * them), and a pool is cheap to keep. Streams are the pool's business: a block is released to
 * the cache of the stream the framework names, and a request on another stream never takes
 * it from there (docs/pools.md, "The rules"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpumem_python.h"

/* ---- pools ------------------------------------------------------------------------------ */

typedef struct far_pool { /* a device ordinal beyond the table: kept in a list */
    struct far_pool *next;
    int device;
    gpumem_pool *pool;
} far_pool;

static gpumem_pool *_Atomic pools[GPUMEM_STATS_DEVICES];
static atomic_ullong ooms[GPUMEM_STATS_DEVICES];
static far_pool *far_pools;
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;

static gpumem_pool **slot_locked(int device)
{
    if (device >= 0 && device < GPUMEM_STATS_DEVICES)
        return (gpumem_pool **)&pools[device];
    for (far_pool *f = far_pools; f; f = f->next)
        if (f->device == device)
            return &f->pool;
    return NULL;
}

/* Tensors a program leaves to the interpreter's exit, and the framework's own caches (cuBLAS
 * workspaces), are freed at its teardown or never: not leaks to report at exit. */
static const gpumem_pool_options_t runtime_owned = {.flags = GPUMEM_POOL_RUNTIME_OWNED};

/* The device's pool, made on first use (at @p site, the first request's). NULL with the record
 * set as gpumem_pool_create() sets it (no such device: its message names the device). */
static gpumem_pool *pool_of(int device, gpumem_site site)
{
    if (device >= 0 && device < GPUMEM_STATS_DEVICES) {
        gpumem_pool *p = atomic_load_explicit(&pools[device], memory_order_acquire);
        if (p)
            return p;
    }
    pthread_mutex_lock(&pools_lock);
    gpumem_pool **slot = slot_locked(device);
    gpumem_pool *pool = slot ? *slot : NULL;
    if (!pool) {
        pool = gpumem_pool_create_at(GPUMEM_KIND_DEVICE, device, &runtime_owned, site);
        far_pool *f = NULL;
        if (pool && device >= 0 && device < GPUMEM_STATS_DEVICES) {
            atomic_store_explicit(&pools[device], pool, memory_order_release);
        } else if (pool && (f = malloc(sizeof *f)) != NULL) {
            *f = (far_pool){far_pools, device, pool};
            far_pools = f;
        } else if (pool) { /* the list has no room: give up the pool and say so */
            gpumem_pool_destroy(pool);
            pool = NULL;
        }
    }
    pthread_mutex_unlock(&pools_lock);
    return pool;
}

/* ---- the Python caller's site ----------------------------------------------------------- */

/* The interpreter's functions, looked up in the process (the python3 executable or
 * libpython): this library does not link libpython, so it loads into any process, and it
 * finds no interpreter in one without Python. All but the thread state's unchecked read are in
 * Python's stable ABI since 3.10; that one is PyThreadState_GetUnchecked from 3.13 and
 * _PyThreadState_UncheckedGet (exported, private) before. */
typedef void pyobj;
static struct {
    int (*is_initialized)(void);
    void *(*this_thread_state)(void);          /* PyGILState_GetThisThreadState */
    void *(*current_thread_state)(void);       /* the state holding the GIL, or NULL */
    pyobj *(*current_frame)(void);             /* borrowed */
    pyobj *(*frame_code)(pyobj *frame);        /* new reference */
    pyobj *(*frame_back)(pyobj *frame);        /* new reference */
    int (*frame_line)(pyobj *frame);
    pyobj *(*getattr)(pyobj *o, const char *name);
    const char *(*utf8)(pyobj *s);
    void (*incref)(pyobj *o);
    void (*decref)(pyobj *o);
    void (*err_clear)(void);
    int found;
} py;
static pthread_once_t py_once = PTHREAD_ONCE_INIT;

static void py_resolve(void)
{
    void **fns[] = {(void **)&py.is_initialized, (void **)&py.this_thread_state,
                    (void **)&py.current_frame, (void **)&py.frame_code,
                    (void **)&py.frame_back, (void **)&py.frame_line, (void **)&py.getattr,
                    (void **)&py.utf8, (void **)&py.incref, (void **)&py.decref,
                    (void **)&py.err_clear};
    static const char *const names[] = {"Py_IsInitialized", "PyGILState_GetThisThreadState",
                                        "PyEval_GetFrame", "PyFrame_GetCode",
                                        "PyFrame_GetBack", "PyFrame_GetLineNumber",
                                        "PyObject_GetAttrString", "PyUnicode_AsUTF8",
                                        "Py_IncRef", "Py_DecRef", "PyErr_Clear"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if ((*fns[i] = dlsym(RTLD_DEFAULT, names[i])) == NULL)
            return;
    void *current = dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
    if (!current)
        current = dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
    if (!current)
        return;
    memcpy(&py.current_thread_state, &current, sizeof current);
    py.found = 1;
}

/* Whether the calling thread holds the GIL (in a free-threaded build: is attached to the
 * interpreter), for certain; only then may a Python object be touched.
 *
 * Not PyGILState_Check(): it answers 1 on every thread once a subinterpreter exists (CPython
 * turns its check off then, measured with 3.11: a hook called from a thread without the GIL
 * read a frame through a NULL thread state). Instead: the thread state that runs now, read
 * without checks (CPython 3.11 and older keep one for the whole process, the GIL holder's;
 * 3.12 and later one per thread, NULL while the thread is detached), must be this thread's
 * own (the thread-local one PyGILState keeps, which CPython clears when it deletes the state).
 * A thread running a subinterpreter on a thread state other than its first gets no Python
 * site: the answer is "no" whenever it is not certain. */
static int holds_gil(void)
{
    void *current = py.current_thread_state();
    return current && current == py.this_thread_state();
}

/* Strings a site points to must outlive the allocation (the registry keeps the pointers), so
 * file and function names are kept once each, for the life of the process: as many as there
 * are distinct allocating frames. */
typedef struct interned {
    struct interned *next;
    char text[];
} interned;
static interned *intern_table[1024];
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *intern(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = s; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    interned **bucket = &intern_table[h % (sizeof intern_table / sizeof *intern_table)];
    pthread_mutex_lock(&intern_lock);
    interned *i = *bucket;
    while (i && strcmp(i->text, s) != 0)
        i = i->next;
    size_t n = strlen(s) + 1;
    if (!i && (i = malloc(sizeof *i + n)) != NULL) {
        memcpy(i->text, s, n);
        i->next = *bucket;
        *bucket = i;
    }
    pthread_mutex_unlock(&intern_lock);
    return i ? i->text : NULL;
}

static char *_Atomic skip_dir;
static atomic_uint skip_gen; /* changes with skip_dir: the code cache's skip flags go stale */

void gpumem_python_skip_dir(const char *dir)
{
    char *copy = dir ? strdup(dir) : NULL;
    free(atomic_exchange(&skip_dir, copy));
    atomic_fetch_add(&skip_gen, 1);
}

/* How choosy a search for the caller's frame is: a frame of the gpumem package says less than
 * one of the framework that called it, and a framework's (an installed package's) less than
 * the program's own. */
enum { SKIP_PACKAGES, SKIP_GPUMEM, SKIP_NONE };


/* text with its control characters (C0, DEL, and C1 in UTF-8) written as \xNN, as gpumem's
 * text outputs write text from outside: a file named with an escape sequence must not reach a
 * terminal through a report. NULL when there is none to replace or no memory. */
static char *visible_copy(const char *text)
{
    size_t n = 0, controls = 0;
    for (const unsigned char *u = (const unsigned char *)text; *u; u++, n++)
        controls += *u < 0x20 || *u == 0x7f || (*u == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f);
    char *out = controls ? malloc(n + 6 * controls + 1) : NULL;
    if (!out)
        return NULL;
    char *o = out;
    for (const unsigned char *u = (const unsigned char *)text; *u; u++) {
        int c1 = *u == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f;
        if (*u < 0x20 || *u == 0x7f || c1) {
            o += sprintf(o, c1 ? "\\x%02x\\x%02x" : "\\x%02x", u[0], c1 ? u[1] : 0);
            u += c1;
        } else {
            *o++ = (char)*u;
        }
    }
    *o = '\0';
    return out;
}

static const char *code_str(pyobj *code, const char *attr)
{
    pyobj *str = py.getattr(code, attr);
    const char *text = str ? py.utf8(str) : NULL;
    char *shown = text ? visible_copy(text) : NULL;
    const char *kept = text ? intern(shown ? shown : text) : NULL;
    free(shown);
    if (str)
        py.decref(str);
    if (!kept)
        py.err_clear();
    return kept;
}

/* What a code object says of its frames, per thread, by the code object's address: reading
 * its file and name through the interpreter costs about a microsecond a walk (measured with the
 * simulated device by bench/python/site_cost.py: a CuPy-style pair, 2.0 us with the walk, 0.9
 * without). The entry holds a reference to its code object, so the address cannot be reused
 * while it is cached; only a thread holding the GIL touches it. */
typedef struct {
    pyobj *code;
    const char *file, *func; /* interned */
    unsigned gen;            /* skip_gen when the flags were read */
    unsigned char package;   /* the file is an installed package's, or frozen */
    unsigned char gpumem;    /* the file is under skip_dir */
} code_info;
static _Thread_local code_info code_cache[256];

static const code_info *code_info_of(pyobj *code)
{
    code_info *c = &code_cache[((uintptr_t)code >> 4) % (sizeof code_cache / sizeof *code_cache)];
    unsigned gen = atomic_load_explicit(&skip_gen, memory_order_relaxed);
    if (c->code == code && c->gen == gen)
        return c;
    const char *file = code_str(code, "co_filename");
    if (!file)
        return NULL;
    if (c->code)
        py.decref(c->code);
    py.incref(code);
    const char *dir = atomic_load(&skip_dir);
    *c = (code_info){code, file, code_str(code, "co_name"), gen,
                     strncmp(file, "<frozen ", 8) == 0 || strstr(file, "/site-packages/") ||
                         strstr(file, "/dist-packages/"),
                     dir && strncmp(file, dir, strlen(dir)) == 0};
    return c;
}

/* Fills @p out from @p frame unless its file is skipped at @p level; 1 when filled. */
static int frame_site(pyobj *frame, int level, gpumem_site *out)
{
    pyobj *code = py.frame_code(frame);
    if (!code)
        return 0;
    const code_info *c = code_info_of(code);
    int skipped = !c || (level != SKIP_NONE && (c->gpumem || (level == SKIP_PACKAGES && c->package)));
    if (!skipped) {
        out->file = c->file;
        out->func = c->func;
        out->line = py.frame_line(frame);
    }
    py.decref(code);
    return !skipped;
}

/* The innermost frame at the first level that has one: outside installed packages and the
 * gpumem package, else outside the gpumem package, else the innermost. */
static int frame_at_level(pyobj *frame, int level, gpumem_site *out)
{
    pyobj *f = frame;
    int found = 0;
    for (int depth = 0; f && !found && depth < 64; depth++) {
        found = frame_site(f, level, out);
        if (!found) {
            pyobj *back = py.frame_back(f);
            if (f != frame)
                py.decref(f);
            f = back;
        }
    }
    if (f && f != frame)
        py.decref(f);
    return found;
}

/* 0 when the thread does not hold the GIL (then no Python object may be touched) or runs no
 * Python. */
static int python_site(gpumem_site *out)
{
    pthread_once(&py_once, py_resolve);
    if (!py.found || !py.is_initialized() || !holds_gil())
        return 0;
    pyobj *frame = py.current_frame(); /* borrowed; the frames behind it are new references */
    if (!frame)
        return 0;
    return frame_at_level(frame, SKIP_PACKAGES, out) || frame_at_level(frame, SKIP_GPUMEM, out) ||
           frame_site(frame, SKIP_NONE, out);
}

/* ---- the hooks -------------------------------------------------------------------------- */

/* The Python caller's site when there is one, else the hook's own. */
static gpumem_site site_or(gpumem_site hook)
{
    gpumem_site site;
    return python_site(&site) ? site : hook;
}

static void *alloc_on(size_t bytes, int device, cudaStream_t stream, gpumem_site hook)
{
    gpumem_site site = site_or(hook);
    gpumem_pool *pool = pool_of(device, site);
    void *p = pool ? gpumem_pool_alloc_at(pool, 1, bytes, stream, site) : NULL;
    if (!p && gpumem_last_error()->code == GPUMEM_ENOMEM && device >= 0 &&
        device < GPUMEM_STATS_DEVICES)
        atomic_fetch_add(&ooms[device], 1);
    return p;
}

void *gpumem_torch_alloc(ssize_t size, int device, cudaStream_t stream)
{
    if (size <= 0)
        return NULL;
    void *p = alloc_on((size_t)size, device, stream, GPUMEM_SITE_HERE);
    if (!p) {
        /* PyTorch's pluggable allocator takes NULL for a tensor at address 0 (measured with
         * PyTorch 2.11: no exception, data_ptr() 0), and the next kernel on it faults and
         * poisons the CUDA context. Stopping here, with the reason, is the safe answer. */
        fprintf(stderr, "%s\ngpumem: error: PyTorch cannot be told that an allocation failed (its "
                        "pluggable allocator takes NULL for a tensor at address 0): stopping the "
                        "process (SIGABRT) instead\n",
                gpumem_last_error()->message);
        abort();
    }
    return p;
}

void gpumem_torch_free(void *ptr, ssize_t size, int device, cudaStream_t stream)
{
    (void)size;
    (void)device;
    gpumem_free_async_at(ptr, stream, site_or(GPUMEM_SITE_HERE));
}

void *gpumem_cupy_malloc(void *param, size_t size, int device)
{
    (void)param;
    return alloc_on(size, device, NULL, GPUMEM_SITE_HERE);
}

void gpumem_cupy_free(void *param, void *ptr, int device)
{
    (void)param;
    (void)device;
    gpumem_free_at(ptr, site_or(GPUMEM_SITE_HERE));
}

void *gpumem_python_alloc(size_t bytes, int device, cudaStream_t stream)
{
    return alloc_on(bytes, device, stream, GPUMEM_SITE_HERE);
}

int gpumem_python_free(void *ptr, cudaStream_t stream)
{
    return gpumem_free_async_at(ptr, stream, site_or(GPUMEM_SITE_HERE));
}

/* ---- the Python package's own calls ------------------------------------------------------ */

/* The package raises a failure of its own calls as gpumem.Error, so the handler does not print
 * it too (said once, not twice): the hooks' handler, put in front of the one in use when the
 * package first calls, passes on every failure but those of a thread inside such a call. With
 * GPUMEM_ABORT_ON_ERROR on, every failure is passed on (the default handler then aborts, as
 * asked). A handler set later by the program replaces this one; the package's errors are
 * then printed by it, as it decides, and raised. */
static _Thread_local int quiet;
static gpumem_error_handler chained;
static void *chained_arg;
static int abort_on_error;
static pthread_once_t handler_once = PTHREAD_ONCE_INIT;

static void package_handler(const gpumem_error *err, void *arg)
{
    (void)arg;
    if (!quiet || abort_on_error)
        chained(err, chained_arg);
}

static void handler_install(void)
{
    for (int i = 0; i < gpumem_option_count(); i++) {
        const char *name = NULL, *value = NULL;
        if (gpumem_option_get(i, &name, &value, NULL, NULL) == GPUMEM_OK &&
            strcmp(name, "GPUMEM_ABORT_ON_ERROR") == 0)
            abort_on_error = strcmp(value, "0") != 0 && strcasecmp(value, "off") != 0 &&
                             strcasecmp(value, "no") != 0 && strcasecmp(value, "false") != 0;
    }
    gpumem_get_error_handler(&chained, &chained_arg);
    gpumem_set_error_handler(package_handler, NULL);
}

/* The failure of the call just made, from the thread's record before anything else runs (a
 * finalizer that Python runs later may make a gpumem call that resets it). */
static void failure_take(int failed, gpumem_python_failure *why)
{
    if (!why)
        return;
    const gpumem_error *e = gpumem_last_error();
    why->code = failed ? e->code : GPUMEM_OK;
    snprintf(why->message, sizeof why->message, "%s", failed ? e->message : "");
}

void *gpumem_python_try_alloc(size_t bytes, int device, cudaStream_t stream,
                              gpumem_python_failure *why)
{
    pthread_once(&handler_once, handler_install);
    quiet++;
    void *p = alloc_on(bytes, device, stream, GPUMEM_SITE_HERE);
    failure_take(!p && gpumem_last_error()->code != GPUMEM_OK, why);
    quiet--;
    return p;
}

int gpumem_python_try_free(void *ptr, cudaStream_t stream, gpumem_python_failure *why)
{
    pthread_once(&handler_once, handler_install);
    quiet++;
    int rc = gpumem_free_async_at(ptr, stream, site_or(GPUMEM_SITE_HERE));
    failure_take(rc != GPUMEM_OK, why);
    quiet--;
    return rc;
}

/* ---- what the Python side reads ---------------------------------------------------------- */

int gpumem_python_error_code(void)
{
    return gpumem_last_error()->code;
}

const char *gpumem_python_error_message(void)
{
    return gpumem_last_error()->message;
}

int gpumem_python_pool_stats(int device, gpumem_pool_stats_t *out)
{
    if (!out)
        return GPUMEM_EINVAL;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&pools_lock);
    gpumem_pool **slot = slot_locked(device);
    gpumem_pool *pool = slot ? *slot : NULL;
    pthread_mutex_unlock(&pools_lock);
    return pool ? gpumem_pool_stats(pool, out) : GPUMEM_EINVAL;
}

unsigned long long gpumem_python_oom_count(int device)
{
    return device >= 0 && device < GPUMEM_STATS_DEVICES ? atomic_load(&ooms[device]) : 0;
}

char *gpumem_python_report(unsigned flags)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    gpumem_report(f, flags);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

void gpumem_python_string_free(char *s)
{
    free(s);
}

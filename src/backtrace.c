/* Allocation stacks: capture, deduplicate, symbolize on demand.
 *
 * Capture is on the allocation path, so it does as little as it can: the unwinder fills a
 * buffer of return addresses on the stack, a hash of them finds the stack in a global table
 * of chained buckets, and the stack's id is returned. Buckets are only ever prepended to and
 * nodes are never freed once published, so a lookup is a few acquire loads and needs no lock;
 * a stack seen before costs no allocation at all. A new stack is one malloc and one
 * compare-and-swap on its bucket.
 *
 * Names, files and lines are needed only by reports, which are rare, so they are looked up
 * the first time a stack is printed and kept with the stack. Symbolization is serialized by
 * one mutex because libdw's Dwfl is not thread-safe; a per-address cache makes the frames
 * that many stacks share (main, the caller of a hot allocation helper) cost once. Every
 * string handed out is our own copy, interned, and never freed: reports may run at exit and
 * after a library was unloaded, when libdw's own strings could be gone.
 *
 * Unwinding and symbolization come from well-kept libraries, never from our own DWARF code:
 * libunwind's unw_backtrace (when built with it; see docs/backtraces.md for why it is
 * preferred) or glibc's backtrace(), and elfutils libdw (dwfl_*) for names with file:line, or
 * dladdr() for exported names when libdw is missing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backtrace.h"
#include "internal.h"

/* Under ThreadSanitizer, libunwind's per-thread cache is freed by a thread-specific-data
 * destructor that locks a mutex after TSan has torn the exiting thread's state down, which
 * crashes inside TSan; TSan builds unwind with glibc's backtrace() instead. */
#if defined(__SANITIZE_THREAD__)
#define GPUMEM__UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GPUMEM__UNDER_TSAN 1
#endif
#endif
#if defined(GPUMEM_HAVE_LIBUNWIND) && defined(GPUMEM__UNDER_TSAN)
#undef GPUMEM_HAVE_LIBUNWIND
#endif

#if defined(GPUMEM_HAVE_LIBUNWIND)
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define GPUMEM__UNWINDER "libunwind"
#define HAVE_CAPTURE 1
#elif defined(__GLIBC__)
#include <execinfo.h>
#define GPUMEM__UNWINDER "backtrace()"
#define HAVE_CAPTURE 1
#else
#define HAVE_CAPTURE 0
#endif

#if defined(GPUMEM_HAVE_LIBDW)
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#define GPUMEM__SYMBOLIZER "libdw (file:line)"
#else
#define GPUMEM__SYMBOLIZER "dladdr (exported names only)"
#endif

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define NOINLINE
#define LIKELY(x) (x)
#endif

/* ---- the stack table ---- */

typedef struct {
    int n;
    gpumem__frame frames[];
} sym_stack;

typedef struct stack_node {
    struct stack_node *next; /* bucket chain; fixed once the node is published */
    uint64_t hash;
    uint32_t id;
    int depth;
    _Atomic(sym_stack *) sym; /* symbolized and trimmed frames, set once under sym_lock */
    uintptr_t pc[];
} stack_node;

/* 64 Ki buckets: a program has thousands of distinct allocation stacks, rarely more, so chains
 * stay short; the array is zero-initialized static storage, paged in only where touched. */
#define BUCKET_BITS 16
static _Atomic(stack_node *) buckets[1u << BUCKET_BITS];

/* id -> node, in chunks allocated on first use (ids are dense: one counter). */
#define ID_CHUNK_BITS 12
#define ID_CHUNK (1u << ID_CHUNK_BITS)
#define ID_CHUNKS 16384u
static _Atomic(_Atomic(stack_node *) *) id_chunks[ID_CHUNKS];
static atomic_uint next_id = 1;

/* Skips beyond this are clamped: they would only ever come from a mistake in the caller. */
#define MAX_SKIP 16

static _Atomic(stack_node *) *id_slot(uint32_t id, int create)
{
    uint32_t c = id >> ID_CHUNK_BITS;
    if (id == 0 || c >= ID_CHUNKS)
        return NULL;
    _Atomic(stack_node *) *chunk = atomic_load_explicit(&id_chunks[c], memory_order_acquire);
    if (!chunk && create) {
        _Atomic(stack_node *) *fresh = calloc(ID_CHUNK, sizeof *fresh);
        if (!fresh)
            return NULL;
        _Atomic(stack_node *) *expected = NULL;
        if (atomic_compare_exchange_strong_explicit(&id_chunks[c], &expected, fresh,
                                                    memory_order_acq_rel, memory_order_acquire)) {
            chunk = fresh;
        } else {
            free(fresh); /* another thread made this chunk first */
            chunk = expected;
        }
    }
    return chunk ? &chunk[id & (ID_CHUNK - 1)] : NULL;
}

static uint64_t hash_pcs(const uintptr_t *pc, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15u ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)pc[i];
        h *= 0xff51afd7ed558ccdu;
        h ^= h >> 32;
    }
    return h;
}

/* The node in chain `head` (up to, not including, `stop`) equal to the stack, or NULL. */
static stack_node *chain_find(stack_node *head, const stack_node *stop, uint64_t h,
                             const uintptr_t *pc, int n)
{
    for (stack_node *s = head; s && s != stop; s = s->next)
        if (s->hash == h && s->depth == n && memcmp(s->pc, pc, (size_t)n * sizeof *pc) == 0)
            return s;
    return NULL;
}

NOINLINE uint32_t gpumem__stack_capture(int skip)
{
#if !HAVE_CAPTURE
    (void)skip;
    return 0;
#else
    void *raw[GPUMEM__STACK_MAX_FRAMES + MAX_SKIP + 1];
    if (skip < 0)
        skip = 0;
    if (skip > MAX_SKIP)
        skip = MAX_SKIP;
    /* Frame 0 is this function itself (both unwinders start in their caller). */
    int first = skip + 1;
#if defined(GPUMEM_HAVE_LIBUNWIND)
    int got = unw_backtrace(raw, first + GPUMEM__STACK_MAX_FRAMES);
#else
    int got = backtrace(raw, first + GPUMEM__STACK_MAX_FRAMES);
#endif
    int n = got - first;
    while (n > 0 && raw[first + n - 1] == NULL) /* some unwinders end with a null frame */
        n--;
    if (n <= 0)
        return 0;
    const uintptr_t *pc = (const uintptr_t *)(void *)(raw + first);
    uint64_t h = hash_pcs(pc, n);
    _Atomic(stack_node *) *bucket = &buckets[h & ((1u << BUCKET_BITS) - 1)];

    stack_node *head = atomic_load_explicit(bucket, memory_order_acquire);
    stack_node *found = chain_find(head, NULL, h, pc, n);
    if (LIKELY(found))
        return found->id;

    /* A new stack. Its id is published before the node becomes findable, so whoever finds
     * it may look it up by id at once; losing the race to an identical stack withdraws both. */
    stack_node *node = malloc(sizeof *node + (size_t)n * sizeof node->pc[0]);
    if (!node)
        return 0;
    node->hash = h;
    node->depth = n;
    atomic_init(&node->sym, NULL);
    memcpy(node->pc, pc, (size_t)n * sizeof node->pc[0]);
    node->id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    _Atomic(stack_node *) *slot = id_slot(node->id, 1);
    if (!slot) {
        free(node);
        return 0;
    }
    atomic_store_explicit(slot, node, memory_order_release);
    for (;;) {
        node->next = head;
        if (atomic_compare_exchange_weak_explicit(bucket, &head, node, memory_order_release,
                                                  memory_order_acquire))
            return node->id;
        /* The bucket changed: check only what was added since we last looked. */
        found = chain_find(head, node->next, h, pc, n);
        if (found) {
            /* Nobody can know the withdrawn id: it was never returned or findable. */
            atomic_store_explicit(slot, NULL, memory_order_relaxed);
            free(node);
            return found->id;
        }
    }
#endif
}

/* ---- symbolization ---- */

enum { FRAME_USER, FRAME_GPUMEM, FRAME_CUDA, FRAME_START };

/* One function at a return address: the function the code belongs to, or, with inlining,
 * each function inlined there and the one they were inlined into. */
typedef struct {
    const char *func;
    const char *file;
    int line;
    unsigned char cls;
    unsigned char is_main;
    unsigned char inlined; /* inlined into the next (outer) function */
} pc_func;

/* At most this many functions per return address (a deeper inline chain keeps its innermost
 * ones and the function it is all inlined into). */
#define MAX_INLINE 16

typedef struct {
    const char *object;
    int n;        /* functions at this address, innermost first (>= 1) */
    pc_func *f;   /* f[0 .. n-1]; never freed */
} pc_info;

static pthread_mutex_t sym_lock = PTHREAD_MUTEX_INITIALIZER;
static const char unknown_func[] = "???";

/* Interned strings: reports repeat the same files and objects many times. Under sym_lock. */
static struct {
    char **slot;
    size_t cap, n;
} strs;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3u;
    return h;
}

static int strs_grow(void)
{
    size_t cap = strs.cap ? strs.cap * 2 : 256;
    char **slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < strs.cap; i++) {
        if (!strs.slot[i])
            continue;
        size_t j = hash_str(strs.slot[i]) & (cap - 1);
        while (slot[j])
            j = (j + 1) & (cap - 1);
        slot[j] = strs.slot[i];
    }
    free(strs.slot);
    strs.slot = slot;
    strs.cap = cap;
    return 0;
}

/* Our own lasting copy of s; NULL for NULL, or when out of memory. */
static const char *intern(const char *s)
{
    if (!s)
        return NULL;
    if ((strs.n + 1) * 2 > strs.cap && strs_grow() != 0)
        return NULL;
    size_t j = hash_str(s) & (strs.cap - 1);
    for (; strs.slot[j]; j = (j + 1) & (strs.cap - 1))
        if (strcmp(strs.slot[j], s) == 0)
            return strs.slot[j];
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    strs.slot[j] = copy;
    strs.n++;
    return copy;
}

/* Per-address cache: the frames stacks share are looked up once. Under sym_lock. */
static struct {
    uintptr_t *key;
    pc_info *val;
    size_t cap, n;
} pcs;

static size_t pc_hash(uintptr_t pc, size_t cap)
{
    return (size_t)(((uint64_t)pc * 0x9e3779b97f4a7c15u) >> 17) & (cap - 1);
}

static int pcs_grow(void)
{
    size_t cap = pcs.cap ? pcs.cap * 2 : 1024;
    uintptr_t *key = calloc(cap, sizeof *key);
    pc_info *val = calloc(cap, sizeof *val);
    if (!key || !val) {
        free(key);
        free(val);
        return -1;
    }
    for (size_t i = 0; i < pcs.cap; i++) {
        if (!pcs.key[i])
            continue;
        size_t j = pc_hash(pcs.key[i], cap);
        while (key[j])
            j = (j + 1) & (cap - 1);
        key[j] = pcs.key[i];
        val[j] = pcs.val[i];
    }
    free(pcs.key);
    free(pcs.val);
    pcs.key = key;
    pcs.val = val;
    pcs.cap = cap;
    return 0;
}

/* gpumem's own source directory, from this file's path as the compiler saw it: debug info
 * of gpumem's other files names the same directory. */
static size_t src_dir_len(void)
{
    const char *slash = strrchr(__FILE__, '/');
    return slash ? (size_t)(slash - __FILE__) + 1 : 0;
}

static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : path;
}

static int is_start_func(const char *f)
{
    /* __gpumem_check_start_main: gpumem check's wrapper of main (tools/check/preload.c). */
    static const char *const names[] = {"_start", "__libc_start_main", "__libc_start_call_main",
                                        "__libc_start_main_impl", "start_thread", "clone",
                                        "clone3", "__clone", "__clone3", "__clone_internal",
                                        "__gpumem_check_start_main"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(f, names[i]) == 0)
            return 1;
    return 0;
}

/* cudaMalloc, cuMemAlloc_v2, __cudaRegisterFatBinary: the runtime's and driver's API names. */
static int is_cuda_name(const char *f)
{
    if (strncmp(f, "__cuda", 6) == 0 || strncmp(f, "cudart::", 8) == 0 ||
        strncmp(f, "libcudart_static_", 17) == 0) /* the static runtime's internal names */
        return 1;
    if (strncmp(f, "cuda", 4) == 0)
        return f[4] >= 'A' && f[4] <= 'Z';
    return f[0] == 'c' && f[1] == 'u' && f[2] >= 'A' && f[2] <= 'Z';
}

static unsigned char classify(const pc_func *p, const char *object)
{
    const char *obj = base_name(object);
    size_t dir = src_dir_len();
    if (is_start_func(p->func))
        return FRAME_START;
    if (strncmp(p->func, "gpumem_", 7) == 0)
        return FRAME_GPUMEM;
    if (p->file && dir && strncmp(p->file, __FILE__, dir) == 0)
        return FRAME_GPUMEM;
    /* In libgpumem.so everything is gpumem's, named or not (its symbols are hidden). */
    if (obj && strncmp(obj, "libgpumem", 9) == 0)
        return FRAME_GPUMEM;
    /* The driver, the shared runtime, and CUPTI calling gpumem check back. */
    if (obj && (strncmp(obj, "libcuda", 7) == 0 || strncmp(obj, "libcupti", 8) == 0))
        return FRAME_CUDA;
    /* The static runtime lives in the executable, without line information; the runtime's
     * C++ conveniences (cudaMalloc<T>) are inline functions of its headers. */
    if (!p->file && is_cuda_name(p->func))
        return FRAME_CUDA;
    const char *header = base_name(p->file);
    if (header && (strcmp(header, "cuda_runtime.h") == 0 || strcmp(header, "cuda_runtime_api.h") == 0))
        return FRAME_CUDA;
    /* Trimmed only where below every other frame: libc's start code, and a sanitizer's
     * thread start wrapper (__tsan_thread_start_func) between start_thread and the thread. */
    if (obj && (strncmp(obj, "libc.so", 7) == 0 || strncmp(obj, "ld-linux", 8) == 0 ||
                strncmp(obj, "libtsan.so", 10) == 0 || strncmp(obj, "libasan.so", 10) == 0))
        return FRAME_START;
    return FRAME_USER;
}

#if defined(GPUMEM_HAVE_LIBDW)
static Dwfl *dwfl;
static int dwfl_failed;

/* (Re)reads the process's mappings: also after a dlopen since the last report. */
static int dwfl_report(void)
{
    if (!dwfl) {
        static char *debuginfo_path;
        static const Dwfl_Callbacks callbacks = {
            .find_elf = dwfl_linux_proc_find_elf,
            .find_debuginfo = dwfl_standard_find_debuginfo,
            .debuginfo_path = &debuginfo_path,
        };
        dwfl = dwfl_begin(&callbacks);
        if (!dwfl)
            return -1;
    }
    dwfl_report_begin(dwfl);
    int rc = dwfl_linux_proc_report(dwfl, getpid());
    dwfl_report_end(dwfl, NULL, NULL);
    return rc == 0 ? 0 : -1;
}

/* The name a DIE gives its function: the linkage name (mangled C++, demangled later) where
 * there is one, else the plain name; through DW_AT_abstract_origin for inlined code. */
static const char *die_func_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    if (!name)
        name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
    return name ? name : dwarf_diename(die);
}

/* Where an inlined subroutine was called from: its DW_AT_call_file and DW_AT_call_line. */
static void call_site(Dwarf_Die *cu, Dwarf_Die *inl, const char **file, int *line)
{
    Dwarf_Attribute attr;
    Dwarf_Word idx = 0, ln = 0;
    Dwarf_Files *files;
    size_t nfiles;
    *file = NULL;
    *line = 0;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &ln) == 0)
        *line = (int)ln;
    if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &idx) == 0 &&
        dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && idx < nfiles)
        *file = dwarf_filesrc(files, idx, NULL, NULL);
}

/* Fills f[] with the functions at addr, innermost first: each function inlined there (the
 * line table's line for the innermost, the call site of the inner one for the others) and the
 * function they were inlined into. Returns how many, 0 when the debug info says nothing. */
static int inline_chain(Dwfl_Module *mod, Dwarf_Addr addr, const char *file, int line,
                        pc_func *f, int max)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias);
    if (!cu)
        return 0;
    /* The innermost function at addr; dwarf_getscopes goes on through the scopes of an
     * inlined function's definition, not its callers', so the chain of callers is read from
     * the innermost inlined instance outwards with dwarf_getscopes_die. */
    Dwarf_Die *scopes = NULL, inner;
    int nscopes = dwarf_getscopes(cu, addr - bias, &scopes), k = 0;
    while (k < nscopes && dwarf_tag(&scopes[k]) != DW_TAG_inlined_subroutine &&
           dwarf_tag(&scopes[k]) != DW_TAG_subprogram)
        k++;
    int is_inlined = k < nscopes && dwarf_tag(&scopes[k]) == DW_TAG_inlined_subroutine;
    if (is_inlined)
        inner = scopes[k];
    free(scopes);
    if (!is_inlined)
        return 0; /* not inlined: the symbol table's name and the line table's line do */
    scopes = NULL;
    nscopes = dwarf_getscopes_die(&inner, &scopes);
    int n = 0;
    for (int i = 0; i < nscopes && n < max; i++) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
            continue;
        /* A chain deeper than f[] keeps the function it is all inlined into. */
        if (tag == DW_TAG_inlined_subroutine && n == max - 1)
            continue;
        const char *name = die_func_name(&scopes[i]);
        f[n] = (pc_func){.func = name ? intern(name) : NULL, .file = intern(file),
                         .line = file ? line : 0, .inlined = tag == DW_TAG_inlined_subroutine};
        if (!f[n].func)
            f[n].func = unknown_func;
        n++;
        if (tag == DW_TAG_subprogram)
            break;
        call_site(cu, &scopes[i], &file, &line);
    }
    free(scopes);
    return n;
}

static void lookup_libdw(uintptr_t addr, pc_info *p, pc_func *f, int *reported)
{
    if (!dwfl && !dwfl_failed && dwfl_report() != 0)
        dwfl_failed = 1; /* e.g. no /proc: names then come from dladdr */
    if (!dwfl)
        return;
    Dwfl_Module *mod = dwfl_addrmodule(dwfl, (Dwarf_Addr)addr);
    if (!mod && !*reported) {
        *reported = 1;
        dwfl_report();
        mod = dwfl_addrmodule(dwfl, (Dwarf_Addr)addr);
    }
    if (!mod)
        return;
    const char *name = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    if (name && name[0] == '/')
        p->object = intern(name);
    const char *file = NULL;
    int lineno = 0;
    Dwfl_Line *line = dwfl_module_getsrc(mod, (Dwarf_Addr)addr);
    if (line) {
        file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
        if (!file || lineno <= 0)
            file = NULL;
    }
    int n = file ? inline_chain(mod, (Dwarf_Addr)addr, file, lineno, f, MAX_INLINE) : 0;
    /* The outermost function's name from the symbol table, which names the code that runs
     * (the debug info may name a declaration the symbol table spells otherwise). */
    const char *func = dwfl_module_addrname(mod, (GElf_Addr)addr);
    if (n == 0) {
        f[0].file = intern(file);
        f[0].line = f[0].file ? lineno : 0;
        n = 1;
    }
    if (func) {
        const char *kept = intern(func);
        if (kept)
            f[n - 1].func = kept;
    }
    p->n = n;
}
#endif

static void lookup_dladdr(uintptr_t addr, pc_info *p, pc_func *f)
{
    Dl_info info;
    void *extra = NULL;
    if (!dladdr1((void *)addr, &info, &extra, RTLD_DL_SYMENT))
        return;
    const ElfW(Sym) *sym = extra;
    if (!p->object && info.dli_fname && info.dli_fname[0])
        p->object = intern(info.dli_fname);
    /* dladdr names the nearest exported symbol below addr, which for a hidden or static
     * function is some other function: believe it only when addr lies inside it. */
    if (f->func == unknown_func && info.dli_sname && info.dli_saddr && sym &&
        addr - (uintptr_t)info.dli_saddr < (uintptr_t)sym->st_size) {
        const char *name = intern(info.dli_sname);
        if (name)
            f->func = name;
    }
}

/* C++ names read as in the source ("solve(float*, int)"), through the C++ runtime's demangler:
 * the process's own, or the system's libstdc++ loaded for it (RTLD_LOCAL: nothing of it
 * reaches the program's symbols); without either they stay mangled. */
static void demangle(pc_func *p)
{
    typedef char *(*demangler)(const char *, char *, size_t *, int *);
    static demangler fn;
    static int loaded;
    if (strncmp(p->func, "_Z", 2) != 0)
        return;
    if (!fn) {
        /* A C program (python) may load the C++ runtime only inside RTLD_LOCAL libraries,
         * out of RTLD_DEFAULT's reach: ask for it by name too. A program that carries the
         * C++ runtime itself (-static-libstdc++) exports no demangler: load the system's,
         * once. */
        *(void **)(&fn) = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        void *cxx = fn ? NULL : dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (cxx) {
            *(void **)(&fn) = dlsym(cxx, "__cxa_demangle");
            dlclose(cxx); /* NOLOAD took a reference to a library that stays loaded */
        } else if (!fn && !loaded) {
            loaded = 1;
            cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL); /* kept open */
            if (cxx)
                *(void **)(&fn) = dlsym(cxx, "__cxa_demangle");
        }
    }
    int status = -1;
    char *plain = fn ? fn(p->func, NULL, NULL, &status) : NULL;
    if (plain && status == 0) {
        const char *kept = intern(plain);
        if (kept)
            p->func = kept;
    }
    free(plain);
}

/* Returns a pointer into the cache, valid only until the next lookup (which may grow it). */
static const pc_info *lookup(uintptr_t pc, int *reported)
{
    if ((pcs.n + 1) * 2 > pcs.cap && pcs_grow() != 0)
        return NULL;
    size_t j = pc_hash(pc, pcs.cap);
    for (; pcs.key[j]; j = (j + 1) & (pcs.cap - 1))
        if (pcs.key[j] == pc)
            return &pcs.val[j];
    /* A return address is just after its call, which may be the last instruction of a
     * function or of a line: look up the call itself. */
    uintptr_t addr = pc - 1;
    pc_func f[MAX_INLINE];
    pc_info info = {.n = 1};
    f[0] = (pc_func){.func = unknown_func};
#if defined(GPUMEM_HAVE_LIBDW)
    lookup_libdw(addr, &info, f, reported);
#else
    (void)reported;
#endif
    if (f[info.n - 1].func == unknown_func || !info.object)
        lookup_dladdr(addr, &info, &f[info.n - 1]);
    for (int i = 0; i < info.n; i++) {
        demangle(&f[i]);
        f[i].cls = classify(&f[i], info.object);
        f[i].is_main = strcmp(f[i].func, "main") == 0;
    }
    info.f = malloc((size_t)info.n * sizeof *info.f);
    if (!info.f)
        return NULL;
    memcpy(info.f, f, (size_t)info.n * sizeof *info.f);
    pcs.key[j] = pc;
    pcs.val[j] = info;
    pcs.n++;
    return &pcs.val[j];
}

/* A variable's symbol from the symbol table (static ones too), when one holds addr. */
#if defined(GPUMEM_HAVE_LIBDW)
static void symbol_libdw(uintptr_t addr, pc_info *p, pc_func *f)
{
    if (!dwfl && !dwfl_failed && dwfl_report() != 0)
        dwfl_failed = 1;
    Dwfl_Module *mod = dwfl ? dwfl_addrmodule(dwfl, (Dwarf_Addr)addr) : NULL;
    if (!mod && dwfl) {
        dwfl_report(); /* an object loaded since */
        mod = dwfl_addrmodule(dwfl, (Dwarf_Addr)addr);
    }
    /* The modules cover the objects' file-backed mappings only; a bss past the file's last
     * page is anonymous memory: its module is the one that starts where dladdr says. */
    Dl_info info;
    if (!mod && dwfl && dladdr((void *)addr, &info) && info.dli_fbase)
        mod = dwfl_addrmodule(dwfl, (Dwarf_Addr)(uintptr_t)info.dli_fbase);
    if (!mod)
        return;
    const char *path = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    if (path && path[0] == '/')
        p->object = intern(path);
    GElf_Sym sym;
    GElf_Off off = 0;
    const char *name = dwfl_module_addrinfo(mod, (GElf_Addr)addr, &off, &sym, NULL, NULL, NULL);
    const char *kept = name && off < sym.st_size ? intern(name) : NULL;
    if (kept)
        f->func = kept;
}
#endif

const char *gpumem__symbol_of(uintptr_t addr, const char **object)
{
    pc_info info = {.n = 1};
    pc_func f = {.func = unknown_func};
    pthread_mutex_lock(&sym_lock);
#if defined(GPUMEM_HAVE_LIBDW)
    symbol_libdw(addr, &info, &f);
#endif
    if (f.func == unknown_func || !info.object)
        lookup_dladdr(addr, &info, &f);
    if (f.func != unknown_func)
        demangle(&f);
    pthread_mutex_unlock(&sym_lock);
    *object = info.object;
    return f.func == unknown_func ? NULL : f.func;
}

/* One function of a stack before trimming: a return address's function (or one of them). */
typedef struct {
    pc_func f;
    const char *object;
    uintptr_t pc;
} flat_frame;

static int trimmed(const pc_func *f)
{
    return f->cls == FRAME_GPUMEM || f->cls == FRAME_CUDA;
}

/* Symbolizes and trims one stack. Under sym_lock. NULL when out of memory. */
static sym_stack *symbolize(const stack_node *s)
{
    int reported = 0;
    int npc = s->depth < GPUMEM__STACK_MAX_FRAMES ? s->depth : GPUMEM__STACK_MAX_FRAMES;
    int cap = npc, n = 0;
    flat_frame *info = malloc((size_t)(cap ? cap : 1) * sizeof *info);
    if (!info)
        return NULL;
    for (int i = 0; i < npc; i++) {
        const pc_info *p = lookup(s->pc[i], &reported);
        if (!p)
            goto oom;
        if (n + p->n > cap) {
            cap = (n + p->n) * 2;
            flat_frame *grown = realloc(info, (size_t)cap * sizeof *info);
            if (!grown)
                goto oom;
            info = grown;
        }
        for (int k = 0; k < p->n; k++)
            info[n++] = (flat_frame){.f = p->f[k], .object = p->object, .pc = s->pc[i]};
    }
    /* Below main is the C library's start code; a thread's stack ends in it too. */
    int end = n;
    for (int i = 0; i < n; i++)
        if (info[i].f.is_main) {
            end = i + 1;
            break;
        }
    /* Without main's name (no symbols), cut at the innermost start-code frame of the
     * bottom run of start code and unnamed frames (_start is unnamed without symbols). */
    if (end == n) {
        int k = n;
        while (k > 0 && (info[k - 1].f.cls == FRAME_START || info[k - 1].f.func == unknown_func))
            k--;
        while (k < n && info[k].f.cls != FRAME_START)
            k++;
        end = k;
    }
    /* gpumem's frames are innermost. Between two of them there may be frames it cannot name
     * (static functions without debug info): the whole run up to the last gpumem frame goes,
     * unless a frame with a source file outside gpumem proves the caller was reached, or CUDA's
     * frames follow gpumem's (gpumem check's callback, called by CUPTI inside the CUDA call):
     * the program's frames come after those. */
    int begin = 0;
    for (int i = 0; i < end; i++) {
        if (info[i].f.cls == FRAME_GPUMEM)
            begin = i + 1;
        else if ((info[i].f.cls == FRAME_USER && info[i].f.file) ||
                 (info[i].f.cls == FRAME_CUDA && begin > 0))
            break;
    }
    sym_stack *out = malloc(sizeof *out + (size_t)(end > begin ? end - begin : 0) *
                                              sizeof out->frames[0]);
    if (!out)
        goto oom;
    out->n = 0;
    for (int i = begin; i < end; i++) {
        if (trimmed(&info[i].f))
            continue;
        /* "Inlined into" the next frame only where that one is shown too. */
        int inlined = info[i].f.inlined && i + 1 < end && !trimmed(&info[i + 1].f);
        out->frames[out->n++] = (gpumem__frame){.func = info[i].f.func,
                                                .file = info[i].f.file,
                                                .line = info[i].f.line,
                                                .pc = info[i].pc,
                                                .object = info[i].object,
                                                .inlined = (unsigned char)inlined};
    }
    free(info);
    return out;
oom:
    free(info);
    return NULL;
}

static const sym_stack *stack_get(uint32_t id)
{
    _Atomic(stack_node *) *slot = id_slot(id, 0);
    stack_node *s = slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
    if (!s)
        return NULL;
    sym_stack *sym = atomic_load_explicit(&s->sym, memory_order_acquire);
    if (sym)
        return sym;
    pthread_mutex_lock(&sym_lock);
    sym = atomic_load_explicit(&s->sym, memory_order_relaxed);
    if (!sym) {
        sym = symbolize(s);
        if (sym)
            atomic_store_explicit(&s->sym, sym, memory_order_release);
    }
    pthread_mutex_unlock(&sym_lock);
    return sym;
}

/* fork(): no thread may be symbolizing while the process is copied (fork.c). */
void gpumem__backtrace_at_fork(int phase)
{
    if (phase == GPUMEM__FORK_PREPARE)
        pthread_mutex_lock(&sym_lock);
    else
        pthread_mutex_unlock(&sym_lock);
}

int gpumem__stack_frames(uint32_t id, gpumem__frame *out, int max)
{
    const sym_stack *sym = stack_get(id);
    if (!sym || max <= 0)
        return 0;
    int n = sym->n < max ? sym->n : max;
    memcpy(out, sym->frames, (size_t)n * sizeof *out);
    return n;
}

int gpumem__stack_frames_cached(uint32_t id, gpumem__frame *out, int max)
{
    _Atomic(stack_node *) *slot = id ? id_slot(id, 0) : NULL;
    stack_node *s = slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
    const sym_stack *sym = s ? atomic_load_explicit(&s->sym, memory_order_acquire) : NULL;
    if (!sym)
        return id ? -1 : 0;
    int n = sym->n < max ? sym->n : max;
    memcpy(out, sym->frames, (size_t)(n > 0 ? n : 0) * sizeof *out);
    return n;
}

void gpumem__stack_print(uint32_t id, FILE *out, const char *indent)
{
    const sym_stack *sym = stack_get(id);
    if (!sym)
        return;
    char cwd[PATH_MAX];
    size_t cwd_len = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    if (!indent)
        indent = "";
    for (int i = 0; i < sym->n; i++) {
        const gpumem__frame *f = &sym->frames[i];
        const char *word = i == 0 ? "at" : "by";
        if (f->file) {
            const char *file = f->file;
            if (cwd_len > 1 && strncmp(file, cwd, cwd_len) == 0 && file[cwd_len] == '/')
                file += cwd_len + 1;
            fprintf(out, "%s%s %s (%s:%d)%s\n", indent, word, f->func, file, f->line,
                    f->inlined ? ", inlined into:" : "");
        } else if (f->object) {
            fprintf(out, "%s%s %s (in %s)\n", indent, word, f->func, f->object);
        } else {
            fprintf(out, "%s%s %s (0x%jx)\n", indent, word, f->func, (uintmax_t)f->pc);
        }
    }
}

const char *gpumem__stack_backend(void)
{
#if HAVE_CAPTURE
    return GPUMEM__UNWINDER ", " GPUMEM__SYMBOLIZER;
#else
    return "unavailable";
#endif
}

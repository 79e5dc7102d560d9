/* GM001, GM002, GM005, GM006 and GM007: where allocations go.
 *
 * Each function is walked once, statement by statement, with an abstract state that says for
 * every allocation seen so far whether it may still be owned here ("live") and, if it is, by
 * which early exit (goto, break, continue) it left its normal path. Branches are walked with
 * copies of the state and merged afterwards (live on any path is live), so the analysis is
 * path-insensitive except where a condition tells which branch holds the failure of an
 * allocation (`if (!p)`, `if (err != cudaSuccess)`, `if (cudaMalloc(...) != cudaSuccess)`):
 * there the failed allocation is known not to exist. One pass, no fixpoint: a loop body is
 * walked once, which is all the rules need (one iteration's allocations must be gone by the
 * end of the same iteration). */
#include "analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ALLOCS 64
#define MAX_EXITS 256
#define MAX_FRAMES 32
#define MAX_NAMES 4
#define NAME_CAP 96
#define MAX_DEPTH 400

enum rel_class { RC_NONE = 0, RC_CUDAFREE, RC_FREEHOST, RC_FREE, RC_DELETE, RC_GPUMEM, RC_ANY };

struct alloc {
    TSNode call;
    char names[MAX_NAMES][NAME_CAP]; /* the variable and its aliases */
    int n_names;
    int kind;
    char fn[64];
    bool tracked; /* owned by a local variable: the leak rules apply */
    bool wc;      /* write-combined pinned memory */
    bool lazy;    /* allocated under a null test of its own variable */
    bool released_somewhere;
    bool leak_end;
    TSNode loop; /* innermost loop whose body holds the allocation */
    unsigned reported;
};

/* st[i]: 0 not owned here, 1 owned, k >= 2: owned after leaving through exits[k - 2] */
struct state {
    bool reach;
    int32_t st[MAX_ALLOCS];
};

enum frame_kind { FR_LOOP, FR_SWITCH, FR_BLOCK, FR_TRY };
struct frame {
    int kind;
    TSNode node;
    struct state brk, cont;
};

struct pending_goto {
    char label[64];
    struct state s;
};

struct leak {
    int alloc;
    int exit;
};

struct errbind {
    char name[NAME_CAP];
    int alloc;
};

struct fx {
    struct lint_ctx *c;
    TSNode fn, body;
    bool device;
    struct alloc a[MAX_ALLOCS];
    int na;
    TSNode exits[MAX_EXITS];
    int nexits;
    struct frame frames[MAX_FRAMES];
    int nframes;
    struct pending_goto *gotos;
    size_t ngotos, capgotos;
    struct lint_strlist labels_seen;
    struct lint_strlist locals;
    struct leak *leaks;
    size_t nleaks, capleaks;
    struct errbind binds[16];
    int nbinds;
    int depth;
};

/* ---------------------------------------------------------------- tables ---- */

struct allocator {
    const char *name;
    int kind;
    int out_param; /* 1: pointer through the first argument; 0: returned */
};

static const struct allocator allocators[] = {
    {"cudaMalloc", LK_DEVICE, 1},
    {"cudaMallocAsync", LK_DEVICE, 1},
    {"cudaMallocFromPoolAsync", LK_DEVICE, 1},
    {"cudaMallocPitch", LK_DEVICE, 1},
    {"cudaMallocManaged", LK_MANAGED, 1},
    {"cudaMallocHost", LK_PINNED, 1},
    {"cudaHostAlloc", LK_PINNED, 1},
    {"gpumem_device_alloc", LK_GPUMEM, 0},
    {"gpumem_managed_alloc", LK_GPUMEM, 0},
    {"gpumem_pinned_alloc", LK_GPUMEM, 0},
    {"gpumem_host_alloc", LK_GPUMEM, 0},
    {"gpumem_device_alloc_async", LK_GPUMEM, 0},
    {"gpumem_device_alloc_at", LK_GPUMEM, 0},
    {"gpumem_managed_alloc_at", LK_GPUMEM, 0},
    {"gpumem_pinned_alloc_at", LK_GPUMEM, 0},
    {"gpumem_host_alloc_at", LK_GPUMEM, 0},
    {"gpumem_device_alloc_async_at", LK_GPUMEM, 0},
    {"malloc", LK_MALLOC, 0},
    {"calloc", LK_MALLOC, 0},
    {"aligned_alloc", LK_MALLOC, 0},
    {"strdup", LK_MALLOC, 0},
    {NULL, 0, 0},
};

struct releaser {
    const char *name;
    int cls;
};

static const struct releaser releasers[] = {
    {"cudaFree", RC_CUDAFREE},     {"cudaFreeAsync", RC_CUDAFREE},
    {"cudaFreeHost", RC_FREEHOST}, {"free", RC_FREE},
    {"gpumem_free", RC_GPUMEM},    {"gpumem_free_async", RC_GPUMEM},
    {"gpumem_free_at", RC_GPUMEM}, {"gpumem_free_async_at", RC_GPUMEM},
    {NULL, 0},
};

static const struct allocator *find_allocator(const char *name)
{
    for (size_t i = 0; allocators[i].name; i++)
        if (strcmp(allocators[i].name, name) == 0)
            return &allocators[i];
    return NULL;
}

static int release_class(const char *name)
{
    for (size_t i = 0; releasers[i].name; i++)
        if (strcmp(releasers[i].name, name) == 0)
            return releasers[i].cls;
    if (strcmp(name, "delete") == 0 || strcmp(name, "delete[]") == 0)
        return RC_DELETE;
    return RC_NONE;
}

static const char *kind_release(int kind)
{
    switch (kind) {
    case LK_DEVICE:
    case LK_MANAGED: return "cudaFree";
    case LK_PINNED: return "cudaFreeHost";
    case LK_MALLOC: return "free";
    case LK_NEW: return "delete";
    case LK_GPUMEM: return "gpumem_free";
    default: return "the matching release";
    }
}

/** Whether releasing memory of @p kind with a release of class @p cls is a mismatch. */
static bool mismatch(int kind, int cls)
{
    switch (kind) {
    case LK_DEVICE:
    case LK_MANAGED:
        return cls == RC_FREEHOST || cls == RC_FREE || cls == RC_DELETE || cls == RC_GPUMEM;
    case LK_PINNED:
        return cls == RC_CUDAFREE || cls == RC_FREE || cls == RC_DELETE || cls == RC_GPUMEM;
    case LK_MALLOC:
    case LK_NEW: return cls == RC_CUDAFREE || cls == RC_FREEHOST || cls == RC_GPUMEM;
    case LK_GPUMEM:
        return cls == RC_CUDAFREE || cls == RC_FREEHOST || cls == RC_FREE || cls == RC_DELETE;
    default: return false;
    }
}

/* Calls that end the process: what is owned then is the operating system's to reclaim. */
static bool is_noreturn(const char *name)
{
    static const char *const n[] = {"exit", "abort", "_exit", "_Exit", "quick_exit",
                                    "terminate", "__assert_fail", NULL};
    for (size_t i = 0; n[i]; i++)
        if (strcmp(name, n[i]) == 0)
            return true;
    return false;
}

/* Names that read as releasing their argument (project wrappers defined in other files). */
static bool looks_like_release(const char *name)
{
    static const char *const w[] = {"free", "Free", "FREE", "release", "Release", "RELEASE",
                                    "destroy", "Destroy", "dealloc", "Dealloc", "delete",
                                    "Delete", "dispose", "Dispose", "cleanup", "Cleanup",
                                    "drop", NULL};
    for (size_t i = 0; w[i]; i++)
        if (strstr(name, w[i]))
            return true;
    return false;
}

/* ---------------------------------------------------------------- state ---- */

static void st_merge(struct state *into, const struct state *b)
{
    if (!b->reach)
        return;
    if (!into->reach) {
        *into = *b;
        return;
    }
    for (int i = 0; i < MAX_ALLOCS; i++) {
        int32_t x = into->st[i], y = b->st[i];
        if (x == 0)
            into->st[i] = y;
        else if (y == 1)
            into->st[i] = 1;
    }
}

static void st_dead(struct state *s)
{
    memset(s, 0, sizeof *s);
}

static int add_exit(struct fx *f, TSNode n)
{
    if (f->nexits >= MAX_EXITS)
        return -1;
    f->exits[f->nexits] = n;
    return f->nexits++;
}

/** Marks what @p s owns (all of it, or only allocations of @p loop) as leaving via exit @p e. */
static void st_mark_exit(struct fx *f, struct state *s, int e, TSNode loop, bool only_loop)
{
    if (e < 0)
        return;
    for (int i = 0; i < f->na; i++) {
        if (s->st[i] != 1)
            continue;
        if (only_loop && !ts_node_eq(f->a[i].loop, loop))
            continue;
        s->st[i] = e + 2;
    }
}

static void add_leak(struct fx *f, int alloc, int exit)
{
    for (size_t i = 0; i < f->nleaks; i++)
        if (f->leaks[i].alloc == alloc && f->leaks[i].exit == exit)
            return;
    struct leak *p = lint_array_grow(f->leaks, f->nleaks, &f->capleaks, sizeof *p);
    if (!p)
        return;
    f->leaks = p;
    f->leaks[f->nleaks].alloc = alloc;
    f->leaks[f->nleaks].exit = exit;
    f->nleaks++;
}

/** The function is left here (@p exit null: at its normal end). */
static void leave(struct fx *f, struct state *s, TSNode exit, bool normal_end)
{
    if (!s->reach)
        return;
    int e = normal_end ? -1 : add_exit(f, exit);
    for (int i = 0; i < f->na; i++) {
        int32_t v = s->st[i];
        if (v == 0 || !f->a[i].tracked)
            continue;
        if (v >= 2)
            add_leak(f, i, v - 2);
        else if (normal_end)
            f->a[i].leak_end = true;
        else if (e >= 0)
            add_leak(f, i, e);
    }
    st_dead(s);
}

/* ---------------------------------------------------------------- names ---- */

static int find_alloc(struct fx *f, const char *name, const struct state *s, int after)
{
    for (int i = after + 1; i < f->na; i++) {
        if (s && s->st[i] == 0)
            continue;
        for (int k = 0; k < f->a[i].n_names; k++)
            if (strcmp(f->a[i].names[k], name) == 0)
                return i;
    }
    return -1;
}

static bool is_local(struct fx *f, const char *name)
{
    return lint_strlist_has(&f->locals, name, strlen(name));
}

/** The innermost identifier a declarator declares. */
static TSNode declarator_name(TSNode d)
{
    for (int guard = 0; guard < 32 && !ts_node_is_null(d); guard++) {
        const char *t = ts_node_type(d);
        if (strcmp(t, "identifier") == 0)
            return d;
        TSNode n = ts_node_child_by_field_name(d, "declarator", 10);
        if (ts_node_is_null(n)) {
            /* reference_declarator has no field: its only named child is the declarator */
            if (ts_node_named_child_count(d) == 0)
                break;
            n = ts_node_named_child(d, 0);
        }
        d = n;
    }
    TSNode none = {0};
    return none;
}

static bool decl_is_static(const struct lint_ctx *c, TSNode decl)
{
    uint32_t n = ts_node_named_child_count(decl);
    for (uint32_t i = 0; i < n; i++) {
        TSNode ch = ts_node_named_child(decl, i);
        if (lint_type_is(ch, "storage_class_specifier") &&
            (lint_is(c, ch, "static") || lint_is(c, ch, "extern")))
            return true;
    }
    return false;
}

/** Whether a declarator declares a reference (`float *&p`, `T &x`). */
static bool has_reference(TSNode d)
{
    for (int guard = 0; guard < 32 && !ts_node_is_null(d); guard++) {
        if (lint_type_is(d, "reference_declarator"))
            return true;
        if (lint_type_is(d, "identifier"))
            return false;
        TSNode n = ts_node_child_by_field_name(d, "declarator", 10);
        if (ts_node_is_null(n) && ts_node_named_child_count(d) > 0)
            n = ts_node_named_child(d, 0);
        d = n;
    }
    return false;
}

static void collect_locals(struct fx *f, TSNode n, int depth)
{
    if (ts_node_is_null(n) || depth > MAX_DEPTH)
        return;
    const char *t = ts_node_type(n);
    if (strcmp(t, "lambda_expression") == 0 || strcmp(t, "function_definition") == 0)
        return;
    if ((strcmp(t, "declaration") == 0 || strcmp(t, "parameter_declaration") == 0 ||
         strcmp(t, "optional_parameter_declaration") == 0) &&
        !decl_is_static(f->c, n)) {
        uint32_t k = ts_node_child_count(n);
        for (uint32_t i = 0; i < k; i++) {
            const char *field = ts_node_field_name_for_child(n, i);
            if (!field || strcmp(field, "declarator") != 0)
                continue;
            TSNode d = ts_node_child(n, i);
            /* A reference parameter (float *&out) is the caller's variable. */
            if (strcmp(t, "declaration") != 0 && has_reference(d))
                continue;
            TSNode id = declarator_name(d);
            char buf[NAME_CAP];
            if (!ts_node_is_null(id))
                lint_strlist_add(&f->locals, lint_text(f->c, id, buf, sizeof buf, true));
        }
    }
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        collect_locals(f, ch, depth + 1);
}

/* ---------------------------------------------------------------- events ---- */

static TSNode enclosing_loop(struct fx *f, TSNode n)
{
    TSNode child = n, p = ts_node_parent(n);
    while (!ts_node_is_null(p) && !ts_node_eq(p, f->body)) {
        const char *t = ts_node_type(p);
        if (strcmp(t, "lambda_expression") == 0)
            break;
        if (strcmp(t, "for_statement") == 0 || strcmp(t, "while_statement") == 0 ||
            strcmp(t, "for_range_loop") == 0 || strcmp(t, "do_statement") == 0) {
            TSNode body = ts_node_child_by_field_name(p, "body", 4);
            bool do_once = strcmp(t, "do_statement") == 0 &&
                           lint_is(f->c, lint_unparen(ts_node_child_by_field_name(
                                             p, "condition", 9)),
                                   "0");
            if (ts_node_eq(body, child) && !do_once)
                return p;
        }
        child = p;
        p = ts_node_parent(p);
    }
    TSNode none = {0};
    return none;
}

/** Whether the allocation sits under `if (!p)`-style lazy initialisation of @p name. */
static bool under_null_test(struct fx *f, TSNode n, const char *name)
{
    TSNode p = ts_node_parent(n);
    for (int guard = 0; guard < 64 && !ts_node_is_null(p) && !ts_node_eq(p, f->body); guard++) {
        if (lint_type_is(p, "if_statement") &&
            lint_mentions(f->c, ts_node_child_by_field_name(p, "condition", 9), name))
            return true;
        p = ts_node_parent(p);
    }
    return false;
}

static bool has_write_combined_flag(struct fx *f, TSNode call, const char *fn)
{
    TSNode flags = {0};
    if (strcmp(fn, "cudaHostAlloc") == 0 || strcmp(fn, "cudaMallocHost") == 0)
        flags = lint_call_arg(call, 2);
    else if (strcmp(fn, "gpumem_host_alloc") == 0 || strcmp(fn, "gpumem_host_alloc_at") == 0)
        flags = lint_call_arg(call, 2);
    return lint_mentions(f->c, flags, "cudaHostAllocWriteCombined") ||
           lint_mentions(f->c, flags, "GPUMEM_HOST_WRITE_COMBINED");
}

/** Key of a pointer stored outside any function: ".field" or "global". */
static bool far_key(struct fx *f, TSNode target, char *key, size_t cap)
{
    target = lint_unparen(target);
    if (lint_type_is(target, "field_expression")) {
        char name[64];
        lint_text(f->c, ts_node_child_by_field_name(target, "field", 5), name, sizeof name, true);
        snprintf(key, cap, ".%s", name);
        return name[0] != '\0';
    }
    if (lint_type_is(target, "identifier")) {
        char name[NAME_CAP];
        lint_text(f->c, target, name, sizeof name, true);
        if (is_local(f, name))
            return false;
        snprintf(key, cap, "%s", name);
        return true;
    }
    return false;
}

static void add_far(struct lint_ctx *c, const char *key, int kind, const char *fn, TSNode node)
{
    struct lint_far *p = lint_array_grow(c->far, c->n_far, &c->cap_far, sizeof *p);
    if (!p)
        return;
    c->far = p;
    struct lint_far *r = &c->far[c->n_far++];
    snprintf(r->key, sizeof r->key, "%s", key);
    r->kind = kind;
    snprintf(r->fn, sizeof r->fn, "%s", fn);
    r->node = node;
    snprintf(r->function, sizeof r->function, "%s", c->function ? c->function : "");
}

/** A new allocation of @p kind by @p fn into @p target (the expression that receives it). */
static void new_alloc(struct fx *f, struct state *s, TSNode call, TSNode target, int kind,
                      const char *fn)
{
    char name[NAME_CAP];
    target = lint_unparen(target);
    if (ts_node_is_null(target))
        return;
    if (!lint_type_is(target, "identifier")) {
        char key[96];
        if (far_key(f, target, key, sizeof key))
            add_far(f->c, key, kind, fn, call);
        /* Still follow it in this function for GM002 and GM007, without leak rules. */
        if (!lint_type_is(target, "field_expression"))
            return;
    }
    lint_text(f->c, target, name, sizeof name, true);
    bool local = lint_type_is(target, "identifier") && is_local(f, name);
    if (!local && lint_type_is(target, "identifier")) {
        char key[96];
        if (far_key(f, target, key, sizeof key))
            add_far(f->c, key, kind, fn, call);
    }
    if (f->na >= MAX_ALLOCS)
        return;
    struct alloc *a = &f->a[f->na];
    memset(a, 0, sizeof *a);
    a->call = call;
    snprintf(a->names[0], NAME_CAP, "%s", name);
    a->n_names = 1;
    a->kind = kind;
    snprintf(a->fn, sizeof a->fn, "%s", fn);
    /* The leak rules are about CUDA and gpumem memory; malloc and new memory is followed
     * only to catch a CUDA release of it (GM002). */
    a->tracked = local && kind != LK_MALLOC && kind != LK_NEW;
    a->wc = has_write_combined_flag(f, call, fn);
    a->loop = enclosing_loop(f, call);
    a->lazy = under_null_test(f, call, name);
    s->st[f->na] = 1;
    f->na++;
}

static void report_mismatch(struct fx *f, TSNode at, const struct alloc *a, const char *rel)
{
    char msg[160];
    snprintf(msg, sizeof msg, "allocated here with %s", a->fn);
    lint_report(f->c, LINT_GM002, f->c->opt->severity[LINT_GM002], at, a->call, msg,
                "memory from %s released with %s (release it with %s)", a->fn, rel,
                kind_release(a->kind));
}

/** A release of @p arg by @p rel (release class @p cls). */
static void release(struct fx *f, struct state *s, TSNode at, TSNode arg, const char *rel, int cls)
{
    char name[NAME_CAP];
    arg = lint_strip(f->c, arg);
    if (ts_node_is_null(arg))
        return;
    lint_text(f->c, arg, name, sizeof name, true);
    bool found = false;
    for (int i = find_alloc(f, name, s, -1); i >= 0; i = find_alloc(f, name, s, i)) {
        found = true;
        if (cls != RC_ANY && mismatch(f->a[i].kind, cls) && !(f->a[i].reported & 4u)) {
            report_mismatch(f, at, &f->a[i], rel);
            f->a[i].reported |= 4u;
        }
        s->st[i] = 0;
        f->a[i].released_somewhere = true;
    }
    if (found)
        return;
    /* Not owned on this path, but allocated in this function (another branch): still
     * check the pairing. */
    int last = -1;
    for (int i = find_alloc(f, name, NULL, -1); i >= 0; i = find_alloc(f, name, NULL, i))
        last = i;
    if (last >= 0) {
        if (cls != RC_ANY && mismatch(f->a[last].kind, cls) && !(f->a[last].reported & 4u)) {
            report_mismatch(f, at, &f->a[last], rel);
            f->a[last].reported |= 4u;
        }
        f->a[last].released_somewhere = true;
        return;
    }
    char key[96];
    if (cls != RC_ANY && far_key(f, arg, key, sizeof key))
        add_far(f->c, key, LK_NONE, rel, at);
}

/** Everything owned that @p n names directly, or as the operand of a cast, escapes. */
static void escape_mentioned(struct fx *f, struct state *s, TSNode n)
{
    for (int i = 0; i < f->na; i++) {
        if (s->st[i] == 0)
            continue;
        for (int k = 0; k < f->a[i].n_names; k++)
            if (lint_mentions(f->c, n, f->a[i].names[k])) {
                s->st[i] = 0;
                f->a[i].released_somewhere = true;
                break;
            }
    }
}

/** Everything owned under the name that @p n spells escapes. */
static void escape_named(struct fx *f, struct state *s, TSNode n)
{
    char name[NAME_CAP];
    lint_text(f->c, n, name, sizeof name, true);
    for (int i = find_alloc(f, name, s, -1); i >= 0; i = find_alloc(f, name, s, i)) {
        s->st[i] = 0;
        f->a[i].released_somewhere = true;
    }
}

static void escape_direct(struct fx *f, struct state *s, TSNode n)
{
    char name[NAME_CAP];
    n = lint_strip(f->c, n);
    if (lint_type_is(n, "pointer_expression"))
        n = lint_strip(f->c, ts_node_child_by_field_name(n, "argument", 8));
    if (!lint_type_is(n, "identifier"))
        return;
    lint_text(f->c, n, name, sizeof name, true);
    for (int i = find_alloc(f, name, s, -1); i >= 0; i = find_alloc(f, name, s, i)) {
        s->st[i] = 0;
        f->a[i].released_somewhere = true;
    }
}

static void gm007_read(struct fx *f, struct state *s, TSNode at, TSNode ptr)
{
    char name[NAME_CAP];
    if (f->device)
        return;
    ptr = lint_strip(f->c, ptr);
    if (!lint_type_is(ptr, "identifier") && !lint_type_is(ptr, "field_expression"))
        return;
    lint_text(f->c, ptr, name, sizeof name, true);
    for (int i = find_alloc(f, name, s, -1); i >= 0; i = find_alloc(f, name, s, i)) {
        struct alloc *a = &f->a[i];
        if (!a->wc || (a->reported & 64u))
            continue;
        a->reported |= 64u;
        lint_report(f->c, LINT_GM007, f->c->opt->severity[LINT_GM007], at, a->call,
                    "allocated write-combined here",
                    "host read of write-combined memory '%s': reads bypass the cache and are "
                    "very slow (write-combined memory is for host writes and device reads)",
                    name);
    }
}

/* ---------------------------------------------------------------- walk ---- */

static const struct lint_wrapper *find_wrapper(struct lint_ctx *c, const char *name);

static void walk_stmt(struct fx *f, TSNode n, struct state *s);
static void walk_expr(struct fx *f, TSNode n, struct state *s, bool write_ctx);

static void walk_children(struct fx *f, TSNode n, struct state *s)
{
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        walk_expr(f, ch, s, false);
}

static const struct lint_wrapper *find_wrapper(struct lint_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->n_wrappers; i++)
        if (strcmp(c->wrappers[i].name, name) == 0)
            return &c->wrappers[i];
    return NULL;
}

static int file_allocator_kind(struct lint_ctx *c, const char *name)
{
    for (size_t i = 0; i < c->n_allocators; i++)
        if (strcmp(c->allocators[i].name, name) == 0)
            return c->allocators[i].kind;
    return LK_NONE;
}

static void bind_status(struct fx *f, const char *var, int alloc)
{
    for (int i = 0; i < f->nbinds; i++)
        if (strcmp(f->binds[i].name, var) == 0) {
            f->binds[i].alloc = alloc;
            return;
        }
    if (f->nbinds < (int)(sizeof f->binds / sizeof f->binds[0])) {
        snprintf(f->binds[f->nbinds].name, NAME_CAP, "%s", var);
        f->binds[f->nbinds++].alloc = alloc;
    }
}

static void walk_call(struct fx *f, TSNode call, struct state *s)
{
    char name[64];
    walk_children(f, call, s);
    if (!s->reach)
        return;
    lint_call_name(f->c, call, name, sizeof name);
    if (!name[0])
        return;
    const struct allocator *al = find_allocator(name);
    if (al && al->out_param) {
        TSNode a0 = lint_strip(f->c, lint_call_arg(call, 0));
        if (lint_type_is(a0, "pointer_expression") &&
            lint_is(f->c, ts_node_child(a0, 0), "&"))
            new_alloc(f, s, call, ts_node_child_by_field_name(a0, "argument", 8), al->kind,
                      name);
        return;
    }
    int cls = release_class(name);
    if (cls != RC_NONE) {
        release(f, s, call, lint_call_arg(call, 0), name, cls);
        return;
    }
    const struct lint_wrapper *w = find_wrapper(f->c, name);
    if (w) {
        release(f, s, call, lint_call_arg(call, (uint32_t)w->param), w->rel,
                release_class(w->rel));
        return;
    }
    if (is_noreturn(name)) {
        st_dead(s);
        return;
    }
    const struct lint_options *o = f->c->opt;
    size_t len = strlen(name);
    bool owner = lint_strlist_has(&o->owner_fns, name, len);
    bool releaser = lint_strlist_has(&o->release_fns, name, len) || looks_like_release(name);
    uint32_t argc = lint_call_argc(call);
    for (uint32_t i = 0; i < argc; i++) {
        TSNode arg = lint_call_arg(call, i);
        TSNode st = lint_strip(f->c, arg);
        if (owner) {
            escape_mentioned(f, s, arg);
        } else if (releaser && lint_type_is(st, "identifier")) {
            release(f, s, call, arg, name, RC_ANY);
        } else if (lint_type_is(st, "pointer_expression") && lint_is(f->c, ts_node_child(st, 0), "&")) {
            /* The callee gets the variable itself: it may release or replace it. */
            escape_direct(f, s, st);
        }
    }
    if ((strcmp(name, "memcpy") == 0 || strcmp(name, "memmove") == 0 ||
         strcmp(name, "memcmp") == 0) && argc >= 2) {
        gm007_read(f, s, call, lint_call_arg(call, 1));
        if (strcmp(name, "memcmp") == 0)
            gm007_read(f, s, call, lint_call_arg(call, 0));
    }
}

/** The allocation a value expression makes when it is returned memory (p = malloc(..)). */
static int returned_alloc_kind(struct fx *f, TSNode value, char *fn, size_t cap)
{
    value = lint_strip(f->c, value);
    if (lint_type_is(value, "new_expression")) {
        snprintf(fn, cap, "new");
        return LK_NEW;
    }
    if (!lint_type_is(value, "call_expression"))
        return LK_NONE;
    char name[64];
    lint_call_name(f->c, value, name, sizeof name);
    const struct allocator *al = find_allocator(name);
    if (al && !al->out_param) {
        snprintf(fn, cap, "%s", name);
        return al->kind;
    }
    int k = file_allocator_kind(f->c, name);
    if (k != LK_NONE)
        snprintf(fn, cap, "%s", name);
    return k;
}

/** `target = value` (an assignment or an initialised declaration) after value was walked. */
static void assign(struct fx *f, struct state *s, TSNode target, TSNode value)
{
    char fn[64], tname[NAME_CAP], vname[NAME_CAP];
    if (!s->reach || ts_node_is_null(value))
        return;
    target = lint_unparen(target);
    int kind = returned_alloc_kind(f, value, fn, sizeof fn);
    if (kind != LK_NONE) {
        new_alloc(f, s, lint_strip(f->c, value), target, kind, fn);
        return;
    }
    TSNode v = lint_strip(f->c, value);
    lint_text(f->c, target, tname, sizeof tname, true);
    /* err = cudaMalloc(&p, n): the status of that allocation lives in err. */
    if (lint_type_is(v, "call_expression")) {
        char name[64];
        lint_call_name(f->c, v, name, sizeof name);
        const struct allocator *al = find_allocator(name);
        if (al && al->out_param && f->na > 0 && ts_node_eq(f->a[f->na - 1].call, v))
            bind_status(f, tname, f->na - 1);
        return;
    }
    if (!lint_type_is(v, "identifier"))
        return;
    lint_text(f->c, v, vname, sizeof vname, true);
    int i = find_alloc(f, vname, s, -1);
    if (i < 0)
        return;
    if (lint_type_is(target, "identifier") && is_local(f, tname)) {
        for (; i >= 0; i = find_alloc(f, vname, s, i)) {
            struct alloc *a = &f->a[i];
            if (a->n_names < MAX_NAMES) {
                bool have = false;
                for (int k = 0; k < a->n_names; k++)
                    have = have || strcmp(a->names[k], tname) == 0;
                if (!have)
                    snprintf(a->names[a->n_names++], NAME_CAP, "%s", tname);
            }
        }
    } else {
        /* Stored into a field, an array, through a pointer or into a global: owned elsewhere. */
        escape_direct(f, s, v);
    }
}

static bool decl_has(const struct lint_ctx *c, TSNode decl, const char *word)
{
    uint32_t n = ts_node_child_count(decl);
    for (uint32_t i = 0; i < n; i++) {
        TSNode ch = ts_node_child(decl, i);
        if (lint_is(c, ch, word))
            return true;
        if (lint_type_is(ch, "ERROR") && lint_mentions(c, ch, word))
            return true;
    }
    return false;
}

static void walk_declaration(struct fx *f, TSNode n, struct state *s)
{
    bool autofree = decl_has(f->c, n, "GPUMEM_AUTO");
    uint32_t k = ts_node_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        const char *field = ts_node_field_name_for_child(n, i);
        TSNode d = ts_node_child(n, i);
        if (!field || strcmp(field, "declarator") != 0)
            continue;
        if (lint_type_is(d, "function_declarator")) {
            /* Inside a function, `T obj(p);` parses as a function declaration: its
             * "parameter types" are the constructor's arguments. */
            TSNode params = ts_node_child_by_field_name(d, "parameters", 10);
            uint32_t m = ts_node_named_child_count(params);
            for (uint32_t j = 0; j < m; j++) {
                TSNode pd = ts_node_named_child(params, j);
                TSNode ty = ts_node_child_by_field_name(pd, "type", 4);
                if (lint_type_is(ty, "type_identifier") &&
                    ts_node_is_null(ts_node_child_by_field_name(pd, "declarator", 10)))
                    escape_named(f, s, ty);
            }
            continue;
        }
        if (!lint_type_is(d, "init_declarator")) {
            walk_expr(f, d, s, false);
            continue;
        }
        TSNode value = ts_node_child_by_field_name(d, "value", 5);
        TSNode id = declarator_name(ts_node_child_by_field_name(d, "declarator", 10));
        walk_expr(f, value, s, false);
        if (lint_type_is(value, "argument_list") || lint_type_is(value, "initializer_list")) {
            /* T obj(p, ...) or T obj{p}: the object owns what it was built from. */
            uint32_t m = ts_node_named_child_count(value);
            for (uint32_t j = 0; j < m; j++)
                escape_direct(f, s, ts_node_named_child(value, j));
            continue;
        }
        if (autofree) {
            /* GPUMEM_AUTO releases the variable when it goes out of scope. */
            if (!ts_node_is_null(id)) {
                char name[NAME_CAP];
                lint_text(f->c, id, name, sizeof name, true);
                TSNode v = lint_strip(f->c, value);
                if (lint_type_is(v, "identifier"))
                    escape_direct(f, s, v);
            }
            continue;
        }
        if (!ts_node_is_null(id))
            assign(f, s, id, value);
    }
}

static void walk_expr(struct fx *f, TSNode n, struct state *s, bool write_ctx)
{
    if (ts_node_is_null(n) || !s->reach)
        return;
    if (++f->depth > MAX_DEPTH) {
        f->depth--;
        return;
    }
    const char *t = ts_node_type(n);
    if (strcmp(t, "call_expression") == 0) {
        walk_call(f, n, s);
    } else if (strcmp(t, "assignment_expression") == 0) {
        TSNode left = ts_node_child_by_field_name(n, "left", 4);
        TSNode right = ts_node_child_by_field_name(n, "right", 5);
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        bool plain = lint_is(f->c, op, "=");
        walk_expr(f, right, s, false);
        walk_expr(f, left, s, plain);
        if (plain)
            assign(f, s, left, right);
    } else if (strcmp(t, "delete_expression") == 0) {
        walk_children(f, n, s);
        bool array = false;
        uint32_t k = ts_node_child_count(n);
        for (uint32_t i = 0; i < k; i++)
            array = array || lint_is(f->c, ts_node_child(n, i), "[");
        TSNode arg = ts_node_named_child(n, ts_node_named_child_count(n) - 1);
        release(f, s, n, arg, array ? "delete[]" : "delete", RC_DELETE);
    } else if (strcmp(t, "lambda_expression") == 0) {
        /* A lambda that names an allocation owns it from now on (scope guards, deleters). */
        escape_mentioned(f, s, ts_node_child_by_field_name(n, "body", 4));
    } else if (strcmp(t, "subscript_expression") == 0 || strcmp(t, "field_expression") == 0) {
        TSNode arg = ts_node_child_by_field_name(n, "argument", 8);
        bool arrow = false;
        if (strcmp(t, "field_expression") == 0)
            arrow = lint_is(f->c, ts_node_child_by_field_name(n, "operator", 8), "->");
        if (!write_ctx && (strcmp(t, "subscript_expression") == 0 || arrow))
            gm007_read(f, s, n, arg);
        walk_children(f, n, s);
    } else if (strcmp(t, "pointer_expression") == 0) {
        bool deref = lint_is(f->c, ts_node_child(n, 0), "*");
        if (deref && !write_ctx)
            gm007_read(f, s, n, ts_node_child_by_field_name(n, "argument", 8));
        walk_children(f, n, s);
    } else if (strcmp(t, "initializer_list") == 0 || strcmp(t, "compound_literal_expression") == 0) {
        walk_children(f, n, s);
        uint32_t k = ts_node_named_child_count(n);
        for (uint32_t i = 0; i < k; i++)
            escape_direct(f, s, ts_node_named_child(n, i));
    } else if (strcmp(t, "update_expression") == 0) {
        /* p[i]++ reads p[i] */
        walk_children(f, n, s);
    } else {
        walk_children(f, n, s);
    }
    f->depth--;
}

/** Which allocations a condition proves absent on its true (@p dead_then) or false branch. */
static void cond_failure(struct fx *f, TSNode cond, const struct state *s, bool negate,
                         int *dead_then, int *dead_else, int depth)
{
    cond = lint_unparen(cond);
    if (ts_node_is_null(cond) || depth > 16)
        return;
    const char *t = ts_node_type(cond);
    if (strcmp(t, "condition_clause") == 0) {
        cond_failure(f, ts_node_child_by_field_name(cond, "value", 5), s, negate, dead_then,
                     dead_else, depth + 1);
        return;
    }
    if (strcmp(t, "unary_expression") == 0 &&
        lint_is(f->c, ts_node_child_by_field_name(cond, "operator", 8), "!")) {
        cond_failure(f, ts_node_child_by_field_name(cond, "argument", 8), s, !negate, dead_then,
                     dead_else, depth + 1);
        return;
    }
    /* In each form below, "truthy" means: the allocation failed (status != success) or the
     * pointer is non-null. */
    TSNode subject = cond;
    bool eq_success = false, is_binary = false;
    if (strcmp(t, "binary_expression") == 0) {
        TSNode op = ts_node_child_by_field_name(cond, "operator", 8);
        TSNode l = lint_unparen(ts_node_child_by_field_name(cond, "left", 4));
        TSNode r = lint_unparen(ts_node_child_by_field_name(cond, "right", 5));
        bool eq = lint_is(f->c, op, "=="), ne = lint_is(f->c, op, "!=");
        if (!eq && !ne)
            return;
        TSNode other = r;
        if (lint_is(f->c, l, "cudaSuccess") || lint_is(f->c, l, "NULL") ||
            lint_is(f->c, l, "nullptr") || lint_is(f->c, l, "0")) {
            other = l;
            subject = r;
        } else {
            subject = l;
        }
        if (!(lint_is(f->c, other, "cudaSuccess") || lint_is(f->c, other, "NULL") ||
              lint_is(f->c, other, "nullptr") || lint_is(f->c, other, "0")))
            return;
        is_binary = true;
        eq_success = eq;
    }
    subject = lint_strip(f->c, subject);
    if (lint_type_is(subject, "assignment_expression"))
        subject = lint_unparen(ts_node_child_by_field_name(subject, "left", 4));
    int alloc = -1;
    bool pointer = false;
    if (lint_type_is(subject, "call_expression")) {
        for (int i = f->na - 1; i >= 0; i--)
            if (ts_node_eq(f->a[i].call, subject)) {
                alloc = i;
                break;
            }
    } else if (lint_type_is(subject, "identifier")) {
        char name[NAME_CAP];
        lint_text(f->c, subject, name, sizeof name, true);
        for (int i = 0; i < f->nbinds; i++)
            if (strcmp(f->binds[i].name, name) == 0)
                alloc = f->binds[i].alloc;
        if (alloc < 0) {
            alloc = find_alloc(f, name, s, -1);
            pointer = alloc >= 0;
        }
    }
    if (alloc < 0)
        return;
    /* status: truthy = failed; pointer: truthy = exists */
    bool truthy_branch_then = is_binary ? !eq_success : true;
    if (negate)
        truthy_branch_then = !truthy_branch_then;
    bool failed_then = pointer ? !truthy_branch_then : truthy_branch_then;
    if (failed_then)
        dead_then[alloc] = 1;
    else
        dead_else[alloc] = 1;
}

static struct frame *push_frame(struct fx *f, int kind, TSNode node)
{
    if (f->nframes >= MAX_FRAMES)
        return NULL;
    struct frame *fr = &f->frames[f->nframes++];
    fr->kind = kind;
    fr->node = node;
    st_dead(&fr->brk);
    st_dead(&fr->cont);
    return fr;
}

/** Whether a branch ends by leaving (return, goto, throw, break, continue, exit()). */
static bool exits(struct fx *f, TSNode n)
{
    for (int guard = 0; guard < 64 && !ts_node_is_null(n); guard++) {
        const char *t = ts_node_type(n);
        if (strcmp(t, "return_statement") == 0 || strcmp(t, "goto_statement") == 0 ||
            strcmp(t, "throw_statement") == 0 || strcmp(t, "break_statement") == 0 ||
            strcmp(t, "continue_statement") == 0)
            return true;
        if (strcmp(t, "expression_statement") == 0) {
            TSNode call = ts_node_named_child(n, 0);
            char name[64];
            return lint_type_is(call, "call_expression") &&
                   is_noreturn(lint_call_name(f->c, call, name, sizeof name));
        }
        if (strcmp(t, "compound_statement") != 0 && strcmp(t, "else_clause") != 0)
            return false;
        uint32_t k = ts_node_named_child_count(n);
        TSNode last = {0};
        for (uint32_t i = k; i-- > 0;) {
            TSNode ch = ts_node_named_child(n, i);
            if (!lint_type_is(ch, "comment")) {
                last = ch;
                break;
            }
        }
        n = last;
    }
    return false;
}

static bool inside(TSNode inner, TSNode outer)
{
    return !ts_node_is_null(outer) && ts_node_start_byte(inner) >= ts_node_start_byte(outer) &&
           ts_node_end_byte(inner) <= ts_node_end_byte(outer);
}

static void walk_if(struct fx *f, TSNode n, struct state *s)
{
    int dead_then[MAX_ALLOCS] = {0}, dead_else[MAX_ALLOCS] = {0};
    TSNode cond = ts_node_child_by_field_name(n, "condition", 9);
    int before = f->na;
    walk_expr(f, cond, s, false);
    cond_failure(f, cond, s, false, dead_then, dead_else, 0);
    /* `if (!ok(cudaMalloc(&p, n))) return -1;`: when the condition made the allocation and
     * its meaning is not known, a branch that just leaves is the failure branch. */
    TSNode cons = ts_node_child_by_field_name(n, "consequence", 11);
    TSNode alt0 = ts_node_child_by_field_name(n, "alternative", 11);
    for (int i = before; i < f->na; i++) {
        if (dead_then[i] || dead_else[i] || !inside(f->a[i].call, cond))
            continue;
        if (exits(f, cons) && !lint_mentions(f->c, cons, f->a[i].names[0]))
            dead_then[i] = 1;
        else if (!ts_node_is_null(alt0) && exits(f, alt0) &&
                 !lint_mentions(f->c, alt0, f->a[i].names[0]))
            dead_else[i] = 1;
    }
    struct state th = *s, el = *s;
    for (int i = 0; i < MAX_ALLOCS; i++) {
        if (dead_then[i])
            th.st[i] = 0;
        if (dead_else[i])
            el.st[i] = 0;
    }
    walk_stmt(f, ts_node_child_by_field_name(n, "consequence", 11), &th);
    TSNode alt = ts_node_child_by_field_name(n, "alternative", 11);
    if (!ts_node_is_null(alt))
        walk_stmt(f, alt, &el);
    *s = th;
    st_merge(s, &el);
}

static bool is_forever(struct fx *f, TSNode cond)
{
    cond = lint_unparen(cond);
    if (lint_type_is(cond, "condition_clause"))
        cond = lint_unparen(ts_node_child_by_field_name(cond, "value", 5));
    return ts_node_is_null(cond) || lint_is(f->c, cond, "true") || lint_is(f->c, cond, "1");
}

/** Whether the loop body releases @p name before @p before: `cudaFree(p); cudaMalloc(&p, m);`
 *  replaces last iteration's buffer rather than leaking it. */
static bool released_earlier(struct fx *f, TSNode n, const char *name, uint32_t before, int depth)
{
    if (ts_node_is_null(n) || depth > MAX_DEPTH || ts_node_start_byte(n) >= before)
        return false;
    if (lint_type_is(n, "call_expression")) {
        char fn[64], arg[NAME_CAP];
        lint_call_name(f->c, n, fn, sizeof fn);
        const struct lint_wrapper *w = find_wrapper(f->c, fn);
        if (release_class(fn) != RC_NONE || w || looks_like_release(fn)) {
            TSNode a = lint_call_arg(n, w ? (uint32_t)w->param : 0);
            lint_text(f->c, lint_strip(f->c, a), arg, sizeof arg, true);
            if (strcmp(arg, name) == 0)
                return true;
        }
    }
    struct lint_iter it = lint_iter_begin(n);
    TSNode ch;
    bool found = false;
    while (!found && lint_iter_next(&it, &ch))
        found = released_earlier(f, ch, name, before, depth + 1);
    lint_iter_end(&it);
    return found;
}

static void loop_end_of_iteration(struct fx *f, TSNode loop, const struct state *it)
{
    if (!it->reach)
        return;
    for (int i = 0; i < f->na; i++) {
        struct alloc *a = &f->a[i];
        int32_t v = it->st[i];
        if (v == 0 || !a->tracked || a->lazy || !ts_node_eq(a->loop, loop))
            continue;
        if (v >= 2) {
            add_leak(f, i, v - 2);
        } else if (!(a->reported & 16u) &&
                   !released_earlier(f, ts_node_child_by_field_name(loop, "body", 4),
                                     a->names[0], ts_node_start_byte(a->call), 0)) {
            a->reported |= 16u;
            lint_report(f->c, LINT_GM005, f->c->opt->severity[LINT_GM005], a->call,
                        (TSNode){0}, NULL,
                        "'%s' is allocated with %s in every iteration of this loop and not "
                        "released in the same iteration",
                        a->names[0], a->fn);
        }
    }
}

static void walk_loop(struct fx *f, TSNode n, struct state *s)
{
    const char *t = ts_node_type(n);
    bool is_do = strcmp(t, "do_statement") == 0;
    TSNode cond = ts_node_child_by_field_name(n, "condition", 9);
    TSNode body = ts_node_child_by_field_name(n, "body", 4);
    if (is_do && lint_is(f->c, lint_unparen(cond), "0")) {
        /* do { ... } while (0): a block that break can leave */
        struct frame *fr = push_frame(f, FR_BLOCK, n);
        walk_stmt(f, body, s);
        if (fr) {
            st_merge(s, &fr->brk);
            f->nframes--;
        }
        return;
    }
    if (strcmp(t, "for_statement") == 0) {
        TSNode init = ts_node_child_by_field_name(n, "initializer", 11);
        if (lint_type_is(init, "declaration"))
            walk_declaration(f, init, s);
        else
            walk_expr(f, init, s, false);
    } else if (strcmp(t, "for_range_loop") == 0) {
        walk_expr(f, ts_node_child_by_field_name(n, "right", 5), s, false);
    }
    bool forever = !is_do && strcmp(t, "for_range_loop") != 0 && is_forever(f, cond);
    if (!is_do)
        walk_expr(f, cond, s, false);
    struct state entry = *s;
    struct frame *fr = push_frame(f, FR_LOOP, n);
    struct state it = *s;
    walk_stmt(f, body, &it);
    if (fr)
        st_merge(&it, &fr->cont);
    walk_expr(f, ts_node_child_by_field_name(n, "update", 6), &it, false);
    if (is_do)
        walk_expr(f, cond, &it, false);
    loop_end_of_iteration(f, n, &it);
    struct state after;
    st_dead(&after);
    if (!forever) {
        if (!is_do)
            after = entry;
        st_merge(&after, &it);
    }
    if (fr) {
        fr = &f->frames[f->nframes - 1];
        st_merge(&after, &fr->brk);
        f->nframes--;
    }
    *s = after;
}

static void walk_switch(struct fx *f, TSNode n, struct state *s)
{
    walk_expr(f, ts_node_child_by_field_name(n, "condition", 9), s, false);
    TSNode body = ts_node_child_by_field_name(n, "body", 4);
    struct state entry = *s, cur;
    st_dead(&cur);
    bool has_default = false;
    struct frame *fr = push_frame(f, FR_SWITCH, n);
    uint32_t k = ts_node_named_child_count(body);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(body, i);
        if (lint_type_is(ch, "case_statement")) {
            TSNode value = ts_node_child_by_field_name(ch, "value", 5);
            if (ts_node_is_null(value))
                has_default = true;
            st_merge(&cur, &entry);
            uint32_t m = ts_node_named_child_count(ch);
            for (uint32_t j = 0; j < m; j++) {
                TSNode st = ts_node_named_child(ch, j);
                if (ts_node_eq(st, value))
                    continue;
                walk_stmt(f, st, &cur);
            }
        } else {
            walk_stmt(f, ch, &cur);
        }
    }
    if (fr) {
        fr = &f->frames[f->nframes - 1];
        st_merge(&cur, &fr->brk);
        f->nframes--;
    }
    if (!has_default)
        st_merge(&cur, &entry);
    *s = cur;
}

static void walk_try(struct fx *f, TSNode n, struct state *s)
{
    struct state entry = *s;
    struct frame *fr = push_frame(f, FR_TRY, n);
    walk_stmt(f, ts_node_child_by_field_name(n, "body", 4), s);
    struct state handler = entry;
    if (fr) {
        fr = &f->frames[f->nframes - 1];
        st_merge(&handler, &fr->brk);
        f->nframes--;
    }
    struct state after = *s;
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(n, i);
        if (!lint_type_is(ch, "catch_clause"))
            continue;
        struct state h = handler;
        walk_stmt(f, ts_node_child_by_field_name(ch, "body", 4), &h);
        st_merge(&after, &h);
    }
    *s = after;
}

/** True when @p ret is a return at the function's top level (its normal end). */
static bool is_final_return(struct fx *f, TSNode ret)
{
    TSNode p = ts_node_parent(ret);
    while (lint_type_is(p, "labeled_statement"))
        p = ts_node_parent(p);
    return ts_node_eq(p, f->body);
}

static void do_goto(struct fx *f, TSNode n, struct state *s)
{
    char label[64];
    lint_text(f->c, ts_node_child_by_field_name(n, "label", 5), label, sizeof label, true);
    if (!s->reach)
        return;
    if (lint_strlist_has(&f->labels_seen, label, strlen(label))) {
        /* A backward goto is a loop: the rest of that path was walked already. */
        st_dead(s);
        return;
    }
    int e = add_exit(f, n);
    st_mark_exit(f, s, e, (TSNode){0}, false);
    struct pending_goto *p = lint_array_grow(f->gotos, f->ngotos, &f->capgotos, sizeof *p);
    if (!p) {
        st_dead(s);
        return;
    }
    f->gotos = p;
    snprintf(f->gotos[f->ngotos].label, sizeof f->gotos[0].label, "%s", label);
    f->gotos[f->ngotos].s = *s;
    f->ngotos++;
    st_dead(s);
}

static void do_label(struct fx *f, TSNode n, struct state *s)
{
    char label[64];
    lint_text(f->c, ts_node_child_by_field_name(n, "label", 5), label, sizeof label, true);
    lint_strlist_add(&f->labels_seen, label);
    for (size_t i = 0; i < f->ngotos;) {
        if (strcmp(f->gotos[i].label, label) == 0) {
            st_merge(s, &f->gotos[i].s);
            f->gotos[i] = f->gotos[--f->ngotos];
        } else {
            i++;
        }
    }
}

static void walk_preproc(struct fx *f, TSNode n, struct state *s)
{
    /* #if / #ifdef inside a function: the two branches are alternatives. */
    struct state th = *s, el = *s;
    bool has_alt = false;
    uint32_t k = ts_node_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        const char *field = ts_node_field_name_for_child(n, i);
        TSNode ch = ts_node_child(n, i);
        if (!ts_node_is_named(ch))
            continue;
        if (field && (strcmp(field, "condition") == 0 || strcmp(field, "name") == 0))
            continue;
        if (field && strcmp(field, "alternative") == 0) {
            has_alt = true;
            walk_preproc(f, ch, &el);
            continue;
        }
        walk_stmt(f, ch, &th);
    }
    (void)has_alt;
    *s = th;
    st_merge(s, &el);
}

static void walk_stmt(struct fx *f, TSNode n, struct state *s)
{
    if (ts_node_is_null(n))
        return;
    if (++f->depth > MAX_DEPTH) {
        f->depth--;
        return;
    }
    const char *t = ts_node_type(n);
    if (strcmp(t, "labeled_statement") == 0) {
        do_label(f, n, s);
        uint32_t k = ts_node_named_child_count(n);
        for (uint32_t i = 0; i < k; i++) {
            TSNode ch = ts_node_named_child(n, i);
            if (!lint_type_is(ch, "statement_identifier"))
                walk_stmt(f, ch, s);
        }
        f->depth--;
        return;
    }
    if (!s->reach) {
        /* Unreachable code may still hold a label that a goto jumps to. */
        TSNode ch;
        if (strcmp(t, "compound_statement") == 0)
            LINT_EACH_CHILD(n, ch)
                walk_stmt(f, ch, s);
        f->depth--;
        return;
    }
    if (strcmp(t, "compound_statement") == 0 || strcmp(t, "else_clause") == 0 ||
        strcmp(t, "declaration_list") == 0) {
        TSNode ch;
        LINT_EACH_CHILD(n, ch)
            walk_stmt(f, ch, s);
    } else if (strcmp(t, "declaration") == 0) {
        walk_declaration(f, n, s);
    } else if (strcmp(t, "if_statement") == 0) {
        walk_if(f, n, s);
    } else if (strcmp(t, "for_statement") == 0 || strcmp(t, "while_statement") == 0 ||
               strcmp(t, "do_statement") == 0 || strcmp(t, "for_range_loop") == 0) {
        walk_loop(f, n, s);
    } else if (strcmp(t, "switch_statement") == 0) {
        walk_switch(f, n, s);
    } else if (strcmp(t, "try_statement") == 0) {
        walk_try(f, n, s);
    } else if (strcmp(t, "return_statement") == 0 || strcmp(t, "co_return_statement") == 0) {
        uint32_t k = ts_node_named_child_count(n);
        for (uint32_t i = 0; i < k; i++) {
            TSNode v = ts_node_named_child(n, i);
            walk_expr(f, v, s, false);
            escape_mentioned(f, s, v);
        }
        leave(f, s, n, is_final_return(f, n));
    } else if (strcmp(t, "throw_statement") == 0) {
        walk_children(f, n, s);
        for (int i = f->nframes - 1; i >= 0; i--)
            if (f->frames[i].kind == FR_TRY) {
                st_merge(&f->frames[i].brk, s);
                st_dead(s);
                break;
            }
        leave(f, s, n, false);
    } else if (strcmp(t, "break_statement") == 0) {
        for (int i = f->nframes - 1; i >= 0; i--) {
            struct frame *fr = &f->frames[i];
            if (fr->kind == FR_TRY)
                continue;
            if (fr->kind == FR_LOOP)
                st_mark_exit(f, s, add_exit(f, n), fr->node, true);
            st_merge(&fr->brk, s);
            break;
        }
        st_dead(s);
    } else if (strcmp(t, "continue_statement") == 0) {
        for (int i = f->nframes - 1; i >= 0; i--) {
            struct frame *fr = &f->frames[i];
            if (fr->kind != FR_LOOP)
                continue;
            st_mark_exit(f, s, add_exit(f, n), fr->node, true);
            st_merge(&fr->cont, s);
            break;
        }
        st_dead(s);
    } else if (strcmp(t, "goto_statement") == 0) {
        do_goto(f, n, s);
    } else if (strncmp(t, "preproc_if", 10) == 0 || strcmp(t, "preproc_else") == 0 ||
               strcmp(t, "preproc_elif") == 0 || strcmp(t, "preproc_elifdef") == 0) {
        walk_preproc(f, n, s);
    } else if (strcmp(t, "function_definition") == 0 || strcmp(t, "comment") == 0 ||
               strncmp(t, "preproc_", 8) == 0) {
        /* nothing that runs here */
    } else {
        walk_expr(f, n, s, false);
    }
    f->depth--;
}

/* ---------------------------------------------------------------- reports ---- */

/** GM006 reports allocation @p i at early exits unless GM001 or GM005 already covers it. */
static bool gm006_applies(struct fx *f, int i)
{
    const struct alloc *a = &f->a[i];
    return a->tracked && !(a->reported & 16u) && !a->leak_end;
}

static void report_function(struct fx *f)
{
    for (int i = 0; i < f->na; i++) {
        struct alloc *a = &f->a[i];
        if (!a->tracked || (a->reported & 16u))
            continue;
        if (a->leak_end) {
            if (a->released_somewhere)
                lint_report(f->c, LINT_GM001, f->c->opt->severity[LINT_GM001], a->call,
                            (TSNode){0}, NULL,
                            "'%s' allocated with %s is not released on every path to the end "
                            "of '%s'",
                            a->names[0], a->fn, f->c->function);
            else
                lint_report(f->c, LINT_GM001, f->c->opt->severity[LINT_GM001], a->call,
                            (TSNode){0}, NULL,
                            "'%s' allocated with %s is never released, returned or handed "
                            "over (release it with %s)",
                            a->names[0], a->fn, kind_release(a->kind));
            continue;
        }
    }
    /* GM006: one finding per exit, naming everything it leaks, with the note at the first. */
    for (size_t k = 0; k < f->nleaks; k++) {
        int e = f->leaks[k].exit;
        if (e < 0 || e >= f->nexits)
            continue;
        TSNode ex = f->exits[e];
        bool seen = false;
        for (size_t j = 0; j < k && !seen; j++)
            seen = f->leaks[j].exit >= 0 && f->leaks[j].exit < f->nexits &&
                   ts_node_eq(f->exits[f->leaks[j].exit], ex) && gm006_applies(f, f->leaks[j].alloc);
        if (seen)
            continue;
        char names[256] = "";
        size_t len = 0;
        int first = -1, count = 0;
        for (size_t j = k; j < f->nleaks; j++) {
            int ej = f->leaks[j].exit, ai = f->leaks[j].alloc;
            if (ej < 0 || ej >= f->nexits || !ts_node_eq(f->exits[ej], ex) || !gm006_applies(f, ai))
                continue;
            bool dup = false;
            for (size_t m = k; m < j && !dup; m++)
                dup = f->leaks[m].alloc == ai && f->leaks[m].exit >= 0 &&
                      f->leaks[m].exit < f->nexits && ts_node_eq(f->exits[f->leaks[m].exit], ex);
            if (dup)
                continue;
            if (first < 0)
                first = ai;
            count++;
            if (len < sizeof names)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s'%s'",
                                        count > 1 ? ", " : "", f->a[ai].names[0]);
        }
        if (first < 0)
            continue;
        char word[16], msg[256];
        snprintf(word, sizeof word, "%s", ts_node_type(ex));
        char *us = strchr(word, '_');
        if (us)
            *us = '\0';
        snprintf(msg, sizeof msg, "'%s' allocated here with %s", f->a[first].names[0],
                 f->a[first].fn);
        lint_report(f->c, LINT_GM006, f->c->opt->severity[LINT_GM006], ex, f->a[first].call, msg,
                    "this %s leaks %s: it leaves before %s released", word, names,
                    count > 1 ? "they are" : "it is");
    }
}

/** Empties a string list but keeps its storage. */
static void strlist_clear(struct lint_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    l->n = 0;
}

void lint_rules_memory(struct lint_ctx *c, TSNode fn)
{
    TSNode body = ts_node_child_by_field_name(fn, "body", 4);
    if (ts_node_is_null(body))
        return;
    /* The work area is large (tens of KiB); it is made once per file and reused for every
     * function, which keeps malloc from growing and trimming the heap for each one. */
    struct fx *f = c->memory_scratch;
    if (!f) {
        f = calloc(1, sizeof *f);
        if (!f)
            return;
        c->memory_scratch = f;
    }
    f->c = c;
    f->fn = fn;
    f->body = body;
    f->device = lint_is_device_function(c, fn);
    f->na = f->nexits = f->nframes = f->nbinds = f->depth = 0;
    f->ngotos = f->nleaks = 0;
    strlist_clear(&f->labels_seen);
    strlist_clear(&f->locals);
    collect_locals(f, ts_node_child_by_field_name(fn, "declarator", 10), 0);
    collect_locals(f, body, 0);
    struct state s;
    st_dead(&s);
    s.reach = true;
    walk_stmt(f, body, &s);
    leave(f, &s, (TSNode){0}, true);
    /* gotos to labels never seen leave the function */
    for (size_t i = 0; i < f->ngotos; i++)
        for (int k = 0; k < f->na; k++)
            if (f->gotos[i].s.st[k] >= 2 && f->a[k].tracked)
                add_leak(f, k, f->gotos[i].s.st[k] - 2);
    report_function(f);
}

void lint_rules_memory_free(struct lint_ctx *c)
{
    struct fx *f = c->memory_scratch;
    if (!f)
        return;
    free(f->gotos);
    free(f->leaks);
    lint_strlist_free(&f->labels_seen);
    lint_strlist_free(&f->locals);
    free(f);
    c->memory_scratch = NULL;
}

/* ------------------------------------------------- file-level pre-pass and finish ---- */

static void add_wrapper(struct lint_ctx *c, const char *name, int param, const char *rel)
{
    struct lint_wrapper *p =
        lint_array_grow(c->wrappers, c->n_wrappers, &c->cap_wrappers, sizeof *p);
    if (!p)
        return;
    c->wrappers = p;
    struct lint_wrapper *w = &c->wrappers[c->n_wrappers++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->param = param;
    snprintf(w->rel, sizeof w->rel, "%s", rel);
}

static void add_allocator(struct lint_ctx *c, const char *name, int kind)
{
    struct lint_allocator *p =
        lint_array_grow(c->allocators, c->n_allocators, &c->cap_allocators, sizeof *p);
    if (!p)
        return;
    c->allocators = p;
    struct lint_allocator *a = &c->allocators[c->n_allocators++];
    snprintf(a->name, sizeof a->name, "%s", name);
    a->kind = kind;
}

struct scan {
    struct lint_ctx *c;
    char params[8][NAME_CAP];
    int nparams;
    char outvars[8][NAME_CAP];
    int outkind[8];
    int nout;
    int release_param;
    char rel[64];
    int returns_kind;
};

static void scan_body(struct scan *sc, TSNode n, int depth)
{
    if (ts_node_is_null(n) || depth > MAX_DEPTH)
        return;
    const char *t = ts_node_type(n);
    if (strcmp(t, "lambda_expression") == 0)
        return;
    if (strcmp(t, "call_expression") == 0) {
        char name[64], arg[NAME_CAP];
        lint_call_name(sc->c, n, name, sizeof name);
        const struct allocator *al = find_allocator(name);
        if (release_class(name) != RC_NONE && sc->release_param < 0) {
            lint_text(sc->c, lint_strip(sc->c, lint_call_arg(n, 0)), arg, sizeof arg, true);
            for (int i = 0; i < sc->nparams; i++)
                if (strcmp(arg, sc->params[i]) == 0) {
                    sc->release_param = i;
                    snprintf(sc->rel, sizeof sc->rel, "%s", name);
                }
        } else if (al && al->out_param && sc->nout < 8) {
            TSNode a0 = lint_strip(sc->c, lint_call_arg(n, 0));
            if (lint_type_is(a0, "pointer_expression")) {
                lint_text(sc->c, ts_node_child_by_field_name(a0, "argument", 8),
                          sc->outvars[sc->nout], NAME_CAP, true);
                sc->outkind[sc->nout++] = al->kind;
            }
        }
    } else if (strcmp(t, "return_statement") == 0 && ts_node_named_child_count(n) > 0) {
        TSNode v = lint_strip(sc->c, ts_node_named_child(n, 0));
        char name[NAME_CAP];
        if (lint_type_is(v, "identifier")) {
            lint_text(sc->c, v, name, sizeof name, true);
            for (int i = 0; i < sc->nout; i++)
                if (strcmp(name, sc->outvars[i]) == 0)
                    sc->returns_kind = sc->outkind[i];
        } else if (lint_type_is(v, "call_expression")) {
            lint_call_name(sc->c, v, name, sizeof name);
            const struct allocator *al = find_allocator(name);
            if (al && !al->out_param)
                sc->returns_kind = al->kind;
        }
    }
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        scan_body(sc, ch, depth + 1);
}

static void prepare_function(struct lint_ctx *c, TSNode fn)
{
    /* Only functions that call an allocator or a release can wrap one. */
    uint32_t a = ts_node_start_byte(fn), b = ts_node_end_byte(fn);
    if (!(lint_scan_words(NULL, c->src + a, b > a ? b - a : 0) & (LINT_W_CUDA | LINT_W_HOSTMEM)))
        return;
    char name[64];
    lint_function_name(c, fn, name, sizeof name);
    /* Qualified names (S::release) are called by their last component. */
    char *colon = strrchr(name, ':');
    const char *callname = colon ? colon + 1 : name;
    if (!callname[0] || find_allocator(callname) || release_class(callname) != RC_NONE)
        return;
    struct scan sc;
    memset(&sc, 0, sizeof sc);
    sc.c = c;
    sc.release_param = -1;
    TSNode d = ts_node_child_by_field_name(fn, "declarator", 10);
    while (!ts_node_is_null(d) && !lint_type_is(d, "function_declarator"))
        d = ts_node_child_by_field_name(d, "declarator", 10);
    TSNode params = ts_node_child_by_field_name(d, "parameters", 10);
    uint32_t k = ts_node_named_child_count(params);
    for (uint32_t i = 0; i < k && sc.nparams < 8; i++) {
        TSNode p = ts_node_named_child(params, i);
        TSNode id = declarator_name(ts_node_child_by_field_name(p, "declarator", 10));
        lint_text(c, id, sc.params[sc.nparams++], NAME_CAP, true);
    }
    scan_body(&sc, ts_node_child_by_field_name(fn, "body", 4), 0);
    if (sc.release_param >= 0)
        add_wrapper(c, callname, sc.release_param, sc.rel);
    if (sc.returns_kind != LK_NONE)
        add_allocator(c, callname, sc.returns_kind);
}

void lint_rules_memory_prepare(struct lint_ctx *c)
{
    lint_for_each_function(c, prepare_function);
}

void lint_rules_memory_finish(struct lint_ctx *c)
{
    /* Releases of fields and globals against the file's allocations of the same name, when
     * all those allocations agree on the kind. */
    size_t n_alloc = 0;
    size_t *alloc_idx = malloc((c->n_far ? c->n_far : 1) * sizeof *alloc_idx);
    if (!alloc_idx)
        return;
    for (size_t i = 0; i < c->n_far; i++)
        if (c->far[i].kind != LK_NONE)
            alloc_idx[n_alloc++] = i;
    for (size_t i = 0; i < c->n_far && n_alloc; i++) {
        struct lint_far *r = &c->far[i];
        if (r->kind != LK_NONE)
            continue;
        int kind = LK_NONE;
        const struct lint_far *site = NULL;
        bool conflict = false;
        for (size_t j = 0; j < n_alloc; j++) {
            const struct lint_far *a = &c->far[alloc_idx[j]];
            if (strcmp(a->key, r->key) != 0)
                continue;
            if (kind != LK_NONE && a->kind != kind)
                conflict = true;
            kind = a->kind;
            site = a;
        }
        if (conflict || !site || !mismatch(kind, release_class(r->fn)))
            continue;
        /* Already reported inside the allocating function? */
        if (ts_node_start_byte(site->node) < ts_node_start_byte(r->node) &&
            strcmp(site->function, r->function) == 0)
            continue;
        char msg[160];
        snprintf(msg, sizeof msg, "allocated here with %s", site->fn);
        const char *saved = c->function;
        c->function = r->function;
        lint_report(c, LINT_GM002, c->opt->severity[LINT_GM002], r->node, site->node, msg,
                    "memory from %s released with %s (release it with %s)", site->fn, r->fn,
                    kind_release(kind));
        c->function = saved;
    }
    free(alloc_idx);
}

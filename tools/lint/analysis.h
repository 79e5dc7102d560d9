/* Shared state and syntax-tree helpers of the rule modules. One lint_ctx lives for the
 * analysis of one file; nothing in it is shared between threads. */
#ifndef GPUMEM_LINT_ANALYSIS_H
#define GPUMEM_LINT_ANALYSIS_H

#include "lint_internal.h"

#include <stdbool.h>

/** Allocation kinds, as far as matching releases is concerned. */
enum lint_kind {
    LK_NONE = 0,
    LK_DEVICE,  /* cudaMalloc, cudaMallocAsync, cudaMallocPitch */
    LK_MANAGED, /* cudaMallocManaged */
    LK_PINNED,  /* cudaMallocHost, cudaHostAlloc */
    LK_MALLOC,  /* malloc, calloc, realloc, strdup */
    LK_NEW,     /* new */
    LK_GPUMEM,  /* gpumem_*_alloc: any kind, released by gpumem_free */
    LK_ANY      /* released by a wrapper or an unknown release: any kind fits */
};

/** A function in this file that releases one of its parameters (a release wrapper). */
struct lint_wrapper {
    char name[64];
    int param;     /**< index of the released parameter */
    char rel[64];  /**< the release it calls ("cudaFree") */
};

/** A function in this file that returns fresh memory (an allocation wrapper). */
struct lint_allocator {
    char name[64];
    int kind;
};

/** A release seen in a function of pointers stored outside any function (struct fields,
 *  globals), checked against the file's allocations of the same field once all are seen. */
struct lint_far {
    char key[96];
    int kind;     /* for an allocation; LK_NONE for a release */
    char fn[64];  /* allocator or release function */
    TSNode node;
    char function[64];
};

/** A pointer or array variable and the size of what it points to (0: unknown). */
struct lint_sym {
    char name[64];
    int elem;    /**< element size for pointers and arrays */
    int levels;  /**< 0 scalar, 1 pointer or array, 2 deeper */
    TSNode init; /**< a scalar's initialiser, or null */
};

struct lint_ctx {
    const struct lint_options *opt;
    const char *path;
    const char *src;
    uint32_t len;
    TSNode root;
    struct lint_file_result *out;
    const char *function; /**< name of the function being analysed */

    struct lint_wrapper *wrappers;
    size_t n_wrappers, cap_wrappers;
    struct lint_allocator *allocators;
    size_t n_allocators, cap_allocators;
    struct lint_far *far;
    size_t n_far, cap_far;

    /* GM003: element types of file-scope pointers and arrays */
    struct lint_sym *globals;
    size_t n_globals, cap_globals;
    bool globals_done;

    void *memory_scratch; /**< rules_memory.c's work area, reused across functions */

    /* suppressions: per line, a bit per rule (bit 31: all rules) */
    uint32_t *suppress;
    uint32_t n_lines;
    uint32_t file_suppress; /**< rules suppressed for the whole file */
};

/* ---- ast.c: syntax-tree helpers ---- */
/** True when the node's text equals @p s. */
bool lint_is(const struct lint_ctx *c, TSNode n, const char *s);
/** True when the node's type is @p t. */
bool lint_type_is(TSNode n, const char *t);
/** Copies the node's text (whitespace removed when @p squeeze) into @p buf; returns it. */
char *lint_text(const struct lint_ctx *c, TSNode n, char *buf, size_t cap, bool squeeze);
/** Skips parentheses, casts (C casts and the four C++ casts) and `&*`: the expression that
 *  names the pointer. */
TSNode lint_strip(const struct lint_ctx *c, TSNode n);
/** Skips parentheses only. */
TSNode lint_unparen(TSNode n);
/** The called name of a call_expression (last component: `std::free` gives "free",
 *  `v.push_back` gives "push_back"), or "" for calls through expressions. */
char *lint_call_name(const struct lint_ctx *c, TSNode call, char *buf, size_t cap);
/** Argument @p i (0-based) of a call_expression, or a null node. */
TSNode lint_call_arg(TSNode call, uint32_t i);
uint32_t lint_call_argc(TSNode call);
/** True when the call is a kernel launch (`k<<<...>>>(...)`). */
bool lint_is_launch(TSNode call);
/** True when an identifier named @p name occurs anywhere inside @p n. */
bool lint_mentions(const struct lint_ctx *c, TSNode n, const char *name);
/** The function_definition's name, or "" */
char *lint_function_name(const struct lint_ctx *c, TSNode fn, char *buf, size_t cap);
/** True for functions marked __global__ or __device__ (and not __host__). */
bool lint_is_device_function(const struct lint_ctx *c, TSNode fn);
/** Calls @p visit on every function_definition (and lambda bodies are left inside). */
void lint_for_each_function(struct lint_ctx *c, void (*visit)(struct lint_ctx *, TSNode fn));
/** True for a null node. */
static inline bool lint_null(TSNode n) { return ts_node_is_null(n); }
/** True when @p name is a CUDA runtime call returning cudaError_t. */
bool lint_is_cuda_api(const char *name);
/** True when @p name is a configured or built-in check macro. */
bool lint_is_check_macro(const struct lint_ctx *c, const char *name);

/** Iterates over the named children of a node in O(1) a step (ts_node_named_child(n, i) in a
 *  loop is quadratic, and whole-tree walks made of it dominated the run time). */
struct lint_iter {
    TSTreeCursor cur;
    int state; /* 0 before the first child, 1 on a child, 2 done */
};
static inline struct lint_iter lint_iter_begin(TSNode n)
{
    struct lint_iter it;
    it.cur = ts_tree_cursor_new(n);
    it.state = 0;
    return it;
}
static inline bool lint_iter_next(struct lint_iter *it, TSNode *out)
{
    for (;;) {
        if (it->state == 0) {
            if (!ts_tree_cursor_goto_first_child(&it->cur)) {
                it->state = 2;
                return false;
            }
            it->state = 1;
        } else if (it->state == 1) {
            if (!ts_tree_cursor_goto_next_sibling(&it->cur)) {
                it->state = 2;
                return false;
            }
        } else {
            return false;
        }
        TSNode n = ts_tree_cursor_current_node(&it->cur);
        if (ts_node_is_named(n)) {
            *out = n;
            return true;
        }
    }
}
static inline void lint_iter_end(struct lint_iter *it)
{
    ts_tree_cursor_delete(&it->cur);
}
/** for (each named child CH of N) { ... } — no break or return inside. */
#define LINT_EACH_CHILD(n, ch)                                                                   \
    for (struct lint_iter it_##ch = lint_iter_begin(n);                                          \
         lint_iter_next(&it_##ch, &ch) || (lint_iter_end(&it_##ch), false);)

/** What a stretch of source names, as bits: LINT_W_CUDA a cuda*, gpumem* or GPUMEM* name or a
 *  `<<<` launch; LINT_W_VECTOR a CUDA vector type; LINT_W_HOSTMEM malloc, free, new, delete
 *  and friends; LINT_W_WRAPPER an allocation wrapper of this file (needs @p c). */
enum { LINT_W_CUDA = 1, LINT_W_VECTOR = 2, LINT_W_HOSTMEM = 4, LINT_W_WRAPPER = 8 };
unsigned lint_scan_words(const struct lint_ctx *c, const char *src, size_t len);

/* ---- rule modules ---- */
void lint_rules_memory_prepare(struct lint_ctx *c);
void lint_rules_memory(struct lint_ctx *c, TSNode fn);
void lint_rules_memory_finish(struct lint_ctx *c);
void lint_rules_memory_free(struct lint_ctx *c);
void lint_rules_check(struct lint_ctx *c, TSNode fn);
void lint_rules_vector(struct lint_ctx *c, TSNode fn);

#endif

/* GM004: every cudaError_t must be looked at before the next CUDA call, and every kernel
 * launch must be followed by cudaGetLastError (or cudaPeekAtLastError) before the next CUDA
 * call, because the next call may report or overwrite the launch's error.
 *
 * The walk follows source order, which is execution order for straight-line code; calls in
 * the two arms of an if/else are recognised as alternatives so that `if (a) e = f(); else
 * e = g(); check(e);` is not taken for an overwrite. */
#include "analysis.h"

#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 400

struct ck {
    struct lint_ctx *c;
    TSNode pending_call;  /* status stored in pending_var, not yet looked at */
    char pending_var[96];
    TSNode pending_launch;
    int depth;
};

static bool is_launch_check(struct ck *k, const char *name, TSNode call)
{
    if (strcmp(name, "cudaGetLastError") == 0 || strcmp(name, "cudaPeekAtLastError") == 0)
        return true;
    if (lint_strlist_has(&k->c->opt->launch_checks, name, strlen(name)))
        return true;
    /* A check macro called with no argument (CUDA_CHECK_LAST()) checks the last error. */
    return lint_is_check_macro(k->c, name) && lint_call_argc(call) == 0;
}

/** Whether @p a and @p b lie in different arms of one if statement (or case labels of one
 *  switch), so that at most one of them runs. */
static bool alternatives(TSNode a, TSNode b)
{
    for (TSNode p = ts_node_parent(a); !ts_node_is_null(p); p = ts_node_parent(p)) {
        uint32_t as = ts_node_start_byte(a), bs = ts_node_start_byte(b);
        const char *t = ts_node_type(p);
        if (strncmp(t, "preproc_if", 10) == 0 || strncmp(t, "preproc_el", 10) == 0) {
            /* #if A ... #else B #endif: the part before the alternative and the
             * alternative never both run */
            TSNode alt = ts_node_child_by_field_name(p, "alternative", 11);
            if (ts_node_is_null(alt))
                continue;
            uint32_t split = ts_node_start_byte(alt), end = ts_node_end_byte(alt);
            uint32_t start = ts_node_start_byte(p);
            bool a_first = as >= start && as < split, b_first = bs >= start && bs < split;
            bool a_alt = as >= split && as < end, b_alt = bs >= split && bs < end;
            if ((a_first && b_alt) || (a_alt && b_first))
                return true;
            continue;
        }
        if (strcmp(t, "if_statement") != 0)
            continue;
        TSNode cons = ts_node_child_by_field_name(p, "consequence", 11);
        TSNode alt = ts_node_child_by_field_name(p, "alternative", 11);
        if (ts_node_is_null(alt))
            continue;
        bool a_cons = as >= ts_node_start_byte(cons) && as < ts_node_end_byte(cons);
        bool a_alt = as >= ts_node_start_byte(alt) && as < ts_node_end_byte(alt);
        bool b_cons = bs >= ts_node_start_byte(cons) && bs < ts_node_end_byte(cons);
        bool b_alt = bs >= ts_node_start_byte(alt) && bs < ts_node_end_byte(alt);
        if ((a_cons && b_alt) || (a_alt && b_cons))
            return true;
    }
    return false;
}

static void report_stored(struct ck *k, const char *next)
{
    char name[64];
    lint_call_name(k->c, k->pending_call, name, sizeof name);
    if (next)
        lint_report(k->c, LINT_GM004, k->c->opt->severity[LINT_GM004], k->pending_call,
                    (TSNode){0}, NULL,
                    "the status of %s stored in '%s' is not checked before the next CUDA call "
                    "(%s)",
                    name, k->pending_var, next);
    else
        lint_report(k->c, LINT_GM004, k->c->opt->severity[LINT_GM004], k->pending_call,
                    (TSNode){0}, NULL, "the status of %s stored in '%s' is never checked", name,
                    k->pending_var);
    k->pending_call = (TSNode){0};
}

/** How the value of @p call is used: 0 discarded, 1 looked at, 2 stored into var. */
static int result_use(struct ck *k, TSNode call, char *var, size_t cap)
{
    TSNode n = call, p = ts_node_parent(call);
    while (lint_type_is(p, "parenthesized_expression")) {
        n = p;
        p = ts_node_parent(p);
    }
    if (ts_node_is_null(p))
        return 1;
    const char *t = ts_node_type(p);
    if (strcmp(t, "expression_statement") == 0)
        return 0;
    if (strcmp(t, "cast_expression") == 0) {
        /* (void)cudaFree(p) says "ignored on purpose" */
        return 1;
    }
    if (strcmp(t, "comma_expression") == 0) {
        TSNode left = ts_node_child_by_field_name(p, "left", 4);
        if (ts_node_eq(left, n))
            return 0;
        return result_use(k, p, var, cap);
    }
    if (strcmp(t, "assignment_expression") == 0 &&
        lint_is(k->c, ts_node_child_by_field_name(p, "operator", 8), "=") &&
        ts_node_eq(ts_node_child_by_field_name(p, "right", 5), n)) {
        TSNode left = lint_unparen(ts_node_child_by_field_name(p, "left", 4));
        if (!lint_type_is(left, "identifier"))
            return 1;
        /* `return err = f();`, `if ((err = f()))`: looked at right away */
        TSNode gp = ts_node_parent(p);
        if (!lint_type_is(gp, "expression_statement"))
            return 1;
        lint_text(k->c, left, var, cap, true);
        return 2;
    }
    if (strcmp(t, "init_declarator") == 0) {
        TSNode d = ts_node_child_by_field_name(p, "declarator", 10);
        if (!lint_type_is(d, "identifier"))
            return 1;
        lint_text(k->c, d, var, cap, true);
        return 2;
    }
    return 1;
}

static void on_cuda_call(struct ck *k, TSNode call, const char *name)
{
    if (!ts_node_is_null(k->pending_call) && !alternatives(k->pending_call, call))
        report_stored(k, name);
    if (!ts_node_is_null(k->pending_launch)) {
        if (is_launch_check(k, name, call)) {
            k->pending_launch = (TSNode){0};
        } else if (!alternatives(k->pending_launch, call)) {
            char kname[64];
            lint_call_name(k->c, k->pending_launch, kname, sizeof kname);
            lint_report(k->c, LINT_GM004, k->c->opt->severity[LINT_GM004], k->pending_launch,
                        (TSNode){0}, NULL,
                        "launch of '%s' is not checked with cudaGetLastError() before the next "
                        "CUDA call (%s)",
                        kname, name);
            k->pending_launch = (TSNode){0};
        }
    }
}

/** Whether the call sits inside the argument list of a check macro (or any other call that
 *  receives its status). */
static bool inside_check(struct ck *k, TSNode call)
{
    char name[64];
    for (TSNode p = ts_node_parent(call); !ts_node_is_null(p); p = ts_node_parent(p)) {
        const char *t = ts_node_type(p);
        if (strcmp(t, "call_expression") == 0) {
            lint_call_name(k->c, p, name, sizeof name);
            if (lint_is_check_macro(k->c, name))
                return true;
        }
        if (strstr(t, "statement") || strcmp(t, "declaration") == 0 ||
            strcmp(t, "function_definition") == 0 || strcmp(t, "lambda_expression") == 0)
            break;
    }
    return false;
}

static void walk(struct ck *k, TSNode n)
{
    if (ts_node_is_null(n) || k->depth > MAX_DEPTH)
        return;
    k->depth++;
    const char *t = ts_node_type(n);
    if (strcmp(t, "identifier") == 0) {
        if (!ts_node_is_null(k->pending_call) && lint_is(k->c, n, k->pending_var)) {
            /* A read, unless it is the left side of a plain assignment. */
            TSNode p = ts_node_parent(n);
            bool overwritten = lint_type_is(p, "assignment_expression") &&
                               ts_node_eq(ts_node_child_by_field_name(p, "left", 4), n) &&
                               lint_is(k->c, ts_node_child_by_field_name(p, "operator", 8), "=");
            if (!overwritten)
                k->pending_call = (TSNode){0};
        }
        k->depth--;
        return;
    }
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        walk(k, ch);
    if (strcmp(t, "call_expression") == 0) {
        char name[64];
        lint_call_name(k->c, n, name, sizeof name);
        bool api_launch = (strncmp(name, "cudaLaunchKernel", 16) == 0 ||
                           strncmp(name, "cudaLaunchCooperativeKernel", 27) == 0) &&
                          result_use(k, n, (char[96]){0}, 96) == 0 && !inside_check(k, n);
        if (lint_is_launch(n) || api_launch) {
            /* cudaLaunchKernel* with its status dropped is checked like a <<<>>> launch */
            on_cuda_call(k, n, name);
            k->pending_launch = n;
        } else if (is_launch_check(k, name, n)) {
            k->pending_launch = (TSNode){0};
        } else if (lint_is_cuda_api(name)) {
            on_cuda_call(k, n, name);
            if (!inside_check(k, n)) {
                char var[96];
                int use = result_use(k, n, var, sizeof var);
                if (use == 0)
                    lint_report(k->c, LINT_GM004, k->c->opt->severity[LINT_GM004], n,
                                (TSNode){0}, NULL,
                                "the cudaError_t returned by %s is ignored (wrap the call in a "
                                "check macro such as CUDA_CHECK)",
                                name);
                else if (use == 2) {
                    k->pending_call = n;
                    snprintf(k->pending_var, sizeof k->pending_var, "%s", var);
                }
            }
        }
    }
    k->depth--;
}

void lint_rules_check(struct lint_ctx *c, TSNode fn)
{
    struct ck k;
    memset(&k, 0, sizeof k);
    k.c = c;
    walk(&k, ts_node_child_by_field_name(fn, "body", 4));
    if (!ts_node_is_null(k.pending_call))
        report_stored(&k, NULL);
}

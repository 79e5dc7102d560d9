/* Small helpers over tree-sitter nodes, so that the rules read as questions about the code
 * ("is this a release of p?") rather than as tree walking. */
#include "analysis.h"

#include <ctype.h>
#include <string.h>

bool lint_type_is(TSNode n, const char *t)
{
    return !ts_node_is_null(n) && strcmp(ts_node_type(n), t) == 0;
}

bool lint_is(const struct lint_ctx *c, TSNode n, const char *s)
{
    if (ts_node_is_null(n))
        return false;
    uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
    size_t l = strlen(s);
    return b >= a && (size_t)(b - a) == l && b <= c->len && memcmp(c->src + a, s, l) == 0;
}

char *lint_text(const struct lint_ctx *c, TSNode n, char *buf, size_t cap, bool squeeze)
{
    size_t k = 0;
    if (cap == 0)
        return buf;
    if (!ts_node_is_null(n)) {
        uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
        if (b > c->len)
            b = c->len;
        for (uint32_t i = a; i < b && k + 1 < cap; i++) {
            unsigned char ch = (unsigned char)c->src[i];
            if (squeeze && isspace(ch))
                continue;
            buf[k++] = (char)ch;
        }
    }
    buf[k] = '\0';
    return buf;
}

TSNode lint_unparen(TSNode n)
{
    while (lint_type_is(n, "parenthesized_expression") && ts_node_named_child_count(n) > 0)
        n = ts_node_named_child(n, 0);
    return n;
}

static bool is_cpp_cast(const struct lint_ctx *c, TSNode call)
{
    TSNode f = ts_node_child_by_field_name(call, "function", 8);
    if (!lint_type_is(f, "template_function"))
        return false;
    TSNode name = ts_node_child_by_field_name(f, "name", 4);
    return lint_is(c, name, "reinterpret_cast") || lint_is(c, name, "static_cast") ||
           lint_is(c, name, "const_cast") || lint_is(c, name, "dynamic_cast");
}

TSNode lint_strip(const struct lint_ctx *c, TSNode n)
{
    for (int guard = 0; guard < 64 && !ts_node_is_null(n); guard++) {
        const char *t = ts_node_type(n);
        if (strcmp(t, "parenthesized_expression") == 0 || strcmp(t, "cast_expression") == 0) {
            TSNode v = strcmp(t, "cast_expression") == 0
                           ? ts_node_child_by_field_name(n, "value", 5)
                           : ts_node_named_child(n, 0);
            if (ts_node_is_null(v))
                return n;
            n = v;
        } else if (strcmp(t, "call_expression") == 0 && is_cpp_cast(c, n)) {
            TSNode a = lint_call_arg(n, 0);
            if (ts_node_is_null(a))
                return n;
            n = a;
        } else {
            return n;
        }
    }
    return n;
}

char *lint_call_name(const struct lint_ctx *c, TSNode call, char *buf, size_t cap)
{
    TSNode f = ts_node_child_by_field_name(call, "function", 8);
    for (int guard = 0; guard < 16 && !ts_node_is_null(f); guard++) {
        const char *t = ts_node_type(f);
        if (strcmp(t, "identifier") == 0 || strcmp(t, "field_identifier") == 0)
            return lint_text(c, f, buf, cap, false);
        if (strcmp(t, "qualified_identifier") == 0 || strcmp(t, "template_function") == 0)
            f = ts_node_child_by_field_name(f, "name", 4);
        else if (strcmp(t, "field_expression") == 0)
            f = ts_node_child_by_field_name(f, "field", 5);
        else if (strcmp(t, "parenthesized_expression") == 0)
            f = ts_node_named_child(f, 0);
        else
            break;
    }
    if (cap)
        buf[0] = '\0';
    return buf;
}

TSNode lint_call_arg(TSNode call, uint32_t i)
{
    TSNode args = ts_node_child_by_field_name(call, "arguments", 9);
    if (ts_node_is_null(args) || i >= ts_node_named_child_count(args)) {
        TSNode none = {0};
        return none;
    }
    /* Comments inside the argument list are named children too: skip them. */
    uint32_t k = 0;
    for (uint32_t j = 0; j < ts_node_named_child_count(args); j++) {
        TSNode a = ts_node_named_child(args, j);
        if (lint_type_is(a, "comment"))
            continue;
        if (k++ == i)
            return a;
    }
    TSNode none = {0};
    return none;
}

uint32_t lint_call_argc(TSNode call)
{
    TSNode args = ts_node_child_by_field_name(call, "arguments", 9);
    uint32_t k = 0;
    if (ts_node_is_null(args))
        return 0;
    for (uint32_t j = 0; j < ts_node_named_child_count(args); j++)
        if (!lint_type_is(ts_node_named_child(args, j), "comment"))
            k++;
    return k;
}

bool lint_is_launch(TSNode call)
{
    uint32_t n = ts_node_named_child_count(call);
    for (uint32_t i = 0; i < n; i++)
        if (lint_type_is(ts_node_named_child(call, i), "kernel_call_syntax"))
            return true;
    return false;
}

bool lint_mentions(const struct lint_ctx *c, TSNode n, const char *name)
{
    if (ts_node_is_null(n))
        return false;
    const char *t = ts_node_type(n);
    if (strcmp(t, "identifier") == 0)
        return lint_is(c, n, name);
    /* A field named like the variable (s.p) is not the variable. */
    if (strcmp(t, "field_identifier") == 0)
        return false;
    struct lint_iter it = lint_iter_begin(n);
    TSNode ch;
    bool found = false;
    while (!found && lint_iter_next(&it, &ch))
        found = lint_mentions(c, ch, name);
    lint_iter_end(&it);
    return found;
}

char *lint_function_name(const struct lint_ctx *c, TSNode fn, char *buf, size_t cap)
{
    TSNode d = ts_node_child_by_field_name(fn, "declarator", 10);
    for (int guard = 0; guard < 16 && !ts_node_is_null(d); guard++) {
        const char *t = ts_node_type(d);
        if (strcmp(t, "function_declarator") == 0) {
            TSNode name = ts_node_child_by_field_name(d, "declarator", 10);
            return lint_text(c, name, buf, cap, true);
        }
        d = ts_node_child_by_field_name(d, "declarator", 10);
    }
    if (cap)
        buf[0] = '\0';
    return buf;
}

bool lint_is_device_function(const struct lint_ctx *c, TSNode fn)
{
    bool device = false, host = false;
    uint32_t n = ts_node_child_count(fn);
    for (uint32_t i = 0; i < n; i++) {
        TSNode ch = ts_node_child(fn, i);
        if (lint_type_is(ch, "compound_statement"))
            break;
        if (lint_is(c, ch, "__global__") || lint_is(c, ch, "__device__"))
            device = true;
        if (lint_is(c, ch, "__host__"))
            host = true;
    }
    return device && !host;
}

static void visit_functions(struct lint_ctx *c, TSNode n, void (*visit)(struct lint_ctx *, TSNode),
                            int depth)
{
    /* Deeply nested input (fuzzers make it) must not exhaust the stack. */
    if (depth > 200)
        return;
    if (lint_type_is(n, "function_definition")) {
        visit(c, n);
        /* Functions inside functions exist only as class members in local classes; they are
         * rare enough to leave out rather than analyse twice. */
        return;
    }
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        visit_functions(c, ch, visit, depth + 1);
}

void lint_for_each_function(struct lint_ctx *c, void (*visit)(struct lint_ctx *, TSNode fn))
{
    visit_functions(c, c->root, visit, 0);
}

/* Runtime calls that do not return a status to check, or whose result is the check. */
static const char *const not_status[] = {
    "cudaGetErrorString", "cudaGetErrorName", "cudaGetLastError", "cudaPeekAtLastError",
    "cudaCreateChannelDesc", "cudaGetKernel", NULL,
};

bool lint_is_cuda_api(const char *name)
{
    if (strncmp(name, "cuda", 4) != 0 || !isupper((unsigned char)name[4]))
        return false;
    /* cuda_occupancy.h's calculator returns cudaOccError, not cudaError_t */
    if (strncmp(name, "cudaOcc", 7) == 0)
        return false;
    for (size_t i = 0; not_status[i]; i++)
        if (strcmp(name, not_status[i]) == 0)
            return false;
    /* Project helpers named like the runtime (cudaCheck, cudaSafeCall, cudaCheckError) are
     * checks, not calls to check. */
    if (strstr(name, "Check") || strstr(name, "Safe") || strstr(name, "Assert") ||
        strstr(name, "Handle") || strstr(name, "Verify"))
        return false;
    return true;
}

bool lint_is_check_macro(const struct lint_ctx *c, const char *name)
{
    return name[0] && lint_strlist_has(&c->opt->check_macros, name, strlen(name));
}

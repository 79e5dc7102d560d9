/* GM003: a vector view (float4 *, int2 *, half2 *, ...) made from `base + k` or `&base[k]`
 * must start at a multiple of the vector's alignment. With the element size of base known
 * from its declaration, a constant k gives a definite answer (a warning when misaligned); a
 * k of known factors (4 * i on float gives 16 * i bytes) can still prove alignment; anything
 * else gets a note that alignment is not provable. */
#include "analysis.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 400
#define BIG (1LL << 40)

struct vec_type {
    const char *name;
    int size;
    int align;
};

/* CUDA's vector types (vector_types.h) with their sizes and alignments on 64-bit Linux. */
static const struct vec_type vec_types[] = {
    {"char1", 1, 1},          {"uchar1", 1, 1},          {"char2", 2, 2},
    {"uchar2", 2, 2},         {"char3", 3, 1},           {"uchar3", 3, 1},
    {"char4", 4, 4},          {"uchar4", 4, 4},          {"short1", 2, 2},
    {"ushort1", 2, 2},        {"short2", 4, 4},          {"ushort2", 4, 4},
    {"short3", 6, 2},         {"ushort3", 6, 2},         {"short4", 8, 8},
    {"ushort4", 8, 8},        {"int1", 4, 4},            {"uint1", 4, 4},
    {"int2", 8, 8},           {"uint2", 8, 8},           {"int3", 12, 4},
    {"uint3", 12, 4},         {"int4", 16, 16},          {"uint4", 16, 16},
    {"long1", 8, 8},          {"ulong1", 8, 8},          {"long2", 16, 16},
    {"ulong2", 16, 16},       {"long3", 24, 8},          {"ulong3", 24, 8},
    {"long4", 32, 16},        {"ulong4", 32, 16},        {"long4_16a", 32, 16},
    {"long4_32a", 32, 32},    {"ulong4_16a", 32, 16},    {"ulong4_32a", 32, 32},
    {"longlong1", 8, 8},      {"ulonglong1", 8, 8},      {"longlong2", 16, 16},
    {"ulonglong2", 16, 16},   {"longlong3", 24, 8},      {"ulonglong3", 24, 8},
    {"longlong4", 32, 16},    {"ulonglong4", 32, 16},    {"longlong4_16a", 32, 16},
    {"longlong4_32a", 32, 32}, {"ulonglong4_16a", 32, 16}, {"ulonglong4_32a", 32, 32},
    {"float1", 4, 4},         {"float2", 8, 8},          {"float3", 12, 4},
    {"float4", 16, 16},       {"double1", 8, 8},         {"double2", 16, 16},
    {"double3", 24, 8},       {"double4", 32, 16},       {"double4_16a", 32, 16},
    {"double4_32a", 32, 32},  {"half2", 4, 4},           {"__half2", 4, 4},
    {"nv_bfloat162", 4, 4},   {"__nv_bfloat162", 4, 4},  {NULL, 0, 0},
};

struct scalar {
    const char *name;
    int size;
};

static const struct scalar scalars[] = {
    {"char", 1},       {"signed char", 1},  {"unsigned char", 1},      {"bool", 1},
    {"int8_t", 1},     {"uint8_t", 1},      {"std::byte", 1},          {"short", 2},
    {"unsigned short", 2}, {"short int", 2}, {"int16_t", 2},           {"uint16_t", 2},
    {"half", 2},       {"__half", 2},       {"__nv_bfloat16", 2},      {"nv_bfloat16", 2},
    {"int", 4},        {"unsigned", 4},     {"unsigned int", 4},       {"signed", 4},
    {"int32_t", 4},    {"uint32_t", 4},     {"float", 4},              {"long", 8},
    {"unsigned long", 8}, {"long long", 8}, {"unsigned long long", 8}, {"long int", 8},
    {"int64_t", 8},    {"uint64_t", 8},     {"size_t", 8},             {"ptrdiff_t", 8},
    {"double", 8},     {"uintptr_t", 8},    {"intptr_t", 8},           {NULL, 0},
};

static const struct vec_type *find_vec(const char *name)
{
    for (size_t i = 0; vec_types[i].name; i++)
        if (strcmp(vec_types[i].name, name) == 0)
            return &vec_types[i];
    return NULL;
}

/** Size of a named type, 0 when unknown. @p name has single spaces between words. */
static int type_size(const char *name)
{
    for (size_t i = 0; scalars[i].name; i++)
        if (strcmp(scalars[i].name, name) == 0)
            return scalars[i].size;
    const struct vec_type *v = find_vec(name);
    return v ? v->size : 0;
}

/** The type's text with runs of white space as one space. */
static char *type_name(const struct lint_ctx *c, TSNode type, char *buf, size_t cap)
{
    char raw[128];
    lint_text(c, type, raw, sizeof raw, false);
    size_t k = 0;
    bool space = false;
    for (const char *p = raw; *p && k + 1 < cap; p++) {
        if (isspace((unsigned char)*p)) {
            space = k > 0;
            continue;
        }
        if (space && k + 2 < cap)
            buf[k++] = ' ';
        space = false;
        buf[k++] = *p;
    }
    buf[k] = '\0';
    return buf;
}

/** Counts pointer and array levels of a declarator; returns the declared identifier. */
static TSNode declarator_levels(TSNode d, int *levels)
{
    *levels = 0;
    for (int guard = 0; guard < 32 && !ts_node_is_null(d); guard++) {
        const char *t = ts_node_type(d);
        if (strcmp(t, "identifier") == 0)
            return d;
        if (strcmp(t, "pointer_declarator") == 0 || strcmp(t, "array_declarator") == 0)
            (*levels)++;
        else if (strcmp(t, "function_declarator") == 0)
            break;
        TSNode n = ts_node_child_by_field_name(d, "declarator", 10);
        if (ts_node_is_null(n) && ts_node_named_child_count(d) > 0)
            n = ts_node_named_child(d, 0);
        d = n;
    }
    TSNode none = {0};
    return none;
}

static void add_sym(struct lint_sym **v, size_t *n, size_t *cap, const char *name, int elem,
                    int levels, TSNode init)
{
    struct lint_sym *p = lint_array_grow(*v, *n, cap, sizeof *p);
    if (!p)
        return;
    *v = p;
    snprintf((*v)[*n].name, sizeof(*v)[*n].name, "%s", name);
    (*v)[*n].elem = elem;
    (*v)[*n].levels = levels;
    (*v)[*n].init = init;
    (*n)++;
}

/** Adds the pointer variables (one level) declared by a declaration or parameter. */
static void syms_of_decl(const struct lint_ctx *c, TSNode decl, struct lint_sym **v, size_t *n,
                         size_t *cap)
{
    char tname[96], name[64];
    type_name(c, ts_node_child_by_field_name(decl, "type", 4), tname, sizeof tname);
    int size = type_size(tname);
    uint32_t k = ts_node_child_count(decl);
    for (uint32_t i = 0; i < k; i++) {
        const char *field = ts_node_field_name_for_child(decl, i);
        if (!field || strcmp(field, "declarator") != 0)
            continue;
        TSNode d = ts_node_child(decl, i), init = {0};
        if (lint_type_is(d, "init_declarator")) {
            init = ts_node_child_by_field_name(d, "value", 5);
            d = ts_node_child_by_field_name(d, "declarator", 10);
        }
        int levels;
        TSNode id = declarator_levels(d, &levels);
        if (ts_node_is_null(id))
            continue;
        lint_text(c, id, name, sizeof name, true);
        /* Only one level (T *p or T a[]) points at elements of T; a deeper pointer is
         * recorded as unknown so that it hides a global of the same name. */
        add_sym(v, n, cap, name, levels == 1 ? size : 0, levels > 2 ? 2 : levels,
                levels == 0 ? init : (TSNode){0});
    }
}

static void lint_string_add_unique(struct lint_strlist *l, const char *s);

struct vx {
    struct lint_ctx *c;
    struct lint_sym *syms;
    size_t n, cap;
    struct lint_strlist assigned; /* scalars changed after their declaration */
    int depth;
};

static void collect(struct vx *x, TSNode n, int depth)
{
    if (ts_node_is_null(n) || depth > MAX_DEPTH)
        return;
    const char *t = ts_node_type(n);
    if (strcmp(t, "declaration") == 0 || strcmp(t, "parameter_declaration") == 0)
        syms_of_decl(x->c, n, &x->syms, &x->n, &x->cap);
    TSNode target = {0};
    if (strcmp(t, "assignment_expression") == 0)
        target = lint_unparen(ts_node_child_by_field_name(n, "left", 4));
    else if (strcmp(t, "update_expression") == 0)
        target = lint_unparen(ts_node_child_by_field_name(n, "argument", 8));
    else if (strcmp(t, "pointer_expression") == 0 && lint_is(x->c, ts_node_child(n, 0), "&"))
        target = lint_unparen(ts_node_child_by_field_name(n, "argument", 8));
    if (lint_type_is(target, "identifier")) {
        char name[64];
        lint_string_add_unique(&x->assigned, lint_text(x->c, target, name, sizeof name, true));
    }
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        collect(x, ch, depth + 1);
}

static void lint_string_add_unique(struct lint_strlist *l, const char *s)
{
    if (!lint_strlist_has(l, s, strlen(s)))
        lint_strlist_add(l, s);
}

static void collect_globals(struct lint_ctx *c, TSNode n, int depth)
{
    if (depth > 8)
        return;
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; i++) {
        TSNode ch = ts_node_named_child(n, i);
        if (lint_type_is(ch, "declaration"))
            syms_of_decl(c, ch, &c->globals, &c->n_globals, &c->cap_globals);
        else if (lint_type_is(ch, "namespace_definition") || lint_type_is(ch, "linkage_specification"))
            collect_globals(c, ts_node_child_by_field_name(ch, "body", 4), depth + 1);
        else if (lint_type_is(ch, "declaration_list"))
            collect_globals(c, ch, depth + 1);
    }
}

static const struct lint_sym *find_sym(struct vx *x, const char *name)
{
    for (size_t i = x->n; i-- > 0;)
        if (strcmp(x->syms[i].name, name) == 0)
            return &x->syms[i];
    for (size_t i = 0; i < x->c->n_globals; i++)
        if (strcmp(x->c->globals[i].name, name) == 0)
            return &x->c->globals[i];
    return NULL;
}

/** -1: not a known pointer; otherwise the element size (0 unknown). */
static int elem_of(struct vx *x, TSNode base)
{
    char name[64];
    base = lint_unparen(base);
    if (lint_type_is(base, "cast_expression")) {
        TSNode td = ts_node_child_by_field_name(base, "type", 4);
        TSNode decl = ts_node_child_by_field_name(td, "declarator", 10);
        if (!lint_type_is(decl, "abstract_pointer_declarator") ||
            ts_node_named_child_count(decl) > 0)
            return -1;
        char tname[96];
        return type_size(type_name(x->c, ts_node_child_by_field_name(td, "type", 4), tname,
                                   sizeof tname));
    }
    if (!lint_type_is(base, "identifier"))
        return -1;
    lint_text(x->c, base, name, sizeof name, true);
    const struct lint_sym *sym = find_sym(x, name);
    if (!sym || sym->levels == 0)
        return -1;
    return sym->levels == 1 ? sym->elem : 0;
}

struct mult {
    bool cst;
    long long val; /* when cst */
    long long mul; /* a known factor (>= 1) when not cst */
};

static long long gcdll(long long a, long long b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static long long factor(struct mult m)
{
    return m.cst ? (m.val < 0 ? -m.val : m.val) : m.mul;
}

static struct mult unknown(void)
{
    struct mult m = {false, 0, 1};
    return m;
}

static struct mult eval(struct vx *x, TSNode n, int depth)
{
    n = lint_unparen(n);
    if (ts_node_is_null(n) || depth > 32)
        return unknown();
    const char *t = ts_node_type(n);
    if (strcmp(t, "number_literal") == 0) {
        char buf[48], *end;
        lint_text(x->c, n, buf, sizeof buf, true);
        if (strpbrk(buf, ".pP") || ((strchr(buf, 'e') || strchr(buf, 'E')) && buf[1] != 'x' &&
                                    buf[1] != 'X'))
            return unknown();
        long long v = strtoll(buf, &end, 0);
        if (end == buf || v > BIG || v < -BIG)
            return unknown();
        struct mult m = {true, v, 1};
        return m;
    }
    if (strcmp(t, "sizeof_expression") == 0) {
        TSNode td = ts_node_child_by_field_name(n, "type", 4);
        char tname[96];
        if (!ts_node_is_null(td) &&
            ts_node_is_null(ts_node_child_by_field_name(td, "declarator", 10))) {
            int s = type_size(type_name(x->c, ts_node_child_by_field_name(td, "type", 4), tname,
                                        sizeof tname));
            if (s > 0) {
                struct mult m = {true, s, 1};
                return m;
            }
        }
        return unknown();
    }
    if (strcmp(t, "cast_expression") == 0)
        return eval(x, ts_node_child_by_field_name(n, "value", 5), depth + 1);
    if (strcmp(t, "identifier") == 0) {
        /* A scalar set once at its declaration has the factors of its initialiser. */
        char name[64];
        lint_text(x->c, n, name, sizeof name, true);
        const struct lint_sym *sym = find_sym(x, name);
        if (sym && sym->levels == 0 && !ts_node_is_null(sym->init) &&
            !lint_strlist_has(&x->assigned, name, strlen(name)))
            return eval(x, sym->init, depth + 4);
        return unknown();
    }
    if (strcmp(t, "unary_expression") == 0) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        struct mult a = eval(x, ts_node_child_by_field_name(n, "argument", 8), depth + 1);
        if (lint_is(x->c, op, "-")) {
            a.val = -a.val;
            return a;
        }
        if (lint_is(x->c, op, "+"))
            return a;
        return unknown();
    }
    if (strcmp(t, "binary_expression") == 0) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        struct mult a = eval(x, ts_node_child_by_field_name(n, "left", 4), depth + 1);
        struct mult b = eval(x, ts_node_child_by_field_name(n, "right", 5), depth + 1);
        struct mult r = unknown();
        if (lint_is(x->c, op, "*")) {
            if (a.cst && b.cst) {
                r.cst = true;
                r.val = a.val * b.val;
            } else {
                long long f = factor(a) * factor(b);
                if (f == 0) {
                    r.cst = true;
                    r.val = 0;
                } else {
                    r.mul = f;
                }
            }
        } else if (lint_is(x->c, op, "+") || lint_is(x->c, op, "-")) {
            if (a.cst && b.cst) {
                r.cst = true;
                r.val = lint_is(x->c, op, "+") ? a.val + b.val : a.val - b.val;
            } else {
                r.mul = gcdll(factor(a), factor(b));
                if (r.mul == 0)
                    r.mul = 1;
            }
        } else if (lint_is(x->c, op, "<<") && b.cst && b.val >= 0 && b.val < 31) {
            if (a.cst) {
                r.cst = true;
                r.val = a.val << b.val;
            } else {
                r.mul = a.mul << b.val;
            }
        }
        if ((r.cst && (r.val > BIG || r.val < -BIG)) || r.mul > BIG || r.mul < 1)
            return unknown();
        return r;
    }
    return unknown();
}

/** The vector type a cast converts to, when it is `V *` for a vector type V. */
static const struct vec_type *cast_target(struct vx *x, TSNode td)
{
    char tname[96];
    TSNode decl = ts_node_child_by_field_name(td, "declarator", 10);
    if (!lint_type_is(decl, "abstract_pointer_declarator") || ts_node_named_child_count(decl) > 0)
        return NULL;
    return find_vec(type_name(x->c, ts_node_child_by_field_name(td, "type", 4), tname,
                              sizeof tname));
}

struct term {
    TSNode node;
    int sign;
};

/** Flattens a chain of + and - into its terms. */
static void terms_of(struct vx *x, TSNode n, int sign, struct term *t, int *nt, int depth)
{
    n = lint_unparen(n);
    if (*nt >= 16 || depth > 32)
        return;
    if (lint_type_is(n, "binary_expression")) {
        TSNode op = ts_node_child_by_field_name(n, "operator", 8);
        bool plus = lint_is(x->c, op, "+"), minus = lint_is(x->c, op, "-");
        if (plus || minus) {
            terms_of(x, ts_node_child_by_field_name(n, "left", 4), sign, t, nt, depth + 1);
            terms_of(x, ts_node_child_by_field_name(n, "right", 5), minus ? -sign : sign, t, nt,
                     depth + 1);
            return;
        }
    }
    t[*nt].node = n;
    t[*nt].sign = sign;
    (*nt)++;
}

static void check_view(struct vx *x, TSNode cast, const struct vec_type *v, TSNode operand)
{
    struct term t[16];
    int nt = 0, base = -1;
    operand = lint_unparen(operand);
    if (lint_type_is(operand, "pointer_expression") &&
        lint_is(x->c, ts_node_child(operand, 0), "&")) {
        /* &base[k] is base + k */
        TSNode sub = lint_unparen(ts_node_child_by_field_name(operand, "argument", 8));
        if (!lint_type_is(sub, "subscript_expression"))
            return;
        TSNode idx = ts_node_child_by_field_name(sub, "indices", 7);
        if (lint_type_is(idx, "subscript_argument_list"))
            idx = ts_node_named_child(idx, 0);
        if (ts_node_is_null(idx))
            idx = ts_node_child_by_field_name(sub, "index", 5);
        if (ts_node_is_null(idx))
            return;
        t[0].node = lint_unparen(ts_node_child_by_field_name(sub, "argument", 8));
        t[0].sign = 1;
        nt = 1;
        base = 0;
        terms_of(x, idx, 1, t, &nt, 0);
    } else if (lint_type_is(operand, "binary_expression")) {
        terms_of(x, operand, 1, t, &nt, 0);
        for (int i = 0; i < nt && base < 0; i++)
            if (t[i].sign > 0 && elem_of(x, t[i].node) >= 0)
                base = i;
        /* A pointer declared out of sight: the first plain name, when nothing in this file
         * says what it is. */
        if (base < 0 && lint_type_is(t[0].node, "identifier")) {
            char name[64];
            if (!find_sym(x, lint_text(x->c, t[0].node, name, sizeof name, true)))
                base = 0;
        }
        if (base < 0)
            return;
    } else {
        return;
    }
    if (nt < 2)
        return;
    int elem = elem_of(x, t[base].node);
    bool cst = true;
    long long sum = 0, fac = 0;
    for (int i = 0; i < nt; i++) {
        if (i == base)
            continue;
        struct mult m = eval(x, t[i].node, 0);
        if (m.cst) {
            sum += t[i].sign * m.val;
            fac = gcdll(fac, m.val);
        } else {
            cst = false;
            fac = gcdll(fac, m.mul);
        }
        if (sum > BIG || sum < -BIG)
            return;
    }
    char bname[64];
    lint_text(x->c, t[base].node, bname, sizeof bname, true);
    if (cst && sum == 0)
        return;
    if (elem > 0 && cst) {
        long long bytes = sum * elem;
        if (bytes % v->align != 0)
            lint_report(x->c, LINT_GM003, x->c->opt->severity[LINT_GM003], cast, (TSNode){0},
                        NULL, "%s view at offset %lld bytes is misaligned (needs a multiple of %d)",
                        v->name, bytes, v->align);
        return;
    }
    if (!cst && fac == 0)
        fac = 1;
    if (elem > 0 && ((cst ? sum : fac) * elem) % v->align == 0)
        return;
    if (elem > 0)
        lint_report(x->c, LINT_GM003, LINT_NOTE, cast, (TSNode){0}, NULL,
                    "%s view of '%s' at a non-constant offset: alignment not provable (needs a "
                    "multiple of %d bytes)",
                    v->name, bname, v->align);
    else
        lint_report(x->c, LINT_GM003, LINT_NOTE, cast, (TSNode){0}, NULL,
                    "%s view of '%s' at an offset: alignment not provable (element type of "
                    "'%s' unknown)",
                    v->name, bname, bname);
}

static void walk(struct vx *x, TSNode n)
{
    if (ts_node_is_null(n) || x->depth > MAX_DEPTH)
        return;
    x->depth++;
    const char *t = ts_node_type(n);
    if (strcmp(t, "cast_expression") == 0) {
        const struct vec_type *v = cast_target(x, ts_node_child_by_field_name(n, "type", 4));
        if (v)
            check_view(x, n, v, ts_node_child_by_field_name(n, "value", 5));
    } else if (strcmp(t, "call_expression") == 0) {
        TSNode f = ts_node_child_by_field_name(n, "function", 8);
        if (lint_type_is(f, "template_function")) {
            TSNode name = ts_node_child_by_field_name(f, "name", 4);
            if (lint_is(x->c, name, "reinterpret_cast") || lint_is(x->c, name, "static_cast")) {
                TSNode args = ts_node_child_by_field_name(f, "arguments", 9);
                TSNode td = ts_node_named_child(args, 0);
                const struct vec_type *v =
                    lint_type_is(td, "type_descriptor") ? cast_target(x, td) : NULL;
                if (v)
                    check_view(x, n, v, lint_call_arg(n, 0));
            }
        }
    }
    TSNode ch;
    LINT_EACH_CHILD(n, ch)
        walk(x, ch);
    x->depth--;
}

void lint_rules_vector(struct lint_ctx *c, TSNode fn)
{
    if (!c->globals_done) {
        c->globals_done = true;
        collect_globals(c, c->root, 0);
        /* A global may change anywhere: its initialiser proves nothing. */
        for (size_t i = 0; i < c->n_globals; i++)
            c->globals[i].init = (TSNode){0};
    }
    struct vx x;
    memset(&x, 0, sizeof x);
    x.c = c;
    collect(&x, ts_node_child_by_field_name(fn, "declarator", 10), 0);
    collect(&x, ts_node_child_by_field_name(fn, "body", 4), 0);
    walk(&x, ts_node_child_by_field_name(fn, "body", 4));
    free(x.syms);
    lint_strlist_free(&x.assigned);
}

/* What a source's text says about the build that compiles it, for units without a
 * compilation database.
 *
 * Which `.c` files are CUDA. Some builds compile a `.c` file as CUDA (`nvcc -x cu`, as
 * HeCBench's leukocyte, miniFE and cm do), and clang, told only the file's name, parses it as
 * C and stops at the first `<<<` or `#include <chrono>`: 5 of the 1440 units of the coverage
 * sweep (docs/perf/lint-coverage-2026-12-02-c.md). A C compiler refuses such a file, so the
 * signs read here never appear in C that compiles: a kernel launch (`<<<`), a `__global__`
 * function, or an include of a C++ or CUDA header (a name without an extension, as the C++
 * library's are, or a `.cuh`, `.hpp`, `.cu` ...). Only code outside comments and strings
 * counts, and only outside `#if` blocks that test __cplusplus, __CUDACC__, __NVCC__ or
 * __CUDA_ARCH__ (a header written for C and C++ alike) or are `#if 0`. A compilation
 * database says how the build compiles each file, so its units are not read (flags.c asks
 * only for units without one).
 *
 * Which define a unit lacks. 41 units of the same sweep stop for a macro their build defines
 * (-DFLOAT, -Ddfloat=double, nccl-tests' NCCL_OS_LINUX): at an `#error` the code uses to say
 * so, or at a name that is only defined under an `#if` of that macro (nccl-tests' NCCL_WEAK,
 * defined only `#if defined(NCCL_OS_LINUX)`). The message names that `#if`, so the user
 * knows which -D to pass. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <stdio.h>
#include <string.h>

/** Extensions of headers and sources that are C++ or CUDA, never C. */
static const char *const cxx_extensions[] = {"cuh", "cu", "hpp", "hh", "hxx", "h++",
                                             "cpp", "cc", "cxx", "inl", "tcc"};

/** Whether an included name is a C++ or CUDA header: the C++ library's have no extension
 *  (`<chrono>`, `<thrust/device_vector>` has one, `<cuda/std/atomic>` none). */
static int cxx_header(const char *name, size_t n)
{
    size_t base = n;
    while (base && name[base - 1] != '/')
        base--;
    const char *dot = NULL;
    for (size_t i = base; i < n; i++)
        if (name[i] == '.')
            dot = name + i;
    if (!dot)
        return 1;
    size_t el = (size_t)(name + n - dot - 1);
    for (size_t k = 0; k < sizeof cxx_extensions / sizeof cxx_extensions[0]; k++)
        if (strlen(cxx_extensions[k]) == el && memcmp(dot + 1, cxx_extensions[k], el) == 0)
            return 1;
    return 0;
}

/** Whether a conditional directive's text tests for C++ or CUDA, or is `#if 0`. */
static int guard_condition(const char *p, const char *end)
{
    static const char *const macros[] = {"__cplusplus", "__CUDACC__", "__NVCC__",
                                         "__CUDA_ARCH__"};
    for (size_t k = 0; k < sizeof macros / sizeof macros[0]; k++) {
        size_t ml = strlen(macros[k]);
        for (const char *q = p; q + ml <= end; q++)
            if (memcmp(q, macros[k], ml) == 0)
                return 1;
    }
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p < end && *p == '0' && (p + 1 == end || p[1] == ' ' || p[1] == '\t' || p[1] == '/');
}

struct scan {
    const char *text, *end;
    uint32_t line;
    unsigned depth;  /* open #if blocks */
    unsigned guard;  /* the depth of the outermost guarded block; 0 when none */
    struct lint_cuda_sign *out;
};

static int found(struct scan *s, const char *what)
{
    s->out->line = s->line;
    snprintf(s->out->what, sizeof s->out->what, "%s", what);
    return 1;
}

int lint_directive(const char *p, const char *eol, const char **w, size_t *wl, const char **rest)
{
    while (p < eol && (*p == ' ' || *p == '\t'))
        p++;
    if (p >= eol || *p != '#')
        return 0;
    p++;
    while (p < eol && (*p == ' ' || *p == '\t'))
        p++;
    *w = p;
    while (p < eol && *p >= 'a' && *p <= 'z')
        p++;
    *wl = (size_t)(p - *w);
    while (p < eol && (*p == ' ' || *p == '\t'))
        p++;
    *rest = p;
    return 1;
}

int lint_include_target(const char *p, const char *eol, const char **name, size_t *nlen,
                        char *close)
{
    while (p < eol && (*p == ' ' || *p == '\t'))
        p++;
    char c = p < eol && *p == '"' ? '"' : p < eol && *p == '<' ? '>' : 0;
    const char *e = c ? memchr(p + 1, c, (size_t)(eol - p - 1)) : NULL;
    if (!e || e == p + 1)
        return 0;
    *name = p + 1;
    *nlen = (size_t)(e - p - 1);
    *close = c;
    return 1;
}

/** The preprocessor directive on [p, eol), p at its '#': tracks the #if blocks, and returns 1
 *  for an include of a C++ or CUDA header outside a guarded block. */
static int directive(struct scan *s, const char *p, const char *eol)
{
    const char *w;
    size_t wl;
    if (!lint_directive(p, eol, &w, &wl, &p))
        return 0;
    if ((wl == 2 && memcmp(w, "if", 2) == 0) || (wl == 5 && memcmp(w, "ifdef", 5) == 0) ||
        (wl == 6 && memcmp(w, "ifndef", 6) == 0)) {
        s->depth++;
        if (!s->guard && guard_condition(p, eol))
            s->guard = s->depth;
    } else if (wl == 4 && memcmp(w, "elif", 4) == 0) {
        if (!s->guard && guard_condition(p, eol))
            s->guard = s->depth;
    } else if (wl == 5 && memcmp(w, "endif", 5) == 0) {
        if (s->guard == s->depth)
            s->guard = 0;
        if (s->depth)
            s->depth--;
    } else if (wl == 7 && memcmp(w, "include", 7) == 0 && !s->guard) {
        const char *name;
        size_t nlen;
        char close;
        if (lint_include_target(p, eol, &name, &nlen, &close) && cxx_header(name, nlen)) {
            char what[sizeof s->out->what];
            snprintf(what, sizeof what, "includes %c%.*s%c", close == '>' ? '<' : '"',
                     (int)nlen, name, close);
            return found(s, what);
        }
    }
    return 0;
}

/** Skips a comment, string or character literal starting at @p p; returns where it ends
 *  (counting its lines), or @p p when none starts there. */
static const char *skip_literal(struct scan *s, const char *p)
{
    const char *end = s->end;
    if (p + 1 < end && p[0] == '/' && p[1] == '/') {
        while (p < end && *p != '\n' && *p != '\r')
            p += *p == '\\' && p + 1 < end ? 2 : 1;
        return p;
    }
    if (p + 1 < end && p[0] == '/' && p[1] == '*') {
        for (p += 2; p < end && !(p[0] == '*' && p + 1 < end && p[1] == '/'); p++)
            if (*p == '\n' || (*p == '\r' && (p + 1 == end || p[1] != '\n')))
                s->line++;
        return p < end ? p + 2 : end;
    }
    if (*p == '"' || *p == '\'') {
        char q = *p++;
        while (p < end && *p != q && *p != '\n' && *p != '\r')
            p += *p == '\\' && p + 1 < end ? 2 : 1;
        return p < end && *p == q ? p + 1 : p;
    }
    return p;
}

static int ident_char(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/** The end of the directive line starting at @p p (backslash continuations joined, their
 *  lines counted). */
static const char *directive_end(struct scan *s, const char *p)
{
    while (p < s->end && *p != '\n' && *p != '\r') {
        if (*p == '\\' && p + 1 < s->end && (p[1] == '\n' || p[1] == '\r')) {
            p += p[1] == '\r' && p + 2 < s->end && p[2] == '\n' ? 3 : 2;
            s->line++;
            continue;
        }
        p++;
    }
    return p;
}

int lint_cuda_sign(const char *text, size_t len, struct lint_cuda_sign *out)
{
    struct scan s = {text, text + len, 1, 0, 0, out};
    int line_start = 1;
    for (const char *p = text; p < s.end;) {
        if (*p == '\n' || *p == '\r') {
            p += *p == '\r' && p + 1 < s.end && p[1] == '\n' ? 2 : 1;
            s.line++;
            line_start = 1;
            continue;
        }
        if (*p == ' ' || *p == '\t') {
            p++;
            continue;
        }
        if (line_start && *p == '#') {
            uint32_t at = s.line;
            const char *eol = directive_end(&s, p + 1);
            uint32_t after = s.line;
            s.line = at;
            if (directive(&s, p, eol))
                return 1;
            s.line = after;
            p = eol;
            continue;
        }
        line_start = 0;
        const char *q = skip_literal(&s, p);
        if (q != p) {
            p = q;
            continue;
        }
        if (!s.guard && p + 3 <= s.end && memcmp(p, "<<<", 3) == 0)
            return found(&s, "launches a kernel (<<<)");
        if (ident_char(*p)) {
            const char *w = p;
            while (p < s.end && ident_char(*p))
                p++;
            if (!s.guard && p - w == 10 && memcmp(w, "__global__", 10) == 0)
                return found(&s, "declares a __global__ function");
            continue;
        }
        p++;
    }
    return 0;
}

/** The next line of [*p, end) as one directive would read it (backslash continuations
 *  joined), with its first line's number; 0 at the end. */
static int next_line(const char **p, const char *end, uint32_t *line, const char **start,
                     const char **eol, uint32_t *first)
{
    if (*p >= end)
        return 0;
    *start = *p;
    *first = *line;
    const char *q = *p;
    for (;;) {
        while (q < end && *q != '\n' && *q != '\r')
            q++;
        int cont = q > *start && q[-1] == '\\';
        *eol = q;
        if (q < end)
            q += *q == '\r' && q + 1 < end && q[1] == '\n' ? 2 : 1;
        (*line)++;
        if (!cont || q >= end)
            break;
    }
    *p = q;
    return 1;
}

/** The identifier at [p, end): its length. */
static size_t ident_len(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && ident_char(p[n]))
        n++;
    return n;
}

#define GUARD_DEPTH 64

/** An open #if block, as lint_define_guard tracks it. */
struct branch {
    const char *cond; /* the #if/#ifdef/#ifndef/#elif line of the branch taken so far */
    size_t cond_len;
    uint32_t line;
    int in_else;
    int include_guard;  /* #ifndef X followed at once by #define X */
    const char *ifndef; /* X of #ifndef X, or NULL */
    size_t ifndef_len;
};

static int word_is(const char *w, size_t wl, const char *word)
{
    return wl == strlen(word) && memcmp(w, word, wl) == 0;
}

/** Fills @p out from the innermost open block that is not an include guard; 0 when none. */
static int guard_of(const struct branch *st, int depth, uint32_t at, struct lint_define_guard *out)
{
    for (int k = (depth < GUARD_DEPTH ? depth : GUARD_DEPTH) - 1; k >= 0; k--) {
        if (st[k].include_guard)
            continue;
        const char *c = st[k].cond;
        size_t cl = st[k].cond_len;
        while (cl && (*c == ' ' || *c == '\t'))
            c++, cl--;
        while (cl && (c[cl - 1] == ' ' || c[cl - 1] == '\t' || c[cl - 1] == '\r'))
            cl--;
        out->line = at;
        out->cond_line = st[k].line;
        out->in_else = st[k].in_else;
        snprintf(out->cond, sizeof out->cond, "%.*s", (int)cl, c);
        return 1;
    }
    return 0; /* defined unconditionally */
}

int lint_define_guard(const char *text, size_t len, const char *name, size_t nlen,
                      struct lint_define_guard *out)
{
    struct branch st[GUARD_DEPTH];
    int depth = 0, after_if = 0;
    const char *p = text, *end = text + len, *start, *eol, *w, *rest;
    uint32_t line = 1, at;
    size_t wl;
    while (next_line(&p, end, &line, &start, &eol, &at)) {
        if (!lint_directive(start, eol, &w, &wl, &rest))
            continue;
        struct branch *top = depth && depth <= GUARD_DEPTH ? &st[depth - 1] : NULL;
        if (word_is(w, wl, "if") || word_is(w, wl, "ifdef") || word_is(w, wl, "ifndef")) {
            if (depth < GUARD_DEPTH) {
                int ifndef = word_is(w, wl, "ifndef");
                st[depth] = (struct branch){start, (size_t)(eol - start), at, 0, 0,
                                            ifndef ? rest : NULL, ifndef ? ident_len(rest, eol) : 0};
            }
            depth++;
            after_if = 1;
            continue;
        }
        int define = word_is(w, wl, "define");
        size_t dl = define ? ident_len(rest, eol) : 0;
        if (define && after_if && top && top->ifndef && top->ifndef_len == dl &&
            memcmp(top->ifndef, rest, dl) == 0)
            top->include_guard = 1;
        after_if = 0;
        if (top && word_is(w, wl, "elif")) {
            *top = (struct branch){start, (size_t)(eol - start), at, 0, top->include_guard, NULL, 0};
        } else if (top && word_is(w, wl, "else")) {
            top->in_else = 1;
        } else if (word_is(w, wl, "endif")) {
            depth -= depth > 0;
        } else if (define && dl == nlen && memcmp(rest, name, nlen) == 0) {
            return guard_of(st, depth, at, out);
        }
    }
    return 0;
}

int lint_error_directive(const char *text, size_t len, uint32_t want)
{
    const char *p = text, *end = text + len, *start, *eol, *w, *rest;
    uint32_t line = 1, at;
    size_t wl;
    while (next_line(&p, end, &line, &start, &eol, &at)) {
        if (at < want)
            continue;
        return at == want && lint_directive(start, eol, &w, &wl, &rest) && wl == 5 &&
               memcmp(w, "error", 5) == 0;
    }
    return 0;
}

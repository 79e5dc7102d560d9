/* One file from bytes to findings: parse with tree-sitter's CUDA grammar, read the
 * suppression comments, run the rules over every function, and keep what survives. */
#define _POSIX_C_SOURCE 200809L
#include "analysis.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const TSLanguage *tree_sitter_cuda(void);

#define SUPPRESS_ALL 0x80000000u

TSParser *lint_parser_new(void)
{
    TSParser *p = ts_parser_new();
    if (!p)
        return NULL;
    if (!ts_parser_set_language(p, tree_sitter_cuda())) {
        ts_parser_delete(p);
        return NULL;
    }
    return p;
}

void lint_result_free(struct lint_file_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->f[i].message);
        free(r->f[i].rel_message);
        free(r->f[i].function);
        free(r->f[i].line_text);
    }
    free(r->f);
    free(r->path);
    free(r->skip_reason);
    memset(r, 0, sizeof *r);
}

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/** Replaces every byte that is not part of valid UTF-8 with '?', so that JSON and SARIF
 *  output never fails on odd source bytes in names. */
static char *utf8_clean(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (p && *p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2
                : (*p & 0xF8) == 0xF0 ? 3 : -1;
        bool ok = n >= 0 && !(n == 1 && *p < 0xC2) && !(n == 3 && *p > 0xF4);
        for (int i = 1; ok && i <= n; i++)
            ok = (p[i] & 0xC0) == 0x80;
        /* overlong forms, surrogates and code points past U+10FFFF */
        if (ok && n == 2 && ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] >= 0xA0)))
            ok = false;
        if (ok && n == 3 && ((p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] >= 0x90)))
            ok = false;
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n + 1;
    }
    return s;
}

static bool suppressed(const struct lint_ctx *c, int rule, uint32_t line)
{
    uint32_t bit = 1u << rule;
    if (c->file_suppress & (bit | SUPPRESS_ALL))
        return true;
    return line < c->n_lines && (c->suppress[line] & (bit | SUPPRESS_ALL));
}

void lint_report(struct lint_ctx *c, int rule, int severity, TSNode at, TSNode related,
                 const char *related_msg, const char *fmt, ...)
{
    if (!c->opt->enabled[rule] || ts_node_is_null(at))
        return;
    if (severity == LINT_NOTE && !c->opt->show_notes)
        return;
    TSPoint p = ts_node_start_point(at), e = ts_node_end_point(at);
    if (suppressed(c, rule, p.row))
        return;
    struct lint_file_result *r = c->out;
    struct lint_finding *nf = lint_array_grow(r->f, r->n, &r->cap, sizeof *nf);
    if (!nf)
        return;
    r->f = nf;
    struct lint_finding *f = &r->f[r->n];
    memset(f, 0, sizeof *f);
    f->rule = rule;
    f->severity = severity;
    f->line = p.row + 1;
    f->col = p.column + 1;
    f->end_line = e.row + 1;
    f->end_col = e.column + 1;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    f->message = utf8_clean(dup_range(msg, strlen(msg)));
    if (!ts_node_is_null(related)) {
        TSPoint rp = ts_node_start_point(related);
        f->has_related = 1;
        f->rel_line = rp.row + 1;
        f->rel_col = rp.column + 1;
        f->rel_message = dup_range(related_msg ? related_msg : "related",
                                   strlen(related_msg ? related_msg : "related"));
    }
    const char *fn = c->function ? c->function : "";
    f->function = utf8_clean(dup_range(fn, strlen(fn)));
    /* The point's column is the byte offset in its line: no search back for the start. */
    uint32_t b = ts_node_start_byte(at), s = b >= p.column ? b - p.column : 0, t = b;
    while (t < c->len && t - s < LINT_LINE_TEXT_MAX && c->src[t] != '\n' && c->src[t] != '\r')
        t++;
    /* Kept for the caret line and the fingerprint; a huge line is cut, not copied whole for
     * each of its findings. */
    if (t - s > LINT_LINE_TEXT_MAX)
        t = s + LINT_LINE_TEXT_MAX;
    f->line_text = dup_range(c->src + s, t - s);
    if (!f->message || !f->function || !f->line_text || (f->has_related && !f->rel_message)) {
        free(f->message);
        free(f->function);
        free(f->line_text);
        free(f->rel_message);
        return;
    }
    r->n++;
}

/** Parses "[GM001,GM004]" after "ignore" into rule bits; no list means all rules. */
static uint32_t parse_rule_list(const char *s, const char *end)
{
    if (s >= end || *s != '[')
        return SUPPRESS_ALL;
    uint32_t bits = 0;
    const char *p = s + 1;
    while (p < end && *p != ']') {
        while (p < end && (*p == ' ' || *p == ','))
            p++;
        const char *q = p;
        while (q < end && *q != ',' && *q != ']' && *q != ' ')
            q++;
        if (q > p) {
            if (q - p == 1 && *p == '*')
                bits |= SUPPRESS_ALL;
            int r = lint_rule_parse(p, (size_t)(q - p));
            if (r >= 0)
                bits |= 1u << r;
        }
        p = q;
    }
    return bits;
}

static const char *find_mark(const char *s, const char *end, const char *mark)
{
    size_t m = strlen(mark);
    for (const char *p = s; p + m <= end; p++) {
        p = memchr(p, mark[0], (size_t)(end - p));
        if (!p || p + m > end)
            return NULL;
        if (memcmp(p, mark, m) == 0)
            return p;
    }
    return NULL;
}

static void read_suppressions(struct lint_ctx *c)
{
    static const char mark[] = "gpumem-lint:";
    const char *src = c->src, *end = c->src + c->len;
    for (const char *p = find_mark(src, end, mark); p; p = find_mark(p + 1, end, mark)) {
        uint32_t off = (uint32_t)(p - src);
        TSNode n = ts_node_descendant_for_byte_range(c->root, off, off + 1);
        if (!lint_type_is(n, "comment"))
            continue;
        const char *q = p + sizeof mark - 1;
        while (q < end && *q == ' ')
            q++;
        const char *stop = memchr(q, '\n', (size_t)(end - q));
        if (!stop)
            stop = end;
        uint32_t row = ts_node_start_point(n).row;
        if (stop - q >= 11 && memcmp(q, "ignore-file", 11) == 0) {
            c->file_suppress |= parse_rule_list(q + 11, stop);
            continue;
        }
        if (stop - q < 6 || memcmp(q, "ignore", 6) != 0)
            continue;
        uint32_t bits = parse_rule_list(q + 6, stop);
        /* A comment alone on its line covers the next line; a trailing one its own line. */
        const char *ls = src + ts_node_start_byte(n);
        bool alone = true;
        while (ls > src && ls[-1] != '\n') {
            ls--;
            if (*ls != ' ' && *ls != '\t')
                alone = false;
        }
        uint32_t last = ts_node_end_point(n).row;
        if (row < c->n_lines)
            c->suppress[row] |= bits;
        if (alone && last + 1 < c->n_lines)
            c->suppress[last + 1] |= bits;
    }
}

static void analyze_function(struct lint_ctx *c, TSNode fn)
{
    char name[128];
    lint_function_name(c, fn, name, sizeof name);
    c->function = name;
    const struct lint_options *o = c->opt;
    /* A rule only runs on functions that name what it looks for. */
    uint32_t a = ts_node_start_byte(fn), b = ts_node_end_byte(fn);
    unsigned words = lint_scan_words(c, c->src + a, b > a ? b - a : 0);
    if ((words & (LINT_W_CUDA | LINT_W_WRAPPER)) &&
        (o->enabled[LINT_GM001] || o->enabled[LINT_GM002] || o->enabled[LINT_GM005] ||
         o->enabled[LINT_GM006] || o->enabled[LINT_GM007]))
        lint_rules_memory(c, fn);
    if ((words & LINT_W_CUDA) && o->enabled[LINT_GM004])
        lint_rules_check(c, fn);
    if ((words & LINT_W_VECTOR) && o->enabled[LINT_GM003])
        lint_rules_vector(c, fn);
    c->function = NULL;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct lint_finding *x = a, *y = b;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    if (x->rule != y->rule)
        return x->rule < y->rule ? -1 : 1;
    return strcmp(x->message, y->message);
}

void lint_analyze_buffer(const struct lint_options *o, TSParser *parser, const char *path,
                         const char *src, size_t len, struct lint_file_result *out)
{
    if (len > UINT32_MAX / 2)
        return;
    TSTree *tree = ts_parser_parse_string(parser, NULL, src, (uint32_t)len);
    if (!tree)
        return;
    struct lint_ctx c;
    memset(&c, 0, sizeof c);
    c.opt = o;
    c.path = path;
    c.src = src;
    c.len = (uint32_t)len;
    c.root = ts_tree_root_node(tree);
    c.out = out;
    c.n_lines = ts_node_end_point(c.root).row + 2;
    c.suppress = calloc(c.n_lines, sizeof *c.suppress);
    if (!c.suppress) {
        ts_tree_delete(tree);
        return;
    }
    for (size_t i = 0; i < o->file_suppress.n; i++) {
        const char *e = o->file_suppress.v[i];
        const char *colon = strrchr(e, ':');
        if (!colon)
            continue;
        char glob[512];
        snprintf(glob, sizeof glob, "%.*s", (int)(colon - e), e);
        if (fnmatch(glob, path, 0) != 0)
            continue;
        char list[256];
        snprintf(list, sizeof list, "[%s]", colon + 1);
        c.file_suppress |= colon[1] ? parse_rule_list(list, list + strlen(list)) : SUPPRESS_ALL;
    }
    read_suppressions(&c);
    size_t first = out->n;
    lint_rules_memory_prepare(&c);
    lint_for_each_function(&c, analyze_function);
    lint_rules_memory_finish(&c);
    lint_rules_memory_free(&c);
    if (out->n > first)
        qsort(out->f + first, out->n - first, sizeof *out->f, cmp_finding);
    free(c.suppress);
    free(c.wrappers);
    free(c.allocators);
    free(c.far);
    free(c.globals);
    ts_tree_delete(tree);
}

/** Whether an identifier is a CUDA vector type (float4, int2, half2, double4_32a, ...). */
static bool vector_word(const char *w, size_t n)
{
    char last = w[n - 1];
    if (n < 4 || n > 20 || !((last >= '1' && last <= '4') || last == 'a'))
        return false;
    static const char *const stems[] = {"char", "uchar", "short", "ushort", "int", "uint",
                                        "long", "ulong", "longlong", "ulonglong", "float",
                                        "double", "half", "__half", "nv_bfloat16",
                                        "__nv_bfloat16", NULL};
    for (size_t i = 0; stems[i]; i++) {
        size_t k = strlen(stems[i]);
        if (n > k && memcmp(w, stems[i], k) == 0 && w[k] >= '1' && w[k] <= '4')
            return true;
    }
    return false;
}

static bool word_is(const char *w, size_t n, const char *s)
{
    return strlen(s) == n && memcmp(w, s, n) == 0;
}

unsigned lint_scan_words(const struct lint_ctx *c, const char *src, size_t len)
{
    unsigned bits = 0;
    const char *p = src, *end = src + len;
    while (p < end) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
            const char *w = p;
            while (p < end && (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                               (*p >= '0' && *p <= '9')))
                p++;
            size_t n = (size_t)(p - w);
            if ((n >= 4 && memcmp(w, "cuda", 4) == 0) || (n >= 6 && memcmp(w, "gpumem", 6) == 0) ||
                (n >= 6 && memcmp(w, "GPUMEM", 6) == 0))
                bits |= LINT_W_CUDA;
            else if (vector_word(w, n))
                bits |= LINT_W_VECTOR;
            else if (word_is(w, n, "malloc") || word_is(w, n, "calloc") || word_is(w, n, "free") ||
                     word_is(w, n, "aligned_alloc") || word_is(w, n, "strdup") ||
                     word_is(w, n, "delete") || word_is(w, n, "new"))
                bits |= LINT_W_HOSTMEM;
            else if (c)
                for (size_t i = 0; i < c->n_allocators && !(bits & LINT_W_WRAPPER); i++)
                    if (word_is(w, n, c->allocators[i].name))
                        bits |= LINT_W_WRAPPER;
        } else if (ch >= '0' && ch <= '9') {
            while (p < end && ((*p >= '0' && *p <= '9') || *p == '_' || (*p >= 'a' && *p <= 'z') ||
                               (*p >= 'A' && *p <= 'Z')))
                p++;
        } else {
            if (ch == '<' && end - p >= 3 && p[1] == '<' && p[2] == '<')
                bits |= LINT_W_CUDA;
            p++;
        }
    }
    return bits;
}

void lint_analyze_file(const struct lint_options *o, TSParser *parser, const char *path,
                       struct lint_file_result *out)
{
    char *buf = NULL, why_buf[256];
    size_t len = 0;
    const char *why = NULL;
    out->path = utf8_clean(dup_range(path, strlen(path)));
    if (lint_read_file(path, o->max_file_size, &buf, &len, &why, why_buf, sizeof why_buf) != 0) {
        out->skipped = 1;
        out->skip_reason = dup_range(why, strlen(why));
        return;
    }
    out->bytes = len;
    if (memchr(buf, '\0', len)) {
        out->skipped = 1;
        out->skip_reason = dup_range("binary file (contains NUL bytes)", 32);
        free(buf);
        return;
    }
    /* Every rule needs a CUDA or gpumem name, a launch or a vector type: files without one
     * (most host code in a mixed project) are not parsed at all. */
    if (lint_scan_words(NULL, buf, len) & (LINT_W_CUDA | LINT_W_VECTOR))
        lint_analyze_buffer(o, parser, path, buf, len, out);
    free(buf);
}

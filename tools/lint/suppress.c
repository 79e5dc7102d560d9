/* Suppression comments: `// gpumem-lint: ignore[GM004] reason` on a finding's line or alone
 * on the line above, and `ignore-file[...]` anywhere. A small lexer finds the real comments
 * (string and character literals, raw strings and line splices are skipped), and counts lines
 * as Clang does, so that a finding's line from the analyzer and a comment's line agree even
 * in files with CRLF or bare-CR line endings. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <stdlib.h>
#include <string.h>

uint32_t lint_rule_mask(const char *s, const char *end)
{
    if (s >= end || *s != '[')
        return LINT_SUPPRESS_ALL;
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
                bits |= LINT_SUPPRESS_ALL;
            int r = lint_rule_parse(p, (size_t)(q - p));
            if (r >= 0)
                bits |= 1u << r;
        }
        p = q;
    }
    return bits;
}

/** Length of the line break at @p p (LF, CRLF or CR), 0 when there is none. */
static size_t line_break(const char *p, const char *end)
{
    if (p >= end)
        return 0;
    if (*p == '\n')
        return 1;
    if (*p == '\r')
        return p + 1 < end && p[1] == '\n' ? 2 : 1;
    return 0;
}

/** A line splice (backslash, then a line break) at @p p: its length, or 0. */
static size_t splice(const char *p, const char *end)
{
    if (p + 1 < end && *p == '\\') {
        size_t b = line_break(p + 1, end);
        return b ? b + 1 : 0;
    }
    return 0;
}

struct lexer {
    const char *p, *end;
    uint32_t line; /* 1-based line of p */
};

/** Advances one character, counting lines; returns the character passed. */
static void advance(struct lexer *lx)
{
    size_t b = line_break(lx->p, lx->end);
    if (b) {
        lx->p += b;
        lx->line++;
    } else {
        lx->p++;
    }
}

/** Applies the comment [b, e) that started on @p first and ended on @p last; @p alone says
 *  whether only blanks precede it on its line. */
static void comment(struct lint_suppress *s, const char *b, const char *e, uint32_t first,
                    uint32_t last, int alone)
{
    static const char mark[] = "gpumem-lint:";
    size_t m = sizeof mark - 1;
    for (const char *p = b; p + m <= e; p++) {
        p = memchr(p, 'g', (size_t)(e - p));
        if (!p || p + m > e)
            return;
        if (memcmp(p, mark, m) != 0)
            continue;
        const char *q = p + m;
        while (q < e && (*q == ' ' || *q == '\t'))
            q++;
        const char *stop = q;
        while (stop < e && *stop != '\n' && *stop != '\r')
            stop++;
        if (stop - q >= 11 && memcmp(q, "ignore-file", 11) == 0) {
            s->file |= lint_rule_mask(q + 11, stop);
        } else if (stop - q >= 6 && memcmp(q, "ignore", 6) == 0) {
            uint32_t bits = lint_rule_mask(q + 6, stop);
            /* A comment alone on its line covers the next line; a trailing one its own. */
            if (first < s->n_lines)
                s->line[first] |= bits;
            if (alone && last + 1 < s->n_lines)
                s->line[last + 1] |= bits;
        }
        p = stop;
        if (p >= e)
            return;
    }
}

/** Skips a raw string literal R"delim( ... )delim" starting at the quote. */
static void raw_string(struct lexer *lx)
{
    const char *d = lx->p + 1, *open = d;
    while (open < lx->end && *open != '(' && open - d < 16 && *open != '"' &&
           *open != '\n' && *open != '\r' && *open != ' ')
        open++;
    if (open >= lx->end || *open != '(') {
        advance(lx);
        return;
    }
    size_t dl = (size_t)(open - d);
    while (lx->p < open + 1)
        advance(lx);
    while (lx->p < lx->end) {
        if (*lx->p == ')' && (size_t)(lx->end - lx->p) > dl + 1 &&
            memcmp(lx->p + 1, d, dl) == 0 && lx->p[dl + 1] == '"') {
            lx->p += dl + 2;
            return;
        }
        advance(lx);
    }
}

/** Lines in [src, src + len), as Clang counts them. */
static size_t count_lines(const char *src, size_t len)
{
    const char *end = src + len;
    size_t lines = 1;
    for (const char *p = src; p < end;) {
        size_t b = line_break(p, end);
        if (b) {
            lines++;
            p += b;
        } else {
            p++;
        }
    }
    return lines;
}

/** Skips a comment starting at its `//` or slash-star (past its end). */
static void skip_comment(struct lexer *lx)
{
    if (lx->p[1] == '/') {
        /* To the end of the line; a splice continues it. */
        lx->p += 2;
        while (lx->p < lx->end) {
            size_t s2 = splice(lx->p, lx->end);
            if (s2) {
                lx->p += s2;
                lx->line++;
                continue;
            }
            if (line_break(lx->p, lx->end))
                break;
            lx->p++;
        }
    } else {
        lx->p += 2;
        while (lx->p < lx->end && !(lx->p[0] == '*' && lx->p + 1 < lx->end && lx->p[1] == '/'))
            advance(lx);
        if (lx->p < lx->end)
            lx->p += 2;
    }
}

/** Whether an `R"` at lx->p starts a raw string literal: R alone or after an encoding
 *  prefix (u, U, L, u8), not at the end of a longer name. */
static int raw_string_at(const struct lexer *lx, const char *src)
{
    const char *p = lx->p;
    return *p == 'R' && p + 1 < lx->end && p[1] == '"' &&
           (p == src || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                          (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9')) ||
            p[-1] == 'u' || p[-1] == 'U' || p[-1] == 'L' || p[-1] == '8');
}

/** Skips a string or character literal starting at its quote @p c. A literal ends at its
 *  quote or, unterminated, at the end of the line. */
static void skip_literal(struct lexer *lx, char c)
{
    lx->p++;
    while (lx->p < lx->end && *lx->p != c) {
        size_t s2 = splice(lx->p, lx->end);
        if (s2) {
            lx->p += s2;
            lx->line++;
            continue;
        }
        if (line_break(lx->p, lx->end))
            break;
        if (*lx->p == '\\' && lx->p + 1 < lx->end && !line_break(lx->p + 1, lx->end))
            lx->p++;
        lx->p++;
    }
    if (lx->p < lx->end && *lx->p == c)
        lx->p++;
}

int lint_suppress_parse(const char *src, size_t len, struct lint_suppress *out)
{
    memset(out, 0, sizeof *out);
    /* Lines first, so that the table has a slot for each. */
    struct lexer lx = {src, src + len, 1};
    size_t lines = count_lines(src, len);
    if (lines > UINT32_MAX - 2)
        return -1;
    out->n_lines = (uint32_t)lines + 2;
    out->line = calloc(out->n_lines, sizeof *out->line);
    if (!out->line)
        return -1;
    int blank = 1; /* only blanks so far on this line */
    while (lx.p < lx.end) {
        char c = *lx.p;
        size_t sp = splice(lx.p, lx.end);
        if (sp) {
            lx.p += sp;
            lx.line++;
        } else if (line_break(lx.p, lx.end)) {
            advance(&lx);
            blank = 1;
        } else if (c == '/' && lx.p + 1 < lx.end && (lx.p[1] == '/' || lx.p[1] == '*')) {
            const char *b = lx.p;
            uint32_t first = lx.line;
            skip_comment(&lx);
            comment(out, b, lx.p, first, lx.line, blank);
            blank = 0;
        } else if (raw_string_at(&lx, src)) {
            lx.p++;
            raw_string(&lx);
            blank = 0;
        } else if (c == '"' || c == '\'') {
            skip_literal(&lx, c);
            blank = 0;
        } else {
            if (c != ' ' && c != '\t' && c != '\f' && c != '\v')
                blank = 0;
            lx.p++;
        }
    }
    return 0;
}

int lint_suppressed(const struct lint_suppress *s, int rule, uint32_t line)
{
    uint32_t bit = 1u << rule;
    if (s->file & (bit | LINT_SUPPRESS_ALL))
        return 1;
    return line < s->n_lines && (s->line[line] & (bit | LINT_SUPPRESS_ALL)) != 0;
}

void lint_suppress_free(struct lint_suppress *s)
{
    free(s->line);
    memset(s, 0, sizeof *s);
}

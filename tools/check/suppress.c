/* Suppressions: parsing, matching and generation (format in suppress.h and docs/check.md). */
#define _GNU_SOURCE /* basename() that does not modify its argument */
#include "suppress.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "internal.h"
#include "sigsafe.h"

enum { LINE_FUN, LINE_SRC, LINE_OBJ, LINE_ANY };

typedef struct {
    int type;
    char *pattern;
} frame_pat;

typedef struct {
    char *name;
    int kind; /* check_kind, or -1 for any */
    char *call; /* glob, or NULL for any */
    frame_pat *frames;
    int nframes;
    atomic_long used; /* counted from signal handlers too: no lock */
} supp;

static supp *supps;
static size_t nsupps;

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static void supp_free(supp *s)
{
    free(s->name);
    free(s->call);
    for (int i = 0; i < s->nframes; i++)
        free(s->frames[i].pattern);
    free(s->frames);
}

/* Opens a suppression file, without blocking and checked first: a FIFO (or a terminal, a
 * device) given as a suppression file would block the open, or the read, for ever. Returns
 * the stream, or NULL with a message in err. */
static FILE *open_supp_file(const char *path, char *err, size_t n)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, n, "%s: cannot read the suppression file (%s)", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, n, "%s: not a regular file (%s); give a suppression file", path,
                 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder" : "a device");
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        snprintf(err, n, "%s: cannot read the suppression file (%s)", path, strerror(errno));
        close(fd);
    }
    return f;
}

/* Where the parser is between the lines of a suppression file. */
typedef struct {
    int state; /* 0: outside, 1: want name, 2: want kind, 3: body */
    supp cur;
    char why_text[160];
} supp_parser;

/* The "gpumem:KIND" line. Returns NULL, or what is wrong. */
static const char *kind_line(supp_parser *ps, const char *t)
{
    if (strncmp(t, "gpumem:", 7) != 0)
        return "the second line must be gpumem:KIND (leak, mismatched-release, "
               "double-free, invalid-free, interior-free, failed-alloc or *)";
    if (strcmp(t + 7, "*") != 0 && (ps->cur.kind = check_kind_from_name(t + 7)) < 0) {
        const char *names[CHECK_KIND_COUNT];
        for (int k = 0; k < CHECK_KIND_COUNT; k++)
            names[k] = check_kind_name(k);
        const char *best = gpumem__suggest(t + 7, strlen(t + 7), names, CHECK_KIND_COUNT, 3);
        snprintf(ps->why_text, sizeof ps->why_text,
                 "unknown finding kind after gpumem: '%.40s'%s%s%s", t + 7,
                 best ? "; did you mean gpumem:" : "", best ? best : "", best ? "?" : "");
        return ps->why_text;
    }
    ps->state = 3;
    return NULL;
}

/* A frame line: fun:, src:, obj: or '...'. Returns NULL, or what is wrong. */
static const char *frame_line(supp *cur, char *t)
{
    frame_pat p = {LINE_ANY, NULL};
    if (strcmp(t, "...") == 0)
        p.type = LINE_ANY;
    else if (strncmp(t, "fun:", 4) == 0)
        p = (frame_pat){LINE_FUN, strdup(trim(t + 4))};
    else if (strncmp(t, "src:", 4) == 0)
        p = (frame_pat){LINE_SRC, strdup(trim(t + 4))};
    else if (strncmp(t, "obj:", 4) == 0)
        p = (frame_pat){LINE_OBJ, strdup(trim(t + 4))};
    else
        return "expected call:, fun:, src:, obj:, '...' or '}'";
    frame_pat *grown = realloc(cur->frames, (size_t)(cur->nframes + 1) * sizeof *grown);
    if (!grown) {
        free(p.pattern);
        return "out of memory";
    }
    cur->frames = grown;
    cur->frames[cur->nframes++] = p;
    return NULL;
}

/* A line of a suppression's body: call:, a frame, or the closing '}' that keeps it. */
static const char *body_line(supp_parser *ps, char *t)
{
    if (strcmp(t, "}") == 0) {
        supp *grown = realloc(supps, (nsupps + 1) * sizeof *grown);
        if (!grown)
            return "out of memory";
        supps = grown;
        supps[nsupps++] = ps->cur;
        ps->cur = (supp){0};
        ps->state = 0;
        return NULL;
    }
    if (strncmp(t, "call:", 5) == 0 && ps->cur.nframes == 0 && !ps->cur.call) {
        ps->cur.call = strdup(trim(t + 5));
        return NULL;
    }
    return frame_line(&ps->cur, t);
}

/* One line, trimmed and not a comment. Returns NULL, or what is wrong. */
static const char *parse_line(supp_parser *ps, char *t)
{
    switch (ps->state) {
    case 0:
        if (strcmp(t, "{") != 0)
            return "expected '{' to start a suppression";
        ps->state = 1;
        return NULL;
    case 1:
        if (strcmp(t, "}") == 0 || strcmp(t, "{") == 0)
            return "a suppression starts with its name";
        ps->cur = (supp){.kind = -1};
        ps->cur.name = strdup(t);
        ps->state = 2;
        return NULL;
    case 2:
        return kind_line(ps, t);
    default:
        return body_line(ps, t);
    }
}

int check_supp_load(const char *path, char *err, size_t n)
{
    FILE *f = open_supp_file(path, err, n);
    if (!f)
        return -1;
    size_t first = nsupps;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, fail = 0;
    supp_parser ps = {0};
    while (!fail && getline(&line, &cap, f) >= 0) {
        lineno++;
        char *t = trim(line);
        if (!*t || *t == '#')
            continue;
        const char *why = parse_line(&ps, t);
        if (why) {
            snprintf(err, n, "%s:%d: %s", path, lineno, why);
            fail = 1;
        }
    }
    if (!fail && ps.state != 0) {
        snprintf(err, n, "%s:%d: the last suppression has no closing '}'", path, lineno);
        fail = 1;
    }
    free(line);
    fclose(f);
    if (fail) {
        supp_free(&ps.cur);
        while (nsupps > first)
            supp_free(&supps[--nsupps]);
        return -1;
    }
    return 0;
}

/* One set of a glob ("[a-z]", "[!0-9]") at p against c; returns the character after the set,
 * or NULL for a '[' with no closing ']' (then it is an ordinary character). */
static const char *glob_set(const char *p, unsigned char c, int *hit)
{
    const char *q = p + 1;
    int negate = *q == '!' || *q == '^';
    q += negate;
    int in = 0;
    for (int first = 1; *q && (first || *q != ']'); first = 0) {
        unsigned char lo = (unsigned char)*q++, hi = lo;
        if (q[0] == '-' && q[1] && q[1] != ']') {
            hi = (unsigned char)q[1];
            q += 2;
        }
        in |= lo <= c && c <= hi;
    }
    if (*q != ']')
        return NULL;
    *hit = in != negate;
    return q + 1;
}

/* fnmatch(pattern, text, 0) without its backtracking: '*' (any run), '?' (one character),
 * '[...]' sets and '\' escapes, matched in time linear in the pattern times the text with one
 * backtrack point (the last '*'), as a suppression file may be hostile. */
static int glob_match(const char *p, const char *t)
{
    const char *star_p = NULL, *star_t = NULL;
    while (*t) {
        if (*p == '*') {
            while (*p == '*')
                p++;
            star_p = p;
            star_t = t;
            continue;
        }
        int hit = 0;
        const char *next = NULL;
        if (*p == '?') {
            hit = 1;
            next = p + 1;
        } else if (*p == '[' && (next = glob_set(p, (unsigned char)*t, &hit)) != NULL) {
        } else if (*p == '\\' && p[1]) {
            hit = p[1] == *t;
            next = p + 2;
        } else if (*p) {
            hit = *p == *t;
            next = p + 1;
        }
        if (hit) {
            p = next;
            t++;
        } else if (star_p) {
            p = star_p;
            t = ++star_t;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

static int frame_matches(const frame_pat *p, const gpumem__frame *f)
{
    switch (p->type) {
    case LINE_FUN:
        return glob_match(p->pattern, f->func);
    case LINE_OBJ:
        return f->object && glob_match(p->pattern, f->object);
    case LINE_SRC: {
        if (!f->file)
            return 0;
        /* "file.cu" matches any line of the file; "file.cu:12" one line. No snprintf: the
         * crash-time report matches from a signal handler. */
        const char *base = basename(f->file);
        char where[512], line[21];
        size_t n = strlen(base), m = strlen(gpumem__fmt_u64((uint64_t)(f->line < 0 ? 0 : f->line), line));
        if (n + 1 + m < sizeof where) {
            memcpy(where, base, n);
            where[n] = ':';
            memcpy(where + n + 1, line, m + 1);
            if (glob_match(p->pattern, where))
                return 1;
        }
        return glob_match(p->pattern, base);
    }
    default:
        return 0;
    }
}

/* Frame patterns against frames, from the innermost; the stack may go on past the patterns.
 * '...' matches any run of frames: the classic glob walk with one backtrack point (the last
 * '...'), linear in patterns times frames (a recursive walk is exponential in the number of
 * '...' lines). */
static int frames_match(const frame_pat *p, int np, const gpumem__frame *f, int nf)
{
    int pi = 0, fi = 0, star = -1, mark = 0;
    for (;;) {
        if (pi < np && p[pi].type == LINE_ANY) {
            star = ++pi;
            mark = fi;
            continue;
        }
        if (pi == np)
            return 1; /* the rest of the stack is free */
        if (fi < nf && frame_matches(&p[pi], &f[fi])) {
            pi++;
            fi++;
            continue;
        }
        if (star < 0 || mark >= nf)
            return 0;
        pi = star;
        fi = ++mark;
    }
}

const char *check_supp_match(int kind, const char *call, const gpumem__frame *frames, int n)
{
    for (size_t i = 0; i < nsupps; i++) {
        supp *s = &supps[i];
        if (s->kind >= 0 && s->kind != kind)
            continue;
        if (s->call && (!call || !glob_match(s->call, call)))
            continue;
        if (!frames_match(s->frames, s->nframes, frames, n))
            continue;
        atomic_fetch_add(&s->used, 1);
        return s->name;
    }
    return NULL;
}

/* A name as a glob that matches only itself: C++ names hold glob_match's metacharacters
 * ("f<float[4]>(float*)"), and a '[' left bare would make a set that does not match the
 * name's own bracket, so the generated suppression would miss its finding. White space at
 * either end is written as '?', which matches it: the loader trims lines, and would drop it. */
static void put_literal(FILE *out, const char *prefix, const char *text)
{
    fputs(prefix, out);
    const char *end = text + strlen(text), *first = text, *last = end;
    while (first < end && isspace((unsigned char)*first))
        first++;
    while (last > first && isspace((unsigned char)last[-1]))
        last--;
    for (const char *c = text; c < end; c++) {
        if (c < first || c >= last) {
            fputc('?', out);
            continue;
        }
        if (strchr("*?[\\", *c))
            fputc('\\', out);
        fputc(*c, out);
    }
    fputc('\n', out);
}

void check_supp_generate(FILE *out, int kind, const char *call, const gpumem__frame *frames,
                         int n)
{
    fprintf(out, "{\n   <insert_a_suppression_name_here>\n   gpumem:%s\n", check_kind_name(kind));
    if (call)
        put_literal(out, "   call:", call);
    for (int i = 0; i < n; i++)
        put_literal(out, "   fun:", frames[i].func);
    fprintf(out, "}\n");
}

const char *check_supp_use(const char *name)
{
    for (size_t i = 0; i < nsupps; i++) {
        if (strcmp(supps[i].name, name) == 0) {
            atomic_fetch_add(&supps[i].used, 1);
            return supps[i].name;
        }
    }
    return NULL;
}

void check_supp_sink_used(gpumem__sink *o, const char *prefix)
{
    for (size_t i = 0; i < nsupps; i++) {
        long used = atomic_load(&supps[i].used);
        if (!used)
            continue;
        char count[21];
        gpumem__sink_str(o, prefix);
        gpumem__sink_str(o, "used suppression: ");
        gpumem__sink_pad(o, gpumem__fmt_u64((uint64_t)used, count), 6);
        gpumem__sink_str(o, " ");
        gpumem__sink_str(o, supps[i].name);
        gpumem__sink_str(o, "\n");
    }
}

void check_supp_clear(void)
{
    while (nsupps)
        supp_free(&supps[--nsupps]);
    free(supps);
    supps = NULL;
}

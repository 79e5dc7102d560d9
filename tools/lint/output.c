/* Merging and writing findings: compiler-style text (the source line, a caret, the path as
 * `note:` lines), JSON, and SARIF 2.1.0 (relatedLocations for the allocation, codeFlows for
 * the path). JSON and SARIF are built with jansson so that every string is escaped whatever
 * the source holds; text that is not UTF-8 (a file name is bytes) gets U+FFFD where a sequence
 * is invalid, since jansson refuses it. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "sigsafe.h" /* gpumem__utf8_valid_dup, gpumem__visible_piece */

static int cmp_finding(const void *a, const void *b)
{
    const struct lint_finding *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    if (c)
        return c;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    if (x->rule != y->rule)
        return x->rule < y->rule ? -1 : 1;
    if ((c = strcmp(x->message, y->message)) != 0)
        return c;
    /* The same finding through two units: the first unit's path is kept. */
    return x->unit < y->unit ? -1 : x->unit > y->unit;
}

static int same_finding(const struct lint_finding *x, const struct lint_finding *y)
{
    return x->rule == y->rule && x->line == y->line && x->col == y->col &&
           strcmp(x->file, y->file) == 0 && strcmp(x->message, y->message) == 0;
}

void lint_findings_finish(struct lint_findings *f, struct lint_summary *sum)
{
    if (f->n > 1)
        qsort(f->v, f->n, sizeof *f->v, cmp_finding);
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (k && same_finding(&f->v[k - 1], &f->v[i])) {
            lint_finding_free(&f->v[i]);
            sum->merged++;
            continue;
        }
        f->v[k++] = f->v[i];
    }
    f->n = k;
    /* Fingerprints: rule, file and clang's issue hash (built from the enclosing function,
     * the line's text, the column and the message, never the line number), so a finding
     * keeps its fingerprint when lines are added above it; ":N" tells identical ones apart. */
    uint64_t *hash = malloc((f->n ? f->n : 1) * sizeof *hash);
    size_t group = 0; /* first finding of the current file */
    for (size_t i = 0; i < f->n; i++) {
        struct lint_finding *x = &f->v[i];
        uint64_t h = LINT_FNV_SEED;
        const char *id = lint_rules[x->rule].id;
        h = lint_fnv(h, id, strlen(id) + 1);
        h = lint_fnv(h, x->file, strlen(x->file) + 1);
        if (x->issue_hash)
            h = lint_fnv(h, x->issue_hash, strlen(x->issue_hash));
        else
            h = lint_fnv(h, x->message, strlen(x->message));
        if (i && strcmp(f->v[i - 1].file, x->file) != 0)
            group = i;
        unsigned ord = 1;
        for (size_t j = group; hash && j < i; j++)
            ord += hash[j] == h;
        if (hash)
            hash[i] = h;
        snprintf(x->fingerprint, sizeof x->fingerprint, "%016llx:%u", (unsigned long long)h, ord);
    }
    free(hash);
}

/* ---- source lines for the caret ---- */

struct source {
    char *file;
    char *text;
    size_t len;
};

static void source_load(struct source *s, const char *file)
{
    if (s->file && strcmp(s->file, file) == 0)
        return;
    free(s->file);
    free(s->text);
    memset(s, 0, sizeof *s);
    s->file = strdup(file);
    const char *why;
    char why_buf[64];
    if (lint_read_file(file, (size_t)256 << 20, &s->text, &s->len, &why, why_buf,
                       sizeof why_buf) != 0)
        s->text = NULL;
}

/** The text of line @p line (1-based; LF, CRLF and CR end lines, as Clang counts them). */
static const char *source_line(const struct source *s, uint32_t line, size_t *len)
{
    if (!s->text)
        return NULL;
    const char *p = s->text, *end = s->text + s->len;
    for (uint32_t l = 1; l < line; l++) {
        while (p < end && *p != '\n' && *p != '\r')
            p++;
        if (p >= end)
            return NULL;
        p += *p == '\r' && p + 1 < end && p[1] == '\n' ? 2 : 1;
    }
    const char *e = p;
    while (e < end && *e != '\n' && *e != '\r')
        e++;
    *len = (size_t)(e - p);
    return p;
}

/* The finding's source line, made visible as file names are (a line may hold escape
 * sequences that a terminal would obey), with the caret under column col: a tab stays a tab,
 * and an escaped character gets as many spaces as its escape is wide. */
static void print_caret(FILE *out, const struct source *s, uint32_t line, uint32_t col)
{
    size_t len;
    const char *from = source_line(s, line, &len);
    if (!from || len > 4096)
        return;
    char t[4096 + 1], text[4096 * 4 + 1], caret[4096 * 4 + 3];
    memcpy(t, from, len);
    t[len] = '\0';
    size_t o = 0, c = 0, took;
    for (size_t i = 0; i < len; i += took) {
        char piece[GPUMEM__VISIBLE_PIECE_MAX];
        size_t n = gpumem__visible_piece(t + i, piece, &took);
        if (t[i] == '\t')
            piece[0] = '\t', n = 1;
        memcpy(text + o, piece, n);
        o += n;
        for (size_t k = 0; i + 1 < col && k < n; k++)
            caret[c++] = t[i] == '\t' ? '\t' : ' ';
    }
    fprintf(out, "%.*s\n", (int)o, text);
    if (col > len + 1)
        return;
    memcpy(caret + c, "^\n", 3);
    fputs(caret, out);
}

static int same_loc(const struct lint_loc *a, const char *file, uint32_t line, uint32_t col)
{
    return a->line == line && a->col == col && strcmp(a->file, file) == 0;
}

void lint_fputs_visible(FILE *out, const char *s)
{
    char piece[GPUMEM__VISIBLE_PIECE_MAX];
    for (size_t took; s && *s; s += took)
        fwrite(piece, 1, gpumem__visible_piece(s, piece, &took), out);
}

static void print_note(FILE *out, const struct lint_loc *l)
{
    lint_fputs_visible(out, l->file);
    fprintf(out, ":%u:%u: note: ", l->line, l->col);
    lint_fputs_visible(out, l->message);
    fputc('\n', out);
}

static int write_text(const struct lint_options *o, const struct lint_findings *fs,
                      const struct lint_strlist *problems, const struct lint_summary *sum,
                      FILE *out)
{
    struct source src = {0};
    for (size_t i = 0; i < fs->n; i++) {
        const struct lint_finding *f = &fs->v[i];
        lint_fputs_visible(out, f->file);
        fprintf(out, ":%u:%u: %s: ", f->line, f->col, lint_severity_name(f->severity));
        lint_fputs_visible(out, f->message);
        fprintf(out, " [%s]\n", lint_rules[f->rule].id);
        source_load(&src, f->file);
        print_caret(out, &src, f->line, f->col);
        for (size_t k = 0; o->path_mode != LINT_PATH_NONE && k < f->n_path; k++) {
            const struct lint_loc *l = &f->path[k];
            if (same_loc(l, f->file, f->line, f->col) && k + 1 == f->n_path)
                continue; /* the finding itself */
            if (o->path_mode == LINT_PATH_SHORT && l->importance < 1)
                continue;
            print_note(out, l);
        }
        /* The allocation site always shows, once. */
        for (size_t k = 0; k < f->n_related; k++) {
            int dup = 0;
            for (size_t j = 0; o->path_mode != LINT_PATH_NONE && j < f->n_path && !dup; j++)
                dup = same_loc(&f->path[j], f->related[k].file, f->related[k].line,
                               f->related[k].col) &&
                      (o->path_mode == LINT_PATH_FULL || f->path[j].importance >= 1);
            if (!dup)
                print_note(out, &f->related[k]);
        }
    }
    free(src.file);
    free(src.text);
    if (!o->quiet) {
        size_t w = sum->count[LINT_WARNING] + sum->count[LINT_ERROR], nn = sum->count[LINT_NOTE];
        char what[128];
        if (w == 0 && nn == 0)
            snprintf(what, sizeof what, "no findings");
        else if (nn == 0)
            snprintf(what, sizeof what, "%zu warning%s", w, w == 1 ? "" : "s");
        else
            snprintf(what, sizeof what, "%zu warning%s and %zu note%s", w, w == 1 ? "" : "s", nn,
                     nn == 1 ? "" : "s");
        fprintf(out, "%s in %zu file%s", what, sum->units, sum->units == 1 ? "" : "s");
        if (problems->n)
            fprintf(out, ", %zu not analyzed", problems->n);
        if (sum->baseline_hidden)
            fprintf(out, ", %zu in the baseline not shown", sum->baseline_hidden);
        fprintf(out, " (%.2f s)\n", sum->seconds);
    }
    return ferror(out) ? -1 : 0;
}

/* A JSON string of text that need not be UTF-8 (a file name is bytes): jansson refuses such
 * text, and a finding built from it was lost; invalid sequences become U+FFFD instead. */
static json_t *jstr(const char *text)
{
    json_t *j = json_string(text ? text : "");
    if (j)
        return j;
    char *valid = gpumem__utf8_valid_dup(text);
    j = json_string(valid ? valid : "?");
    free(valid);
    return j;
}

static json_t *json_loc(const struct lint_loc *l)
{
    return json_pack("{s:o, s:I, s:I, s:o}", "file", jstr(l->file), "line", (json_int_t)l->line,
                     "column", (json_int_t)l->col, "message", jstr(l->message));
}

static json_t *build_json(const struct lint_findings *fs, const struct lint_strlist *problems,
                          const struct lint_summary *sum)
{
    json_t *findings = json_array(), *notdone = json_array();
    for (size_t i = 0; i < fs->n; i++) {
        const struct lint_finding *f = &fs->v[i];
        json_t *o = json_pack(
            "{s:o, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:o, s:s}", "file", jstr(f->file), "line",
            (json_int_t)f->line, "column", (json_int_t)f->col, "endLine",
            (json_int_t)(f->end_line ? f->end_line : f->line), "endColumn",
            (json_int_t)(f->end_col ? f->end_col : f->col), "rule", lint_rules[f->rule].id,
            "name", lint_rules[f->rule].name, "checker", lint_rules[f->rule].checker, "severity",
            lint_severity_name(f->severity), "message", jstr(f->message), "fingerprint",
            f->fingerprint);
        json_t *rel = json_array(), *path = json_array();
        for (size_t k = 0; k < f->n_related; k++)
            json_array_append_new(rel, json_loc(&f->related[k]));
        for (size_t k = 0; k < f->n_path; k++) {
            json_t *l = json_loc(&f->path[k]);
            json_object_set_new(l, "importance",
                                json_string(f->path[k].importance == 2   ? "essential"
                                            : f->path[k].importance == 1 ? "important"
                                                                         : "unimportant"));
            json_array_append_new(path, l);
        }
        json_object_set_new(o, "related", rel);
        json_object_set_new(o, "path", path);
        json_array_append_new(findings, o);
    }
    for (size_t i = 0; i < problems->n; i++)
        json_array_append_new(notdone, jstr(problems->v[i]));
    return json_pack("{s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:f}}", "tool",
                     "gpumem lint", "version", LINT_VERSION, "findings", findings,
                     "notAnalyzed", notdone, "summary", "files", (json_int_t)sum->units,
                     "notAnalyzed", (json_int_t)problems->n, "baselineHidden",
                     (json_int_t)sum->baseline_hidden, "errors",
                     (json_int_t)sum->count[LINT_ERROR], "warnings",
                     (json_int_t)sum->count[LINT_WARNING], "notes",
                     (json_int_t)sum->count[LINT_NOTE], "seconds", sum->seconds);
}

static const char *sarif_level(int sev)
{
    return sev == LINT_NOTE ? "note" : sev == LINT_ERROR ? "error" : "warning";
}

/** A URI reference for a path: percent-encoded, file:// for absolute paths. */
static char *path_uri(const char *path)
{
    size_t cap = strlen(path) * 3 + 8, k = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    if (path[0] == '/')
        k = (size_t)snprintf(buf, cap, "file://");
    for (const char *p = path; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isalnum(ch) || strchr("-._~/", ch))
            buf[k++] = (char)ch;
        else
            k += (size_t)snprintf(buf + k, cap - k, "%%%02X", ch);
    }
    buf[k] = '\0';
    return buf;
}

static json_t *sarif_location(const char *path, uint32_t line, uint32_t col, uint32_t end_line,
                              uint32_t end_col, const char *message)
{
    char *uri = path_uri(path);
    json_t *region = json_pack("{s:I, s:I}", "startLine", (json_int_t)line, "startColumn",
                               (json_int_t)col);
    if (end_line >= line && end_line) {
        json_object_set_new(region, "endLine", json_integer(end_line));
        if (end_col)
            json_object_set_new(region, "endColumn", json_integer(end_col));
    }
    json_t *art = json_pack("{s:s}", "uri", uri ? uri : "");
    /* Relative paths are relative to the folder gpumem lint ran in (originalUriBaseIds). */
    if (path[0] != '/')
        json_object_set_new(art, "uriBaseId", json_string("SRCROOT"));
    json_t *loc = json_pack("{s:{s:o, s:o}}", "physicalLocation", "artifactLocation", art,
                            "region", region);
    free(uri);
    if (loc && message)
        json_object_set_new(loc, "message", json_pack("{s:o}", "text", jstr(message)));
    return loc;
}

static json_t *build_sarif(const struct lint_options *o, const struct lint_findings *fs,
                           const struct lint_strlist *problems)
{
    json_t *rules = json_array();
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        json_array_append_new(
            rules,
            json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s, s:b}, s:{s:s}}", "id",
                      lint_rules[r].id, "name", lint_rules[r].name, "shortDescription", "text",
                      lint_rules[r].brief, "fullDescription", "text", lint_rules[r].brief,
                      "help", "text", lint_rules[r].help, "defaultConfiguration", "level",
                      sarif_level(o->severity[r]), "enabled", o->enabled[r] ? 1 : 0,
                      "properties", "checker", lint_rules[r].checker));
    json_t *results = json_array(), *notes = json_array();
    for (size_t i = 0; i < problems->n; i++)
        json_array_append_new(notes, json_pack("{s:s, s:{s:o}}", "level", "error", "message",
                                               "text", jstr(problems->v[i])));
    for (size_t i = 0; i < fs->n; i++) {
        const struct lint_finding *f = &fs->v[i];
        json_t *result = json_pack(
            "{s:s, s:i, s:s, s:{s:o}, s:[o], s:{s:s}}", "ruleId", lint_rules[f->rule].id,
            "ruleIndex", f->rule, "level", sarif_level(f->severity), "message", "text",
            jstr(f->message), "locations",
            sarif_location(f->file, f->line, f->col, f->end_line, f->end_col, NULL),
            "partialFingerprints", "gpumemLintHash/v2", f->fingerprint);
        if (!result)
            continue;
        if (f->issue_hash)
            json_object_set_new(json_object_get(result, "partialFingerprints"),
                                "clang/issueHash/v1", json_string(f->issue_hash));
        if (f->n_related) {
            json_t *rel = json_array();
            for (size_t k = 0; k < f->n_related; k++) {
                json_t *l = sarif_location(f->related[k].file, f->related[k].line,
                                           f->related[k].col, 0, 0, f->related[k].message);
                json_object_set_new(l, "id", json_integer((json_int_t)k));
                json_array_append_new(rel, l);
            }
            json_object_set_new(result, "relatedLocations", rel);
        }
        if (f->n_path) {
            json_t *steps = json_array();
            for (size_t k = 0; k < f->n_path; k++) {
                const struct lint_loc *l = &f->path[k];
                json_array_append_new(
                    steps, json_pack("{s:o, s:s}", "location",
                                     sarif_location(l->file, l->line, l->col, 0, 0,
                                                    l->message ? l->message : ""),
                                     "importance",
                                     l->importance == 2   ? "essential"
                                     : l->importance == 1 ? "important"
                                                          : "unimportant"));
            }
            json_object_set_new(result, "codeFlows",
                                json_pack("[{s:[{s:o}]}]", "threadFlows", "locations", steps));
        }
        json_array_append_new(results, result);
    }
    char cwd[4096];
    json_t *base = json_object();
    if (getcwd(cwd, sizeof cwd)) {
        size_t n = strlen(cwd);
        if (n + 1 < sizeof cwd && cwd[n - 1] != '/')
            strcat(cwd, "/");
        char *u = path_uri(cwd);
        if (u)
            json_object_set_new(base, "SRCROOT", json_pack("{s:s}", "uri", u));
        free(u);
    }
    return json_pack("{s:s, s:s, s:[{s:{s:{s:s, s:s, s:s, s:o}}, s:o, s:[{s:b, s:o}], s:o}]}",
                     "$schema", "https://json.schemastore.org/sarif-2.1.0.json", "version",
                     "2.1.0", "runs", "tool", "driver", "name", "gpumem lint", "version",
                     LINT_VERSION, "semanticVersion", LINT_VERSION, "rules", rules,
                     "originalUriBaseIds", base, "invocations", "executionSuccessful", problems->n == 0,
                     "toolExecutionNotifications", notes, "results", results);
}

int lint_write(const struct lint_options *o, const struct lint_findings *f,
               const struct lint_strlist *problems, const struct lint_summary *sum, void *stream)
{
    FILE *out = stream;
    if (o->format == LINT_FORMAT_TEXT)
        return write_text(o, f, problems, sum, out);
    json_t *doc = o->format == LINT_FORMAT_JSON ? build_json(f, problems, sum)
                                                : build_sarif(o, f, problems);
    if (!doc) {
        fprintf(stderr, "gpumem lint: error: out of memory while writing the report\n");
        return -1;
    }
    int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    fputc('\n', out);
    json_decref(doc);
    return rc != 0 || ferror(out) ? -1 : 0;
}

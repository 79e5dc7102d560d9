/* Writing findings: compiler-style text (with the source line and a caret, and a note at the
 * allocation), JSON, and SARIF 2.1.0. JSON and SARIF are built with jansson so that every
 * string is escaped correctly whatever the source contains. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static const char *sarif_level(int sev)
{
    return sev == LINT_NOTE ? "note" : sev == LINT_ERROR ? "error" : "warning";
}

static int write_text(const struct lint_options *o, struct lint_file_result *res, size_t n,
                      const struct lint_summary *sum, FILE *out)
{
    for (size_t i = 0; i < n; i++) {
        const struct lint_file_result *r = &res[i];
        for (size_t k = 0; k < r->n; k++) {
            const struct lint_finding *f = &r->f[k];
            fprintf(out, "%s:%u:%u: %s: %s [%s]\n", r->path, f->line, f->col,
                    lint_severity_name(f->severity), f->message, lint_rules[f->rule].id);
            /* The caret keeps the line's tabs so that it sits under the column; a line cut
             * short before the column gets no caret. */
            fprintf(out, "%s\n", f->line_text);
            if (f->col <= strlen(f->line_text) + 1) {
                for (uint32_t c = 1; c < f->col && f->line_text[c - 1]; c++)
                    fputc(f->line_text[c - 1] == '\t' ? '\t' : ' ', out);
                fputs("^\n", out);
            }
            if (f->has_related)
                fprintf(out, "%s:%u:%u: note: %s\n", r->path, f->rel_line, f->rel_col,
                        f->rel_message);
        }
    }
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
        fprintf(out, "%s in %zu file%s", what, sum->files, sum->files == 1 ? "" : "s");
        if (sum->skipped)
            fprintf(out, ", %zu skipped", sum->skipped);
        fprintf(out, " (%.2f s)\n", sum->seconds);
    }
    return ferror(out) ? -1 : 0;
}

/** 64-bit FNV-1a, for fingerprints that survive edits elsewhere in the file. */
static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

/** The fingerprint's hash: rule, file, function and the trimmed line text, so that it
 *  survives edits elsewhere in the file. */
static uint64_t finding_hash(const struct lint_file_result *r, const struct lint_finding *f)
{
    char line[LINT_LINE_TEXT_MAX + 1];
    const char *s = f->line_text;
    while (*s && isspace((unsigned char)*s))
        s++;
    snprintf(line, sizeof line, "%s", s);
    size_t len = strlen(line);
    while (len && isspace((unsigned char)line[len - 1]))
        line[--len] = '\0';
    uint64_t h = 14695981039346656037ull;
    h = fnv(h, lint_rules[f->rule].id);
    h = fnv(h, "\x1f");
    h = fnv(h, r->path);
    h = fnv(h, "\x1f");
    h = fnv(h, f->function);
    h = fnv(h, "\x1f");
    return fnv(h, line);
}

/** Counts how often each hash was seen so far: identical lines in one function are told
 *  apart by their order (":1", ":2", ...). Open addressing, sized for the file's findings. */
struct seen {
    uint64_t *key;
    unsigned *count;
    size_t cap;
};

static unsigned seen_next(struct seen *t, uint64_t h)
{
    if (!t->cap)
        return 1;
    size_t i = (size_t)(h ^ (h >> 29)) & (t->cap - 1);
    while (t->count[i] && t->key[i] != h)
        i = (i + 1) & (t->cap - 1);
    t->key[i] = h;
    return ++t->count[i];
}

/** A URI reference for a path: percent-encoded, file:// for absolute paths. */
static char *path_uri(const char *path, char *buf, size_t cap)
{
    size_t k = 0;
    if (path[0] == '/')
        k = (size_t)snprintf(buf, cap, "file://");
    for (const char *p = path; *p && k + 4 < cap; p++) {
        unsigned char ch = (unsigned char)*p;
        if (isalnum(ch) || strchr("-._~/", ch))
            buf[k++] = (char)ch;
        else
            k += (size_t)snprintf(buf + k, cap - k, "%%%02X", ch);
    }
    buf[k] = '\0';
    return buf;
}

static json_t *json_finding(const struct lint_file_result *r, const struct lint_finding *f)
{
    json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:s}", "file", r->path,
                          "line", (json_int_t)f->line, "column", (json_int_t)f->col, "endLine",
                          (json_int_t)f->end_line, "endColumn", (json_int_t)f->end_col, "rule",
                          lint_rules[f->rule].id, "name", lint_rules[f->rule].name, "severity",
                          lint_severity_name(f->severity), "message", f->message, "function",
                          f->function);
    if (o && f->has_related)
        json_object_set_new(o, "related",
                            json_pack("[{s:s, s:I, s:I, s:s}]", "file", r->path, "line",
                                      (json_int_t)f->rel_line, "column", (json_int_t)f->rel_col,
                                      "message", f->rel_message));
    return o;
}

static json_t *build_json(struct lint_file_result *res, size_t n, const struct lint_summary *sum)
{
    json_t *findings = json_array(), *skipped = json_array();
    for (size_t i = 0; i < n; i++) {
        if (res[i].skipped)
            json_array_append_new(skipped, json_pack("{s:s, s:s}", "file", res[i].path, "reason",
                                                     res[i].skip_reason));
        for (size_t k = 0; k < res[i].n; k++)
            json_array_append_new(findings, json_finding(&res[i], &res[i].f[k]));
    }
    return json_pack("{s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:f}}", "tool",
                     "gpumem lint", "version", LINT_VERSION, "findings", findings, "skipped",
                     skipped, "summary", "files", (json_int_t)sum->files, "skipped",
                     (json_int_t)sum->skipped, "bytes", (json_int_t)sum->bytes, "errors",
                     (json_int_t)sum->count[LINT_ERROR], "warnings",
                     (json_int_t)sum->count[LINT_WARNING], "notes",
                     (json_int_t)sum->count[LINT_NOTE], "seconds", sum->seconds);
}

static json_t *sarif_location(const char *path, uint32_t line, uint32_t col, uint32_t end_line,
                              uint32_t end_col)
{
    char uri[4096];
    json_t *region = json_pack("{s:I, s:I}", "startLine", (json_int_t)line, "startColumn",
                               (json_int_t)col);
    if (end_line) {
        json_object_set_new(region, "endLine", json_integer(end_line));
        json_object_set_new(region, "endColumn", json_integer(end_col));
    }
    return json_pack("{s:{s:{s:s}, s:o}}", "physicalLocation", "artifactLocation", "uri",
                     path_uri(path, uri, sizeof uri), "region", region);
}

static json_t *build_sarif(const struct lint_options *o, struct lint_file_result *res, size_t n)
{
    json_t *rules = json_array();
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        json_array_append_new(
            rules, json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s, s:b}}", "id",
                             lint_rules[r].id, "name", lint_rules[r].name, "shortDescription",
                             "text", lint_rules[r].brief, "fullDescription", "text",
                             lint_rules[r].brief, "help", "text", lint_rules[r].help,
                             "defaultConfiguration", "level", sarif_level(o->severity[r]),
                             "enabled", o->enabled[r] ? 1 : 0));
    json_t *results = json_array(), *notes = json_array();
    for (size_t i = 0; i < n; i++) {
        struct lint_file_result *fr = &res[i];
        struct seen seen = {0};
        size_t cap = 16;
        while (cap < fr->n * 2)
            cap *= 2;
        seen.key = calloc(cap, sizeof *seen.key);
        seen.count = calloc(cap, sizeof *seen.count);
        seen.cap = seen.key && seen.count ? cap : 0;
        if (fr->skipped) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s skipped: %s", fr->path, fr->skip_reason);
            json_array_append_new(notes, json_pack("{s:s, s:{s:s}, s:[o]}", "level", "warning",
                                                   "message", "text", msg, "locations",
                                                   sarif_location(fr->path, 1, 1, 0, 0)));
        }
        for (size_t k = 0; k < fr->n; k++) {
            const struct lint_finding *f = &fr->f[k];
            char fp[64];
            uint64_t h = finding_hash(fr, f);
            snprintf(fp, sizeof fp, "%016llx:%u", (unsigned long long)h, seen_next(&seen, h));
            json_t *result = json_pack(
                "{s:s, s:i, s:s, s:{s:s}, s:[o], s:{s:s}}", "ruleId", lint_rules[f->rule].id,
                "ruleIndex", f->rule, "level", sarif_level(f->severity), "message", "text",
                f->message, "locations",
                sarif_location(fr->path, f->line, f->col, f->end_line, f->end_col),
                "partialFingerprints", "gpumemLintHash/v1", fp);
            if (f->has_related) {
                json_t *rel = sarif_location(fr->path, f->rel_line, f->rel_col, 0, 0);
                json_object_set_new(rel, "id", json_integer(0));
                json_object_set_new(rel, "message", json_pack("{s:s}", "text", f->rel_message));
                json_object_set_new(result, "relatedLocations", json_pack("[o]", rel));
            }
            json_array_append_new(results, result);
        }
        free(seen.key);
        free(seen.count);
    }
    return json_pack("{s:s, s:s, s:[{s:{s:{s:s, s:s, s:s, s:o}}, s:[{s:b, s:o}], s:o}]}",
                     "$schema", "https://json.schemastore.org/sarif-2.1.0.json", "version",
                     "2.1.0", "runs", "tool", "driver", "name", "gpumem lint", "version",
                     LINT_VERSION, "semanticVersion", LINT_VERSION, "rules", rules,
                     "invocations", "executionSuccessful", 1, "toolExecutionNotifications", notes,
                     "results", results);
}

int lint_write(const struct lint_options *o, struct lint_file_result *res, size_t n,
               const struct lint_summary *sum, void *stream)
{
    FILE *out = stream;
    if (o->format == LINT_FORMAT_TEXT)
        return write_text(o, res, n, sum, out);
    json_t *doc = o->format == LINT_FORMAT_JSON ? build_json(res, n, sum) : build_sarif(o, res, n);
    if (!doc) {
        fprintf(stderr, "gpumem lint: error: out of memory while writing the report\n");
        return -1;
    }
    int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    fputc('\n', out);
    json_decref(doc);
    return rc != 0 || ferror(out) ? -1 : 0;
}

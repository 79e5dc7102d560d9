/* Reading the analyzer's SARIF (clang --analyzer-output sarif, one document per unit) and
 * the fingerprints of an earlier gpumem report (--baseline). Only gpumem's checkers' results
 * are kept; the path comes from codeFlows, and its "allocated here" and "released here"
 * notes become related locations. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void lint_finding_free(struct lint_finding *f)
{
    free(f->file);
    free(f->message);
    free(f->issue_hash);
    for (size_t i = 0; i < f->n_path; i++) {
        free(f->path[i].file);
        free(f->path[i].message);
    }
    free(f->path);
    for (size_t i = 0; i < f->n_related; i++) {
        free(f->related[i].file);
        free(f->related[i].message);
    }
    free(f->related);
    memset(f, 0, sizeof *f);
}

void lint_findings_free(struct lint_findings *f)
{
    for (size_t i = 0; i < f->n; i++)
        lint_finding_free(&f->v[i]);
    free(f->v);
    memset(f, 0, sizeof *f);
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                        : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                               : -1;
}

/** The shown path of a SARIF artifact URI (file:///abs, percent-encoded), or NULL. */
static char *uri_path(const char *uri)
{
    if (!uri)
        return NULL;
    if (strncmp(uri, "file://", 7) == 0) {
        uri += 7;
        /* file://host/path: only the local host is meaningful here. */
        if (strncmp(uri, "localhost/", 10) == 0)
            uri += 9;
    }
    size_t n = strlen(uri);
    char *d = malloc(n + 1);
    if (!d)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int h1, h2;
        if (uri[i] == '%' && i + 2 < n && (h1 = hexval(uri[i + 1])) >= 0 &&
            (h2 = hexval(uri[i + 2])) >= 0) {
            d[k++] = (char)(h1 * 16 + h2);
            i += 2;
        } else {
            d[k++] = uri[i];
        }
    }
    d[k] = '\0';
    if (memchr(d, '\0', k) != NULL || k == 0) {
        free(d);
        return NULL;
    }
    char *abs = d[0] == '/' ? lint_path_normalize(d) : lint_path_absolute(d);
    free(d);
    if (!abs)
        return NULL;
    char *shown = lint_path_display(abs);
    free(abs);
    return shown;
}

static uint32_t get_u32(json_t *o, const char *key)
{
    json_int_t v = json_integer_value(json_object_get(o, key));
    return v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
}

static int starts_with(const char *s, const char *prefix);

/** A step in a library's header (CUDA's, the compiler's, the C library's): its inline wrappers
 *  are not the user's code and their steps say nothing the step at the call does not. */
static int in_library_header(const char *file)
{
    const char *cuda = lint_cuda_root();
    size_t n = cuda ? strlen(cuda) : 0;
    if (file[0] != '/')
        return 0;
    if (n > 1 && strncmp(file, cuda, n) == 0 && file[n] == '/')
        return 1;
    return strncmp(file, "/usr/include/", 13) == 0 || strncmp(file, "/usr/lib/", 9) == 0;
}

/** Keeps the path a reviewer acts on: from the first "allocated here" step on (the branches
 *  before the allocation are not about it: "Assuming 'argc' is > 1"), without steps inside
 *  library headers. */
static void trim_path(struct lint_finding *f)
{
    size_t first = 0, k = 0, calls = 0;
    while (first < f->n_path && !starts_with(f->path[first].message, "allocated here"))
        first++;
    if (first == f->n_path)
        first = 0;
    for (size_t i = 0; i < f->n_path; i++) {
        const char *m = f->path[i].message;
        /* A return from a call whose entry was cut off (the runtime's cudaMalloc<T>). */
        int orphan = starts_with(m, "Returning from ") && calls == 0;
        if (starts_with(m, "Returning from ") && calls > 0)
            calls--;
        if (i < first || orphan || in_library_header(f->path[i].file)) {
            free(f->path[i].file);
            free(f->path[i].message);
            continue;
        }
        calls += starts_with(m, "Calling ");
        f->path[k++] = f->path[i];
    }
    f->n_path = k;
}

/** Reads a SARIF location object (result location, or threadFlow location's location) into
 *  @p out. @p artifacts resolves "index" when there is no uri. Returns 0 or -1. */
static int read_location(json_t *loc, json_t *artifacts, struct lint_loc *out, uint32_t *end_line,
                         uint32_t *end_col)
{
    json_t *phys = json_object_get(loc, "physicalLocation");
    json_t *art = json_object_get(phys, "artifactLocation");
    const char *uri = json_string_value(json_object_get(art, "uri"));
    if (!uri) {
        json_t *idx = json_object_get(art, "index");
        if (json_is_integer(idx))
            uri = json_string_value(json_object_get(
                json_object_get(json_array_get(artifacts, (size_t)json_integer_value(idx)),
                                "location"),
                "uri"));
    }
    json_t *region = json_object_get(phys, "region");
    memset(out, 0, sizeof *out);
    out->file = uri_path(uri);
    if (!out->file)
        return -1;
    out->line = get_u32(region, "startLine");
    out->col = get_u32(region, "startColumn");
    if (!out->line)
        out->line = 1;
    if (!out->col)
        out->col = 1;
    if (end_line) {
        *end_line = get_u32(region, "endLine");
        *end_col = get_u32(region, "endColumn");
    }
    const char *msg = json_string_value(json_object_get(json_object_get(loc, "message"), "text"));
    if (msg) {
        out->message = strdup(msg);
        if (!out->message) {
            free(out->file);
            out->file = NULL;
            return -1;
        }
    }
    return 0;
}

static int push_loc(struct lint_loc **v, size_t *n, const struct lint_loc *l)
{
    struct lint_loc *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return -1;
    *v = nv;
    nv[(*n)++] = *l;
    return 0;
}

static int starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/** The analyzer's path into f->path, the first thread flow of the first code flow (clang
 *  writes one); its "allocated here" and "released here" steps into f->related too. */
static void read_path(json_t *res, json_t *artifacts, struct lint_finding *f)
{
    json_t *tf = json_array_get(
        json_object_get(json_array_get(json_object_get(res, "codeFlows"), 0), "threadFlows"), 0);
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(tf, "locations"), i, step) {
        struct lint_loc l;
        if (read_location(json_object_get(step, "location"), artifacts, &l, NULL, NULL) != 0)
            continue;
        const char *imp = json_string_value(json_object_get(step, "importance"));
        l.importance = !imp || strcmp(imp, "essential") == 0 ? 2
                       : strcmp(imp, "important") == 0       ? 1
                                                             : 0;
        if (starts_with(l.message, "allocated here") || starts_with(l.message, "released here")) {
            struct lint_loc r = l;
            r.file = strdup(l.file);
            r.message = l.message ? strdup(l.message) : NULL;
            if (!r.file || (l.message && !r.message) ||
                push_loc(&f->related, &f->n_related, &r) != 0) {
                free(r.file);
                free(r.message);
            }
        }
        if (push_loc(&f->path, &f->n_path, &l) != 0) {
            free(l.file);
            free(l.message);
        }
    }
}

/** relatedLocations, when the producer wrote them, into f->related (those not there yet). */
static void read_related(json_t *res, json_t *artifacts, struct lint_finding *f)
{
    size_t i;
    json_t *step;
    json_array_foreach(json_object_get(res, "relatedLocations"), i, step) {
        struct lint_loc l;
        if (read_location(step, artifacts, &l, NULL, NULL) != 0)
            continue;
        int dup = 0;
        for (size_t k = 0; k < f->n_related && !dup; k++)
            dup = f->related[k].line == l.line && f->related[k].col == l.col &&
                  strcmp(f->related[k].file, l.file) == 0;
        if (dup || push_loc(&f->related, &f->n_related, &l) != 0) {
            free(l.file);
            free(l.message);
        }
    }
}

/** One result into @p f; returns 1 when kept, 0 when not a gpumem result, -1 on error. */
static int read_result(json_t *res, json_t *artifacts, size_t unit, struct lint_finding *f)
{
    const char *rule_id = json_string_value(json_object_get(res, "ruleId"));
    if (!starts_with(rule_id, "gpumem."))
        return 0;
    int rule = lint_rule_by_checker(rule_id);
    if (rule < 0)
        return 0; /* a checker newer than this front end: not one it can name */
    memset(f, 0, sizeof *f);
    f->rule = rule;
    f->unit = unit;
    f->severity = LINT_WARNING;
    const char *level = json_string_value(json_object_get(res, "level"));
    if (level && strcmp(level, "note") == 0)
        f->severity = LINT_NOTE;
    const char *msg = json_string_value(json_object_get(json_object_get(res, "message"), "text"));
    f->message = strdup(msg ? msg : "");
    struct lint_loc where;
    if (!f->message ||
        read_location(json_array_get(json_object_get(res, "locations"), 0), artifacts, &where,
                      &f->end_line, &f->end_col) != 0) {
        lint_finding_free(f);
        return -1;
    }
    f->file = where.file;
    f->line = where.line;
    f->col = where.col;
    free(where.message);
    /* An alignment the analyzer could not prove is a note (GM003 with --pedantic). */
    if (rule == LINT_GM003 && strstr(f->message, "not provable"))
        f->severity = LINT_NOTE;
    const char *hash = NULL;
    json_t *pf = json_object_get(res, "partialFingerprints");
    const char *key;
    json_t *val;
    json_object_foreach(pf, key, val) if (starts_with(key, "clang/issueHash"))
        hash = json_string_value(val);
    if (hash && !(f->issue_hash = strdup(hash))) {
        lint_finding_free(f);
        return -1;
    }
    read_path(res, artifacts, f);
    trim_path(f);
    read_related(res, artifacts, f);
    return 1;
}

int lint_sarif_parse(const char *text, size_t len, size_t unit, struct lint_findings *out,
                     char *why, size_t why_cap)
{
    json_error_t err;
    json_t *doc = json_loadb(text, len, 0, &err);
    if (!doc) {
        snprintf(why, why_cap, "the analyzer's SARIF does not parse (line %d: %s)", err.line,
                 err.text);
        return -1;
    }
    json_t *runs = json_object_get(doc, "runs");
    if (!json_is_array(runs)) {
        snprintf(why, why_cap, "the analyzer's output is not SARIF (no \"runs\" array)");
        json_decref(doc);
        return -1;
    }
    size_t r;
    json_t *run;
    int rc = 0;
    json_array_foreach(runs, r, run) {
        json_t *artifacts = json_object_get(run, "artifacts");
        size_t i;
        json_t *res;
        json_array_foreach(json_object_get(run, "results"), i, res) {
            struct lint_finding f;
            int k = read_result(res, artifacts, unit, &f);
            if (k < 0)
                continue; /* a result without a usable location */
            if (k == 0)
                continue;
            struct lint_finding *v = lint_array_grow(out->v, out->n, &out->cap, sizeof *v);
            if (!v) {
                lint_finding_free(&f);
                snprintf(why, why_cap, "out of memory");
                rc = -1;
                break;
            }
            out->v = v;
            out->v[out->n++] = f;
        }
    }
    json_decref(doc);
    return rc;
}

int lint_baseline_parse(const char *text, size_t len, struct lint_strlist *out, char *why,
                        size_t why_cap)
{
    json_error_t err;
    json_t *doc = json_loadb(text, len, 0, &err);
    if (!doc) {
        snprintf(why, why_cap, "not JSON (line %d: %s)", err.line, err.text);
        return -1;
    }
    json_t *runs = json_object_get(doc, "runs");
    if (!json_is_array(runs)) {
        snprintf(why, why_cap, "not a SARIF file (no \"runs\" array)");
        json_decref(doc);
        return -1;
    }
    size_t r, i;
    json_t *run, *res;
    json_array_foreach(runs, r, run) json_array_foreach(json_object_get(run, "results"), i, res)
    {
        const char *fp = json_string_value(
            json_object_get(json_object_get(res, "partialFingerprints"), "gpumemLintHash/v2"));
        if (fp)
            lint_strlist_add(out, fp);
    }
    json_decref(doc);
    return 0;
}

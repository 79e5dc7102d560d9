/* The corpus test: lints every file of tests/lint/corpus (and the samples-style programs in
 * tests/lint/samples) and compares the findings with the `expect:` comments, line by line.
 * Prints precision and recall per rule and fails when either is below 95 %, when a note
 * differs, or when the corpus has fewer than 80 cases. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MARKS 4096

struct mark {
    uint32_t line;
    int rule;
    int note;
    int used;
};

struct tally {
    size_t tp, fp, fn;
};

static struct tally tally[LINT_RULE_COUNT];
static size_t cases, files, note_errors;
static int verbose, smoke;
static size_t smoke_files;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/** Reads the expectations and the scored rules of one corpus file. */
static size_t read_marks(const char *src, struct mark *m, int scored[LINT_RULE_COUNT])
{
    size_t n = 0;
    uint32_t line = 1;
    int any_directive = 0;
    for (const char *p = src; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char buf[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), p);
        const char *c;
        if ((c = strstr(buf, "corpus-rules:")) != NULL) {
            any_directive = 1;
            for (const char *q = c; (q = strstr(q, "GM")) != NULL; q += 2) {
                int r = lint_rule_parse(q, 5);
                if (r >= 0)
                    scored[r] = 1;
            }
        }
        if (strstr(buf, "// case:"))
            cases++;
        const char *kinds[2] = {"expect:", "expect-note:"};
        for (int k = 0; k < 2; k++) {
            const char *e = strstr(buf, kinds[k]);
            if (!e)
                continue;
            for (const char *q = e; (q = strstr(q, "GM")) != NULL && n < MAX_MARKS; q += 2) {
                int r = lint_rule_parse(q, 5);
                if (r >= 0)
                    m[n++] = (struct mark){line, r, k, 0};
            }
        }
        line++;
        p += len + (eol ? 1 : 0);
        if (!eol)
            break;
    }
    if (!any_directive)
        for (int r = 0; r < LINT_RULE_COUNT; r++)
            scored[r] = 1;
    return n;
}

static void check_file(TSParser *parser, const struct lint_options *o, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    static char src[1 << 20];
    size_t len = fread(src, 1, sizeof src - 1, f);
    src[len] = '\0';
    fclose(f);
    if (smoke) {
        /* Only that it returns (under the sanitizers: cleanly), and the writers cope. */
        struct lint_file_result r;
        memset(&r, 0, sizeof r);
        lint_analyze_file(o, parser, path, &r);
        FILE *null = fopen("/dev/null", "w");
        struct lint_summary sum = {0};
        struct lint_options w = *o;
        for (int fmt = LINT_FORMAT_TEXT; null && fmt <= LINT_FORMAT_SARIF; fmt++) {
            w.format = fmt;
            if (lint_write(&w, &r, 1, &sum, null) != 0) {
                fprintf(stderr, "%s: writing format %d failed\n", path, fmt);
                exit(1);
            }
        }
        if (null)
            fclose(null);
        printf("smoke ok         %s: %zu findings\n", path, r.n);
        lint_result_free(&r);
        smoke_files++;
        return;
    }
    static struct mark marks[MAX_MARKS];
    int scored[LINT_RULE_COUNT] = {0};
    size_t nm = read_marks(src, marks, scored);
    struct lint_file_result r;
    memset(&r, 0, sizeof r);
    lint_analyze_file(o, parser, path, &r);
    if (r.skipped) {
        fprintf(stderr, "%s skipped: %s\n", path, r.skip_reason);
        exit(1);
    }
    files++;
    for (size_t i = 0; i < r.n; i++) {
        const struct lint_finding *fd = &r.f[i];
        if (!scored[fd->rule])
            continue;
        int note = fd->severity == LINT_NOTE;
        int found = 0;
        for (size_t k = 0; k < nm && !found; k++) {
            if (!marks[k].used && marks[k].line == fd->line && marks[k].rule == fd->rule &&
                marks[k].note == note) {
                marks[k].used = 1;
                found = 1;
            }
        }
        if (note) {
            if (!found) {
                note_errors++;
                printf("unexpected note  %s:%u: [%s] %s\n", path, fd->line,
                       lint_rules[fd->rule].id, fd->message);
            }
            continue;
        }
        if (found) {
            tally[fd->rule].tp++;
            if (verbose)
                printf("ok               %s:%u: [%s] %s\n", path, fd->line,
                       lint_rules[fd->rule].id, fd->message);
        } else {
            tally[fd->rule].fp++;
            printf("false positive   %s:%u: [%s] %s\n", path, fd->line, lint_rules[fd->rule].id,
                   fd->message);
        }
    }
    for (size_t k = 0; k < nm; k++) {
        if (marks[k].used || !scored[marks[k].rule])
            continue;
        if (marks[k].note) {
            note_errors++;
            printf("missing note     %s:%u: [%s]\n", path, marks[k].line,
                   lint_rules[marks[k].rule].id);
        } else {
            tally[marks[k].rule].fn++;
            printf("false negative   %s:%u: [%s]\n", path, marks[k].line,
                   lint_rules[marks[k].rule].id);
        }
    }
    lint_result_free(&r);
}

static void check_dir(TSParser *parser, const struct lint_options *o, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cannot open %s\n", dir);
        exit(1);
    }
    struct lint_strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *dot = strrchr(e->d_name, '.');
        if (e->d_name[0] != '.' && dot &&
            (strcmp(dot, ".cu") == 0 || strcmp(dot, ".cpp") == 0 || strcmp(dot, ".c") == 0 ||
             (smoke && strcmp(dot, ".md") != 0)))
            lint_strlist_add(&names, e->d_name);
    }
    closedir(d);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names.v[i]);
        check_file(parser, o, path);
    }
    lint_strlist_free(&names);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_corpus [-v] [--score] DIR... [--smoke DIR...]\n");
        return 2;
    }
    struct lint_options o;
    lint_options_init(&o);
    TSParser *parser = lint_parser_new();
    if (!parser) {
        fprintf(stderr, "the CUDA grammar does not load\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (strcmp(argv[i], "--smoke") == 0)
            smoke = 1;
        else if (strcmp(argv[i], "--score") == 0)
            smoke = 0;
        else
            check_dir(parser, &o, argv[i]);
    }
    int failed = 0;
    size_t TP = 0, FP = 0, FN = 0;
    printf("\nrule    expected  found  true+  false+  false-  precision  recall\n");
    for (int r = 0; r < LINT_RULE_COUNT; r++) {
        struct tally t = tally[r];
        double p = t.tp + t.fp ? 100.0 * (double)t.tp / (double)(t.tp + t.fp) : 100.0;
        double rc = t.tp + t.fn ? 100.0 * (double)t.tp / (double)(t.tp + t.fn) : 100.0;
        int bad = p < 95.0 || rc < 95.0 || t.tp + t.fn == 0;
        failed |= bad;
        printf("%s  %8zu  %5zu  %5zu  %6zu  %6zu  %8.1f %%  %5.1f %%%s\n", lint_rules[r].id,
               t.tp + t.fn, t.tp + t.fp, t.tp, t.fp, t.fn, p, rc, bad ? "  FAIL" : "");
        TP += t.tp;
        FP += t.fp;
        FN += t.fn;
    }
    printf("all     %8zu  %5zu  %5zu  %6zu  %6zu  %8.1f %%  %5.1f %%\n", TP + FN, TP + FP, TP, FP,
           FN, TP + FP ? 100.0 * (double)TP / (double)(TP + FP) : 100.0,
           TP + FN ? 100.0 * (double)TP / (double)(TP + FN) : 100.0);
    printf("%zu cases in %zu files; %zu note mismatches; %zu smoke files\n", cases, files,
           note_errors, smoke_files);
    if (cases < 80) {
        printf("FAIL: the corpus needs at least 80 cases\n");
        failed = 1;
    }
    if (note_errors)
        failed = 1;
    ts_parser_delete(parser);
    lint_options_free(&o);
    printf("%s\n", failed ? "corpus: FAILED" : "corpus: passed");
    return failed;
}

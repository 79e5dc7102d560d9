/* Precision and recall of gpumem's analyzer checkers on the corpus, per rule.
 *
 * Each corpus file marks the findings it expects with `// expect: GM001` (several ids
 * separated by commas or spaces) on the line the finding is reported at, and names the rules
 * it is a corpus for on a `// corpus-rules:` line: findings of other rules in it are not
 * counted (a corpus of leaks has unchecked statuses the leak cases do not mark). Every file in the
 * samples folder is a correct program: any finding there is a false positive. The analyzer
 * is run on each file as `gpumem lint` runs it (clang --analyze with the plugin and clang's
 * own reporting checkers off); its warnings are read from clang's text output. A finding on a
 * line with a `gpumem-lint: ignore[GMxxx]` comment is suppressed, as `gpumem lint` does; two
 * findings of one rule on one line (two allocations that leak at one exit) count once.
 *
 * With --gpumem-lint GPUMEM (the `gpumem` command), each file goes through
 * `gpumem lint --format=json` instead, so that the product's path (its flags, suppressions,
 * merging) is what is measured; its findings are read with jansson.
 *
 * usage: lint_test_corpus --clang CLANGXX --clang-c CLANG --plugin SO --include DIR
 *                         [--gpumem-lint GPUMEM] CORPUS_DIR SAMPLES_DIR
 * Exit status 0 when every rule reaches 95 % precision and 95 % recall, 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef LINT_TEST_HAVE_JANSSON
#include <jansson.h>

#include "../../tools/lint/analyzer/engine-config.h"
#endif

#define MAX_RULES 12
#define MAX_EXPECT 512
#define MIN_SCORE 0.95
#define MAX_LINES 8192

static const char *const rule_checkers[MAX_RULES] = {
    NULL,
    "gpumem.NeverReleased",     "gpumem.MismatchedRelease", "gpumem.VectorAlignment",
    "gpumem.UncheckedStatus",   "gpumem.LoopAllocation",    "gpumem.EarlyExitLeak",
    "gpumem.WriteCombinedRead", "gpumem.DoubleRelease",     "gpumem.UseAfterRelease",
    "gpumem.InteriorRelease",   "gpumem.StreamOrderedRelease",
};

struct expectation {
    int line;
    int rule;
    int found;
};

struct options {
    const char *clang;
    const char *clang_c;
    const char *plugin;
    const char *include;
    const char *gpumem; /* `gpumem`, to run `gpumem lint`; NULL: clang directly */
};

static int tp[MAX_RULES], fp[MAX_RULES], fn[MAX_RULES];
/* Per line of the file being analyzed: bit r set when rule r is suppressed there, and when
 * a finding of rule r was already counted there. */
static unsigned suppressed[MAX_LINES], counted[MAX_LINES];

static int rule_of_checker(const char *name, size_t len) {
    for (int r = 1; r < MAX_RULES; r++)
        if (strlen(rule_checkers[r]) == len && strncmp(rule_checkers[r], name, len) == 0)
            return r;
    return 0;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Reads the `expect:` marks of one file, and sets rules[r] for each rule it is a corpus for. */
static int read_expectations(const char *path, struct expectation *out, int max, int *rules) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "lint_test_corpus: cannot open %s\n", path);
        exit(2);
    }
    char buf[4096];
    int line = 0, n = 0;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        const char *ignore = strstr(buf, "gpumem-lint: ignore");
        if (ignore && line < MAX_LINES) {
            const char *open = strchr(ignore, '[');
            if (!open)
                suppressed[line] = ~0u;
            for (const char *p = open; p && (p = strstr(p, "GM")) != NULL; p += 2)
                suppressed[line] |= 1u << (atoi(p + 2) % 32);
        }
        const char *list = strstr(buf, "// corpus-rules:");
        if (list)
            for (const char *p = list; (p = strstr(p, "GM")) != NULL; p += 2) {
                int id = atoi(p + 2);
                if (id > 0 && id < MAX_RULES)
                    rules[id] = 1;
            }
        const char *mark = strstr(buf, "// expect:");
        if (!mark)
            continue;
        for (const char *p = mark + 10; (p = strstr(p, "GM")) != NULL; p += 2) {
            int id = atoi(p + 2);
            if (id <= 0 || id >= MAX_RULES || n == max) {
                fprintf(stderr, "%s:%d: bad expectation\n", path, line);
                exit(2);
            }
            out[n++] = (struct expectation){line, id, 0};
        }
    }
    fclose(f);
    return n;
}

/* Counts one finding against the expectations of its file. */
static void count(const char *path, int line, int rule, const int *rules, struct expectation *exp,
                  int nexp, const char *what) {
    if (!rule || !rules[rule] || line <= 0 || line >= MAX_LINES)
        return;
    if ((suppressed[line] | counted[line]) & (1u << rule))
        return;
    counted[line] |= 1u << rule;
    for (int i = 0; i < nexp; i++)
        if (exp[i].line == line && exp[i].rule == rule && !exp[i].found) {
            exp[i].found = 1;
            tp[rule]++;
            return;
        }
    fp[rule]++;
    printf("false positive: %s:%d: GM%03d %s\n", path, line, rule, what);
}

#ifdef LINT_TEST_HAVE_JANSSON
/* Runs `gpumem lint --format=json` on one file and counts its findings. */
static void analyze_product(const struct options *o, const char *path, const char *dir,
                            struct expectation *exp, int nexp, const int *rules) {
    char cmd[16384 + 512];
    snprintf(cmd, sizeof cmd,
             "'%s' lint --no-config --format=json --fail-on never -q --analyzer-plugin '%s' "
             "'%s' -- -I'%s' -I'%s'",
             o->gpumem, o->plugin, path, dir, o->include);
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("popen");
        exit(2);
    }
    json_error_t err;
    json_t *report = json_loadf(p, 0, &err);
    int status = pclose(p);
    if (!report || status != 0) {
        fprintf(stderr, "lint_test_corpus: gpumem lint failed on %s (status %d): %s\n", path,
                status, report ? "" : err.text);
        exit(2);
    }
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(report, "findings"), i, f) {
        const char *rule = json_string_value(json_object_get(f, "rule"));
        int line = (int)json_integer_value(json_object_get(f, "line"));
        const char *msg = json_string_value(json_object_get(f, "message"));
        count(path, line, rule && strncmp(rule, "GM", 2) == 0 ? atoi(rule + 2) : 0, rules, exp,
              nexp, msg ? msg : "");
    }
    json_decref(report);
}
#endif

/* Runs the analyzer on one file; counts each gpumem warning against the expectations. */
static void analyze(const struct options *o, const char *path, struct expectation *exp,
                    int nexp, const int *rules) {
    const char *lang;
    const char *driver = o->clang;
    if (ends_with(path, ".c")) {
        lang = "-x c -I/usr/local/cuda/include";
        driver = o->clang_c;
    } else if (ends_with(path, ".cpp")) {
        lang = "-x c++ -I/usr/local/cuda/include";
    } else {
        lang = "-x cuda --cuda-host-only --cuda-path=/usr/local/cuda -nocudalib "
               "-Wno-unknown-cuda-version -I/usr/local/cuda/include/cccl";
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
#ifdef LINT_TEST_HAVE_JANSSON
    if (o->gpumem) {
        analyze_product(o, path, dir, exp, nexp, rules);
        goto missed;
    }
#endif
    char cmd[16384 + 512];
    snprintf(cmd, sizeof cmd,
             "'%s' --analyze %s -I'%s' -I'%s' -Xclang -load -Xclang '%s' "
             "-Xclang -analyzer-checker=gpumem "
             "-Xclang -analyzer-disable-checker=" GPUMEM_LINT_DISABLED_CHECKERS
             " --analyzer-output text -o /dev/null '%s' 2>&1",
             driver, lang, dir, o->include, o->plugin, path);
    FILE *p = popen(cmd, "r");
    if (!p) {
        perror("popen");
        exit(2);
    }
    char buf[8192];
    size_t plen = strlen(path);
    while (fgets(buf, sizeof buf, p)) {
        if (strncmp(buf, path, plen) != 0 || buf[plen] != ':')
            continue;
        int line = atoi(buf + plen + 1);
        if (strstr(buf, ": error: ")) {
            fprintf(stderr, "%s", buf);
            exit(2);
        }
        const char *w = strstr(buf, ": warning: ");
        const char *tag = w ? strstr(w, "[gpumem.") : NULL;
        if (!tag)
            continue;
        const char *end = strchr(tag, ']');
        int rule = end ? rule_of_checker(tag + 1, (size_t)(end - tag - 1)) : 0;
        count(path, line, rule, rules, exp, nexp, w + 11);
    }
    int status = pclose(p);
    if (status != 0) {
        fprintf(stderr, "lint_test_corpus: the analyzer failed on %s (status %d)\n", path,
                status);
        exit(2);
    }
#ifdef LINT_TEST_HAVE_JANSSON
missed:
#endif
    for (int i = 0; i < nexp; i++)
        if (!exp[i].found) {
            fn[exp[i].rule]++;
            printf("missed: %s:%d: GM%03d\n", path, exp[i].line, exp[i].rule);
        }
}

static void analyze_dir(const struct options *o, const char *dir, int expect_marks) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "lint_test_corpus: cannot open %s\n", dir);
        exit(2);
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!ends_with(e->d_name, ".cu") && !ends_with(e->d_name, ".c") &&
            !ends_with(e->d_name, ".cpp"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        static struct expectation exp[MAX_EXPECT];
        int rules[MAX_RULES] = {0};
        memset(suppressed, 0, sizeof suppressed);
        memset(counted, 0, sizeof counted);
        int n = read_expectations(path, exp, MAX_EXPECT, rules);
        if (!expect_marks)
            for (int r = 1; r < MAX_RULES; r++)
                rules[r] = 1;
        analyze(o, path, exp, n, rules);
    }
    closedir(d);
}

int main(int argc, char **argv) {
    struct options o = {0};
    const char *dirs[2] = {0};
    int ndirs = 0;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--clang") == 0)
            o.clang = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--clang-c") == 0)
            o.clang_c = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--plugin") == 0)
            o.plugin = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--include") == 0)
            o.include = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--gpumem-lint") == 0)
            o.gpumem = argv[++i];
        else if (ndirs < 2)
            dirs[ndirs++] = argv[i];
    }
    if (!o.clang || !o.clang_c || !o.plugin || !o.include || ndirs != 2) {
        fprintf(stderr, "usage: lint_test_corpus --clang CLANGXX --clang-c CLANG --plugin SO "
                        "--include DIR CORPUS_DIR SAMPLES_DIR\n");
        return 2;
    }
#ifndef LINT_TEST_HAVE_JANSSON
    if (o.gpumem) {
        fprintf(stderr, "lint_test_corpus: built without jansson: --gpumem-lint unsupported\n");
        return 2;
    }
#endif
    printf("analyzing with %s\n", o.gpumem ? "gpumem lint" : "clang and the plugin");
    analyze_dir(&o, dirs[0], 1);
    analyze_dir(&o, dirs[1], 0);

    int failed = 0;
    printf("rule   checker                        tp  fp  fn  precision  recall\n");
    for (int r = 1; r < MAX_RULES; r++) {
        int found = tp[r] + fp[r], expected = tp[r] + fn[r];
        double precision = found ? (double)tp[r] / found : 1.0;
        double recall = expected ? (double)tp[r] / expected : 1.0;
        int bad = precision < MIN_SCORE || recall < MIN_SCORE || expected == 0;
        printf("GM%03d  %-29s %3d %3d %3d  %8.1f%%  %5.1f%%%s\n", r, rule_checkers[r], tp[r],
               fp[r], fn[r], 100 * precision, 100 * recall,
               expected == 0 ? "  no cases" : bad ? "  BELOW 95 %" : "");
        failed |= bad;
    }
    return failed;
}

/* `gpumem lint`: the command line, and the driver that spreads files over worker threads
 * (one tree-sitter parser each) and writes the findings in file order, so the output does
 * not depend on -j. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../tool.h"

static void usage(FILE *out)
{
    fputs(
        "usage: gpumem lint [options] PATHS...\n"
        "       gpumem lint [options] -p compile_commands.json\n"
        "\n"
        "Reviews CUDA, C and C++ source for the memory-management faults of the checklist:\n"
        "  GM001  allocation never released            GM005  allocation in a loop not released\n"
        "  GM002  mismatched release                           in the same iteration\n"
        "  GM003  misaligned vector view (float4 ...)  GM006  early exit (return, goto, break,\n"
        "  GM004  unchecked CUDA call or launch                continue, throw) leaks\n"
        "                                              GM007  host read of write-combined memory\n"
        "PATHS are files (any extension) and folders, walked recursively for\n"
        ".cu .cuh .c .h .cc .cpp .cxx .hpp files (hidden entries are skipped).\n"
        "\n"
        "Input:\n"
        "  -p, --compile-commands FILE  lint the files of a compilation database (a file,\n"
        "                               or a folder holding compile_commands.json)\n"
        "      --exclude GLOB           skip paths matching GLOB (repeatable)\n"
        "      --extensions LIST        extensions for folders (default .cu,.cuh,.c,...)\n"
        "      --max-file-size SIZE     skip bigger files (default 16MiB; 512k, 2MiB ...)\n"
        "  -j, --jobs N                 lint N files at a time (default 1)\n"
        "Rules:\n"
        "      --enable LIST, --disable LIST   rules to run, e.g. --disable GM003,GM007\n"
        "      --check-macro NAME       a macro or function whose argument counts as checked\n"
        "                               (built in: CUDA_CHECK checkCudaErrors CUDA_SAFE_CALL\n"
        "                               gpuErrchk GPUMEM_CHECK and a few more)\n"
        "      --launch-check NAME      a call that checks the last kernel launch\n"
        "      --owner-fn NAME          a function that takes ownership of pointer arguments\n"
        "      --release-fn NAME        a function that releases its pointer arguments\n"
        "      --severity RULES:LEVEL   e.g. --severity GM002:error\n"
        "      --no-notes               drop GM003 'alignment not provable' notes\n"
        "Output:\n"
        "      --format FORMAT          text (default), json or sarif (SARIF 2.1.0)\n"
        "  -o, --output FILE            write the report to FILE instead of stdout\n"
        "      --fail-on LEVEL          exit 1 when a finding is at least LEVEL: note,\n"
        "                               warning (default), error, or never\n"
        "  -q, --quiet                  no summary line and no messages about skipped files\n"
        "Config:\n"
        "      --config FILE            read options from FILE (default: ./.gpumem-lint when\n"
        "                               it exists); one 'key = value' a line, keys as the\n"
        "                               long options: disable = GM003\n"
        "      --no-config              do not read ./.gpumem-lint\n"
        "      --list-rules             print the rules and exit\n"
        "  -h, --help                   print this help and exit\n"
        "  -V, --version                print the version and exit\n"
        "\n"
        "Suppress one finding with a comment on its line or the line above:\n"
        "    // gpumem-lint: ignore[GM004]        (several: ignore[GM001,GM006]; all: ignore)\n"
        "and a whole file with '// gpumem-lint: ignore-file[GM003]'.\n"
        "\n"
        "Exit status: 0 no finding at or above --fail-on, 1 findings, 2 usage error.\n"
        "Example: gpumem lint -j 2 --format=sarif -o lint.sarif src/\n",
        out);
}

static void list_rules(void)
{
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        printf("%s  %-27s %s\n       fix: %s\n", lint_rules[r].id, lint_rules[r].name,
               lint_rules[r].brief, lint_rules[r].help);
}

/* Long options that are config keys: --KEY VALUE or --KEY=VALUE. */
static const char *const value_keys[] = {
    "format", "jobs", "exclude", "extensions", "max-file-size", "enable", "disable",
    "check-macro", "launch-check", "owner-fn", "release-fn", "severity", "fail-on", "suppress",
    NULL,
};

struct work {
    const struct lint_options *opt;
    struct lint_strlist *files;
    struct lint_file_result *res;
    size_t next;
    pthread_mutex_t lock;
    int parser_failed;
};

static void *worker(void *arg)
{
    struct work *w = arg;
    TSParser *parser = lint_parser_new();
    if (!parser) {
        pthread_mutex_lock(&w->lock);
        w->parser_failed = 1;
        pthread_mutex_unlock(&w->lock);
        return NULL;
    }
    for (;;) {
        pthread_mutex_lock(&w->lock);
        size_t i = w->next++;
        pthread_mutex_unlock(&w->lock);
        if (i >= w->files->n)
            break;
        lint_analyze_file(w->opt, parser, w->files->v[i], &w->res[i]);
        /* A parser keeps no memory of the file it parsed that matters; reset for the next. */
        ts_parser_reset(parser);
    }
    ts_parser_delete(parser);
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/** Whether the argument is option @p name; sets @p value for --name=value or the next arg. */
static int match(int argc, char **argv, int *i, const char *name, const char **value, int *err)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "gpumem lint: error: option %s needs a value (see gpumem lint --help)\n",
                name);
        *err = 1;
        return 1;
    }
    *value = argv[++*i];
    return 1;
}

static int run(int argc, char **argv, struct lint_options *o, struct lint_strlist *files,
               struct lint_strlist *compdbs, const char **output)
{
    /* Pass 1: the config file comes first so that the command line overrides it. */
    const char *config = NULL;
    int no_config = 0, err = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        if (strcmp(argv[i], "--") == 0)
            break;
        if (match(argc, argv, &i, "--config", &v, &err)) {
            if (err)
                return 2;
            config = v;
        } else if (strcmp(argv[i], "--no-config") == 0) {
            no_config = 1;
        }
    }
    if (config) {
        if (lint_config_load(o, config) != 0)
            return 2;
    } else if (!no_config && access(".gpumem-lint", F_OK) == 0) {
        if (lint_config_load(o, ".gpumem-lint") != 0)
            return 2;
    }
    /* Pass 2: everything else, in order. */
    struct lint_strlist paths = {0};
    int only_paths = 0, rc = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        const char *a = argv[i], *v = NULL;
        if (only_paths || a[0] != '-' || strcmp(a, "-") == 0) {
            lint_strlist_add(&paths, a);
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_paths = 1;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            rc = -1;
        } else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
            printf("gpumem lint %s (tree-sitter %d, CUDA grammar)\n", LINT_VERSION,
                   TREE_SITTER_LANGUAGE_VERSION);
            rc = -1;
        } else if (strcmp(a, "--list-rules") == 0) {
            list_rules();
            rc = -1;
        } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
        } else if (strcmp(a, "--no-notes") == 0) {
            o->show_notes = 0;
        } else if (strcmp(a, "--no-config") == 0) {
            /* handled in pass 1 */
        } else if (match(argc, argv, &i, "--config", &v, &err)) {
            /* handled in pass 1 */
        } else if (match(argc, argv, &i, "-p", &v, &err) ||
                   match(argc, argv, &i, "--compile-commands", &v, &err)) {
            if (!err)
                lint_strlist_add(compdbs, v);
        } else if (match(argc, argv, &i, "-o", &v, &err) ||
                   match(argc, argv, &i, "--output", &v, &err)) {
            if (!err)
                *output = v;
        } else if (strncmp(a, "-j", 2) == 0 && a[2] != '\0' && a[2] != '=') {
            if (lint_option_set(o, "jobs", a + 2, "-j") != 0)
                rc = 2;
        } else if (match(argc, argv, &i, "-j", &v, &err)) {
            if (!err && lint_option_set(o, "jobs", v, "-j") != 0)
                rc = 2;
        } else {
            int known = 0;
            for (size_t k = 0; value_keys[k] && !known; k++) {
                char name[64];
                snprintf(name, sizeof name, "--%s", value_keys[k]);
                if (match(argc, argv, &i, name, &v, &err)) {
                    known = 1;
                    if (!err && lint_option_set(o, value_keys[k], v, "command line") != 0)
                        rc = 2;
                }
            }
            if (!known) {
                fprintf(stderr,
                        "gpumem lint: error: unknown option '%s' (see gpumem lint --help)\n", a);
                rc = 2;
            }
        }
        if (err)
            rc = 2;
    }
    if (rc == 0 && paths.n == 0 && compdbs->n == 0) {
        fprintf(stderr, "gpumem lint: error: no files or folders to lint\n"
                        "usage: gpumem lint [options] PATHS...   (gpumem lint --help for more)\n");
        rc = 2;
    }
    for (size_t i = 0; rc == 0 && i < compdbs->n; i++)
        if (lint_collect_compdb(o, compdbs->v[i], files) != 0)
            rc = 2;
    for (size_t i = 0; rc == 0 && i < paths.n; i++)
        if (lint_collect_path(o, paths.v[i], files) != 0)
            rc = 2;
    lint_strlist_free(&paths);
    return rc;
}

int gpumem_lint_main(int argc, char **argv)
{
    struct lint_options o;
    struct lint_strlist files = {0}, compdbs = {0};
    const char *output = NULL;
    lint_options_init(&o);
    int rc = run(argc, argv, &o, &files, &compdbs, &output);
    if (rc != 0) {
        lint_strlist_free(&files);
        lint_strlist_free(&compdbs);
        lint_options_free(&o);
        return rc < 0 ? 0 : rc;
    }
    double t0 = now();
    struct lint_file_result *res = calloc(files.n ? files.n : 1, sizeof *res);
    struct work w = {.opt = &o, .files = &files, .res = res, .next = 0};
    int status = 0;
    if (!res) {
        fprintf(stderr, "gpumem lint: error: out of memory\n");
        status = 2;
        goto done;
    }
    pthread_mutex_init(&w.lock, NULL);
    int jobs = o.jobs;
    if ((size_t)jobs > files.n)
        jobs = files.n ? (int)files.n : 1;
    pthread_t *threads = calloc((size_t)jobs, sizeof *threads);
    int started = 0;
    for (int i = 1; threads && i < jobs; i++)
        if (pthread_create(&threads[i], NULL, worker, &w) == 0)
            started = i;
        else
            break;
    worker(&w); /* the calling thread works too */
    for (int i = 1; i <= started; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    pthread_mutex_destroy(&w.lock);
    if (w.parser_failed) {
        fprintf(stderr, "gpumem lint: error: the CUDA grammar does not fit this tree-sitter "
                        "runtime (rebuild after `npm ci` in tools/lint)\n");
        status = 2;
        goto done;
    }

    struct lint_summary sum = {0};
    int worst = -1;
    for (size_t i = 0; i < files.n; i++) {
        if (res[i].skipped) {
            sum.skipped++;
            if (!o.quiet)
                fprintf(stderr, "gpumem lint: warning: skipping %s: %s\n", res[i].path,
                        res[i].skip_reason);
            continue;
        }
        sum.files++;
        sum.bytes += res[i].bytes;
        for (size_t k = 0; k < res[i].n; k++) {
            int s = res[i].f[k].severity;
            sum.count[s]++;
            if (s > worst)
                worst = s;
        }
    }
    sum.seconds = now() - t0;
    FILE *out = stdout;
    if (output && strcmp(output, "-") != 0) {
        out = fopen(output, "w");
        if (!out) {
            fprintf(stderr, "gpumem lint: error: cannot write %s: %s\n", output, strerror(errno));
            status = 2;
            goto done;
        }
    }
    if (lint_write(&o, res, files.n, &sum, out) != 0) {
        fprintf(stderr, "gpumem lint: error: cannot write %s: %s\n",
                out == stdout ? "the report to stdout" : output, strerror(errno));
        status = 2;
    }
    if (out == stdout) {
        fflush(stdout);
    } else if (fclose(out) != 0 && status == 0) {
        fprintf(stderr, "gpumem lint: error: cannot write %s: %s\n", output, strerror(errno));
        status = 2;
    }
    if (status == 0 && o.fail_on != LINT_NEVER && worst >= o.fail_on)
        status = 1;
done:
    for (size_t i = 0; res && i < files.n; i++)
        lint_result_free(&res[i]);
    free(res);
    lint_strlist_free(&files);
    lint_strlist_free(&compdbs);
    lint_options_free(&o);
    return status;
}

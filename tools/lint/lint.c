/* `gpumem lint`: the command line, and the driver: find the units and their flags, run the
 * analyzer on each, read what it found, drop what is suppressed or in the baseline, and
 * write the report. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../cli.h"
#include "../tool.h"

#ifndef GPUMEM_LINT_CLANG
#define GPUMEM_LINT_CLANG "clang++-22"
#endif
#ifndef GPUMEM_LINT_PLUGIN_INSTALLED
#define GPUMEM_LINT_PLUGIN_INSTALLED ""
#endif
#ifndef GPUMEM_LINT_PLUGIN_BUILD
#define GPUMEM_LINT_PLUGIN_BUILD ""
#endif

static void usage(FILE *out)
{
    fputs(
        "usage: gpumem lint [options] PATHS... [-- COMPILER_FLAGS...]\n"
        "       gpumem lint [options] -p BUILD_DIR|compile_commands.json [PATHS...]\n"
        "\n"
        "Runs gpumem's checkers for the Clang Static Analyzer on CUDA, C and C++ sources.\n",
        out);
    /* The rules one a line, from the one list (rules.def): a table of two columns would be
     * read as prose by help2man and run together in the man page. */
    fputs("Rules (--list-rules says more of each):\n", out);
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        fprintf(out, "  %s  %s\n", lint_rules[r].id, lint_rules[r].desc);
    fputs(
        "Each source file (.cu .c .cc .cpp .cxx) is analyzed as a translation unit; headers\n"
        "through the units that include them. Folders are walked for --extensions.\n"
        "\n"
        "Input:\n"
        "  -p, --compile-commands P   flags from a compilation database (a build folder or its\n"
        "                             compile_commands.json; nvcc commands are translated);\n"
        "                             PATHS then pick which of its files to analyze\n"
        "  -- FLAGS...                flags for every unit (-I, -D, -std=...)\n"
        "      --exclude GLOB         skip paths matching GLOB (repeatable)\n"
        "      --extensions LIST      extensions taken from folders (.cu,.cuh,.c,.h,...)\n"
        "      --max-file-size SIZE   skip bigger files (default 16MiB)\n"
        "  -j, --jobs N               analyzer processes at once (default: the cores)\n"
        "      --timeout SECONDS      per unit (default 600)\n"
        "      --clang PATH           the clang driver (default clang++-22)\n"
        "      --analyzer-plugin PATH gpumem-analyzer.so\n"
        "      --print-commands       print each unit's analyzer command and exit\n"
        "Rules:\n"
        "      --enable LIST          run only these rules (lists add up), e.g. GM001,GM002\n"
        "      --disable LIST         do not run these rules, e.g. --disable GM003,GM007\n"
        "      --severity RULES:LEVEL e.g. --severity GM002:error\n"
        "      --launch-check NAME    a function that checks the last kernel launch\n"
        "      --owner-fn NAME        a function that takes ownership of pointer arguments\n"
        "      --release-fn NAME      a function that releases its pointer arguments\n"
        "      --noreturn-fn NAME     an error handler that does not return (ends the path)\n"
        "      --pedantic             GM003 notes where alignment is not provable\n"
        "Output:\n"
        "      --format FORMAT        text (default), json or sarif (SARIF 2.1.0)\n"
        "  -o, --output FILE          write the report to FILE instead of stdout\n"
        "      --path MODE            path notes in text: none, short (default), full\n"
        "      --fail-on LEVEL        exit 1 for findings at least LEVEL: note, warning\n"
        "                             (default), error, or never\n"
        "      --baseline FILE        report only findings not in this earlier SARIF report\n"
        "  -q, --quiet                no summary line, no progress\n"
        "Config:\n"
        "      --config FILE          read options from FILE (default: the nearest\n"
        "                             .gpumem-lint in the first path's folder or above, up\n"
        "                             to the repository root); 'key = value' lines\n"
        "      --no-config            read no config file\n"
        "      --list-rules           print the rules and exit\n"
        "  -h, --help                 print this help and exit\n"
        "  -V, --version              print the version and exit\n"
        "\n"
        "Suppress one finding with a comment on its line or the line above:\n"
        "    // gpumem-lint: ignore[GM004] reason    (several: ignore[GM001,GM006]; all: ignore)\n"
        "and a whole file with '// gpumem-lint: ignore-file[GM003]'.\n"
        "\n"
        "Exit status: 0 clean, 1 findings at or above --fail-on, 2 usage error, 3 something\n"
        "was not analyzed (a unit that does not compile, a timeout, a skipped file, no source\n"
        "found), 77 clang-22 or the analyzer plugin is not installed (cannot run here).\n"
        "Example: gpumem lint -p build --format=sarif -o lint.sarif src/\n",
        out);
}

static void list_rules(void)
{
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        printf("%s  %-26s %-32s\n       %s\n       fix: %s\n", lint_rules[r].id,
               lint_rules[r].checker, lint_rules[r].name, lint_rules[r].brief, lint_rules[r].help);
}

/* The options, one table: a row's id says what it does. An option named "--KEY" whose id is
 * OPT_KEY or OPT_KEY_SWITCH is also the config file's KEY (lint_option_set). */
enum {
    OPT_KEY,            /* --format text: the config key of the same name */
    OPT_KEY_SWITCH,     /* --quiet: the config key, "on" */
    OPT_COMPILE_COMMANDS,
    OPT_OUTPUT,
    OPT_CONFIG,
    OPT_NO_CONFIG,
    OPT_PRINT_COMMANDS,
    OPT_LIST_RULES,
    OPT_VERSION,
    OPT_NO_NOTES
};
static const cli_opt lint_opts[] = {
    {"--format", 0, CLI_VALUE, OPT_KEY},
    {"--jobs", 'j', CLI_VALUE, OPT_KEY},
    {"--exclude", 0, CLI_VALUE, OPT_KEY},
    {"--extensions", 0, CLI_VALUE, OPT_KEY},
    {"--max-file-size", 0, CLI_VALUE, OPT_KEY},
    {"--enable", 0, CLI_VALUE, OPT_KEY},
    {"--disable", 0, CLI_VALUE, OPT_KEY},
    {"--launch-check", 0, CLI_VALUE, OPT_KEY},
    {"--owner-fn", 0, CLI_VALUE, OPT_KEY},
    {"--release-fn", 0, CLI_VALUE, OPT_KEY},
    {"--noreturn-fn", 0, CLI_VALUE, OPT_KEY},
    {"--severity", 0, CLI_VALUE, OPT_KEY},
    {"--fail-on", 0, CLI_VALUE, OPT_KEY},
    {"--timeout", 0, CLI_VALUE, OPT_KEY},
    {"--path", 0, CLI_VALUE, OPT_KEY},
    {"--clang", 0, CLI_VALUE, OPT_KEY},
    {"--analyzer-plugin", 0, CLI_VALUE, OPT_KEY},
    {"--baseline", 0, CLI_VALUE, OPT_KEY},
    {"--check-macro", 0, CLI_VALUE, OPT_KEY},
    {"--quiet", 'q', CLI_FLAG, OPT_KEY_SWITCH},
    {"--pedantic", 0, CLI_FLAG, OPT_KEY_SWITCH},
    {"--compile-commands", 'p', CLI_VALUE, OPT_COMPILE_COMMANDS},
    {"--output", 'o', CLI_VALUE, OPT_OUTPUT},
    {"--config", 0, CLI_VALUE, OPT_CONFIG},
    {"--no-config", 0, CLI_FLAG, OPT_NO_CONFIG},
    {"--print-commands", 0, CLI_FLAG, OPT_PRINT_COMMANDS},
    {"--list-rules", 0, CLI_FLAG, OPT_LIST_RULES},
    {"--version", 'V', CLI_FLAG, OPT_VERSION},
    {"--no-notes", 0, CLI_FLAG, OPT_NO_NOTES},
};
static const cli_cmd lint_cmd = {"lint", lint_opts, CLI_COUNT(lint_opts), usage, CLI_OPERANDS};

struct lint_cli {
    struct lint_strlist paths, compdbs, extra;
    const char *output;
    const char *config;
    char *config_found; /* the configuration found by the search, when no --config */
    int no_config, print_commands;
};

static void lint_cli_free(struct lint_cli *c)
{
    lint_strlist_free(&c->paths);
    lint_strlist_free(&c->compdbs);
    lint_strlist_free(&c->extra);
    free(c->config_found);
}

/** What the input is ("the configuration") when -o names it (then *found is set), else NULL;
 *  nothing once *found is set. */
static const char *input_named(const char *output, const char *input, const char *what,
                               const char **found)
{
    if (!*found && input && tool_same_file(output, input))
        *found = input;
    return *found ? what : NULL;
}

/** Refuses an -o that names an input of the run: the configuration (given or found), a
 *  compilation database (a folder given to -p: its compile_commands.json), the baseline (the
 *  report would replace it with only what it did not hide), a path given, a source or a
 *  header. Compared by identity and by name (tool_same_file). */
static int output_is_input(const struct lint_cli *c, const struct lint_options *o,
                           const struct lint_units *u)
{
    if (!c->output || strcmp(c->output, "-") == 0)
        return 0;
    const char *input = NULL, *what = NULL;
    const char *config = c->config ? c->config : c->config_found;
    what = input_named(c->output, config, "the configuration", &input);
    if (!what)
        what = input_named(c->output, o->baseline, "the baseline", &input);
    char db[PATH_MAX + 32];
    for (size_t i = 0; i < c->compdbs.n && !what; i++) {
        struct stat st;
        const char *path = c->compdbs.v[i];
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(db, sizeof db, "%s/compile_commands.json", path);
            path = db;
        }
        what = input_named(c->output, path, "the compilation database", &input);
    }
    for (size_t i = 0; i < c->paths.n && !what; i++)
        what = input_named(c->output, c->paths.v[i], "a path given", &input);
    for (size_t i = 0; i < u->n && !what; i++)
        what = input_named(c->output, u->v[i].path, "a source", &input);
    for (size_t i = 0; i < u->headers.n && !what; i++)
        what = input_named(c->output, u->headers.v[i], "a header", &input);
    if (!what)
        return 0;
    fputs("gpumem lint: error: -o ", stderr);
    lint_fputs_visible(stderr, c->output);
    fputs(" is the input ", stderr);
    lint_fputs_visible(stderr, input);
    fprintf(stderr, " (%s), which the report would overwrite; name another file\n", what);
    return 1;
}

/** Pass 1: --config and --no-config, and the first path (where the config search starts).
 *  Returns -1 to go on, else the exit status (a usage error, --help). */
static int find_config_args(int argc, char **argv, struct lint_cli *c, const char **first_path)
{
    cli p;
    cli_start(&p, &lint_cmd, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_DONE;) {
        if (id == CLI_EXIT)
            return p.status;
        if (id == OPT_NO_CONFIG)
            c->no_config = 1;
        else if (id == OPT_CONFIG)
            c->config = p.value;
        else if ((id == CLI_OPERAND || id == OPT_COMPILE_COMMANDS) && !*first_path)
            *first_path = p.value;
    }
    return -1;
}

/** Pass 2: everything, in order. Returns -1 to go on, else the exit status (0 after --help,
 *  --version or --list-rules). */
static int parse_args(int argc, char **argv, struct lint_options *o, struct lint_cli *c)
{
    cli p;
    cli_start(&p, &lint_cmd, argc, argv);
    for (int id; (id = cli_next(&p)) != CLI_DONE;) {
        switch (id) {
        case CLI_EXIT:
            return p.status;
        case CLI_OPERAND:
            lint_strlist_add(&c->paths, p.value);
            break;
        case OPT_KEY:
            if (lint_option_set(o, p.opt + 2, p.value, LINT_WHERE_COMMAND_LINE) != 0)
                return LINT_EXIT_USAGE;
            break;
        case OPT_KEY_SWITCH:
            if (lint_option_set(o, p.opt + 2, "on", LINT_WHERE_COMMAND_LINE) != 0)
                return LINT_EXIT_USAGE;
            break;
        case OPT_COMPILE_COMMANDS:
            lint_strlist_add(&c->compdbs, p.value);
            break;
        case OPT_OUTPUT:
            c->output = p.value;
            break;
        case OPT_PRINT_COMMANDS:
            c->print_commands = 1;
            break;
        case OPT_LIST_RULES:
            list_rules();
            return 0;
        case OPT_VERSION:
            printf("gpumem lint %s (Clang Static Analyzer checkers; driver %s)\n", LINT_VERSION,
                   o->clang ? o->clang : GPUMEM_LINT_CLANG);
            return 0;
        case OPT_NO_NOTES:
            return cli_usage_error(&p, "--no-notes is gone: notes for alignment the analyzer "
                                       "cannot prove are off unless --pedantic asks for them");
        default: /* --config, --no-config: pass 1 */
            break;
        }
    }
    for (int k = p.next; p.after_dashes && k < argc; k++)
        lint_strlist_add(&c->extra, argv[k]);
    return -1;
}

/** The driver to run: --clang, or the one found when gpumem was built, or clang++-22 on
 *  PATH. Returns a malloc'd path, or NULL. */
static char *find_program(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0 ? strdup(name) : NULL;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *c = strchr(p, ':');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        size_t len = n + strlen(name) + 2;
        char *cand = malloc(len);
        if (!cand)
            return NULL;
        snprintf(cand, len, "%.*s/%s", (int)n, n ? p : ".", name);
        struct stat st;
        if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        p += n + (c ? 1 : 0);
    }
    return NULL;
}

static void missing_analyzer(const char *what, const char *where)
{
    fprintf(stderr,
            "gpumem lint: error: %s not found%s%s%s\n"
            "  gpumem lint runs gpumem's checkers inside Clang's static analyzer. Install clang 22\n"
            "  and its development files, then rebuild gpumem so that the plugin is built:\n"
            "    apt-get install clang-22 libclang-22-dev\n"
            "    cmake -S . -B build && cmake --build build   (or scripts/setup; scripts/build)\n"
            "  Or point at them: --clang=PATH (clang++-22), --analyzer-plugin=PATH\n"
            "  (gpumem-analyzer.so).\n",
            what, where ? " (looked for " : "", where ? where : "", where ? ")" : "");
}

static char *find_plugin(const struct lint_options *o, char *looked, size_t cap)
{
    const char *cands[] = {o->plugin, GPUMEM_LINT_PLUGIN_INSTALLED, GPUMEM_LINT_PLUGIN_BUILD};
    size_t k = 0;
    looked[0] = '\0';
    for (size_t i = 0; i < 3; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        struct stat st;
        if (stat(cands[i], &st) == 0 && S_ISREG(st.st_mode))
            return strdup(cands[i]);
        k += (size_t)snprintf(looked + k, k < cap ? cap - k : 0, "%s%s", k ? ", " : "", cands[i]);
        if (o->plugin)
            break; /* asked for by name: no fallback */
    }
    return NULL;
}

/** Whether a file-level `suppress = GLOB: RULES` entry of the config covers @p rule in
 *  @p file. */
static int config_suppressed(const struct lint_options *o, const char *file, int rule)
{
    for (size_t i = 0; i < o->file_suppress.n; i++) {
        const char *e = o->file_suppress.v[i];
        const char *colon = strrchr(e, ':');
        if (!colon)
            continue;
        char *glob = strndup(e, (size_t)(colon - e));
        if (!glob)
            continue;
        char *abs = lint_path_absolute(file);
        const char *rel = NULL;
        if (abs && o->config_dir) {
            size_t n = strlen(o->config_dir);
            if (strncmp(abs, o->config_dir, n) == 0 && abs[n] == '/')
                rel = abs + n + 1;
        }
        const char *g = glob;
        while (g[0] == '.' && g[1] == '/')
            g += 2;
        int hit = fnmatch(g, file, 0) == 0 || (abs && fnmatch(g, abs, 0) == 0) ||
                  (rel && fnmatch(g, rel, 0) == 0);
        free(glob);
        free(abs);
        if (hit) {
            if (colon[1] == '\0')
                return 1;
            size_t n = strlen(colon + 1);
            char *list = malloc(n + 3);
            if (!list)
                continue;
            snprintf(list, n + 3, "[%s]", colon + 1);
            uint32_t mask = lint_rule_mask(list, list + n + 2);
            free(list);
            if (mask & ((1u << rule) | LINT_SUPPRESS_ALL))
                return 1;
        }
    }
    return 0;
}

static int in_baseline(const struct lint_strlist *base, const char *fp)
{
    const char *key = fp;
    return base->n && bsearch(&key, base->v, base->n, sizeof *base->v, lint_str_cmp) != NULL;
}

/** Drops disabled rules, suppressed findings and those of the baseline; sets severities. */
static void filter(const struct lint_options *o, struct lint_findings *f,
                   const struct lint_strlist *baseline, struct lint_summary *sum)
{
    struct lint_suppress sup = {0};
    char *sup_file = NULL; /* a copy: the finding it came from may be dropped */
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        struct lint_finding *x = &f->v[i];
        if (!sup_file || strcmp(sup_file, x->file) != 0) {
            lint_suppress_free(&sup);
            char *text, why_buf[64];
            size_t len;
            const char *why;
            if (lint_read_file(x->file, (size_t)256 << 20, &text, &len, &why, why_buf,
                               sizeof why_buf) == 0) {
                lint_suppress_parse(text, len, &sup);
                free(text);
            }
            free(sup_file);
            sup_file = strdup(x->file);
        }
        int drop = !o->enabled[x->rule] || lint_suppressed(&sup, x->rule, x->line) ||
                   config_suppressed(o, x->file, x->rule);
        if (!drop && o->exclude.n) {
            /* A finding in an excluded header (third_party/...) seen through a unit. */
            char *abs = lint_path_absolute(x->file);
            drop = abs && lint_excluded(o, abs);
            free(abs);
        }
        if (!drop && x->severity == LINT_NOTE && !o->pedantic)
            drop = 1;
        if (!drop && in_baseline(baseline, x->fingerprint)) {
            drop = 1;
            sum->baseline_hidden++;
        }
        if (drop) {
            lint_finding_free(x);
            continue;
        }
        if (x->severity != LINT_NOTE)
            x->severity = o->severity[x->rule];
        sum->count[x->severity]++;
        f->v[k++] = *x;
    }
    f->n = k;
    free(sup_file);
    lint_suppress_free(&sup);
}

/** With -p and PATHS: keep the database's units that are those files or under those
 *  folders. */
static void select_units(struct lint_units *u, const struct lint_strlist *paths)
{
    struct lint_strlist abs = {0};
    for (size_t i = 0; i < paths->n; i++) {
        char *a = lint_path_absolute(paths->v[i]);
        if (a)
            lint_strlist_add(&abs, a);
        free(a);
    }
    size_t k = 0;
    for (size_t i = 0; i < u->n; i++) {
        int keep = 0;
        for (size_t j = 0; j < abs.n && !keep; j++) {
            size_t n = strlen(abs.v[j]);
            keep = strncmp(u->v[i].abs, abs.v[j], n) == 0 &&
                   (u->v[i].abs[n] == '\0' || u->v[i].abs[n] == '/' || strcmp(abs.v[j], "/") == 0);
        }
        if (keep) {
            u->v[k++] = u->v[i];
        } else {
            lint_unit_free(&u->v[i]);
        }
    }
    u->n = k;
    lint_strlist_free(&abs);
}

/** Marks units that cannot be analyzed: missing, not regular files, too big. */
static void check_units(const struct lint_options *o, struct lint_units *u)
{
    for (size_t i = 0; i < u->n; i++) {
        struct stat st;
        char why[160];
        if (stat(u->v[i].abs, &st) != 0)
            snprintf(why, sizeof why, "%s", strerror(errno));
        else if (!S_ISREG(st.st_mode))
            snprintf(why, sizeof why, "not a regular file (a FIFO, socket or device)");
        else if ((unsigned long long)st.st_size > o->max_file_size)
            snprintf(why, sizeof why, "too big (%lld bytes; the limit is %zu, see --max-file-size)",
                     (long long)st.st_size, o->max_file_size);
        else
            continue;
        u->v[i].skip = strdup(why);
    }
}

/* What makes a unit compile, by clang's first error, where the cause is known: one row per
 * cause, the first row whose text is in the error wins. */
static const struct {
    const char *error, *fix;
} parse_fixes[] = {
    {"' file not found", "the header is not under the paths given: add its folder with -I after "
                         "--"},
    {"'cudaThread", "CUDA 13 removed the cudaThread* calls: port them, or map them with "
                    "-DcudaThreadSynchronize=cudaDeviceSynchronize (and the like) after --"},
    {"texture<", "texture references were removed in CUDA 12 (nvcc rejects them too): port to "
                 "texture objects"},
    {"cudaBindTexture", "texture references were removed in CUDA 12 (nvcc rejects them too): "
                        "port to texture objects"},
    {"reference to 'byte' is ambiguous", "C++17's std::byte meets the program's own byte under "
                                         "`using namespace std`: pass the standard its build "
                                         "uses after --, such as -std=c++14"},
};

/** "gpumem lint: warning: " WHAT TEXT on stderr, with TEXT's control characters shown as
 *  escapes: a file name holding a newline must not make a line of its own. */
static void warn_visible(const char *what, const char *text)
{
    fprintf(stderr, "gpumem lint: warning: %s", what);
    lint_fputs_visible(stderr, text);
    fputc('\n', stderr);
}

/** Says which `.c` units are analyzed as CUDA, and why (hints.c). */
static void note_as_cuda(const struct lint_options *o, const struct lint_units *u)
{
    for (size_t i = 0; i < u->n && !o->quiet; i++) {
        if (!u->v[i].as_cuda)
            continue;
        fputs("gpumem lint: note: ", stderr);
        lint_fputs_visible(stderr, u->v[i].path);
        fputs(": analyzed as CUDA, as nvcc -x cu compiles it: ", stderr);
        lint_fputs_visible(stderr, u->v[i].as_cuda);
        fputs(" (with -p, the compilation database gives each file's language)\n", stderr);
    }
}

/** The name quoted after @p phrase in clang's @p error ("unknown type name 'dfloat'"): its
 *  start and length, or NULL. */
static const char *quoted_after(const char *error, const char *phrase, size_t *len)
{
    const char *p = strstr(error, phrase);
    if (!p)
        return NULL;
    p += strlen(phrase);
    const char *e = strchr(p, '\'');
    if (!e || e == p)
        return NULL;
    *len = (size_t)(e - p);
    return p;
}

/** Whether clang's first error ("FILE:LINE:COL: error: ...") is at an #error directive. */
static int at_error_directive(const char *error)
{
    const char *colon = strstr(error, ": error: ");
    if (!colon)
        return 0;
    const char *p = colon;
    int seps = 0;
    while (p > error && seps < 2)
        if (*--p == ':')
            seps++;
    if (seps < 2)
        return 0;
    char file[4096];
    snprintf(file, sizeof file, "%.*s", (int)(p - error), error);
    unsigned long line = strtoul(p + 1, NULL, 10);
    char *text, why_buf[64];
    size_t len;
    const char *why;
    if (!line || lint_read_file(file, (size_t)64 << 20, &text, &len, &why, why_buf,
                                sizeof why_buf) != 0)
        return 0;
    int hit = lint_error_directive(text, len, (uint32_t)line);
    free(text);
    return hit;
}

/** The first source of the walked tree (headers, then units) that defines NAME only under a
 *  condition: "FILE:LINE" and the condition into @p g. */
static int find_guard(const struct lint_units *u, const char *name, size_t nlen, char *where,
                      size_t cap, struct lint_define_guard *g)
{
    size_t n = u->headers.n + u->n;
    for (size_t i = 0; i < n && i < 4096; i++) {
        const char *file = i < u->headers.n ? u->headers.v[i] : u->v[i - u->headers.n].abs;
        char *text, why_buf[64];
        size_t len;
        const char *why;
        if (lint_read_file(file, (size_t)16 << 20, &text, &len, &why, why_buf,
                           sizeof why_buf) != 0)
            continue;
        int hit = lint_define_guard(text, len, name, nlen, g);
        free(text);
        if (hit) {
            char *shown = lint_path_display(file);
            snprintf(where, cap, "%s:%u", shown ? shown : file, (unsigned)g->line);
            free(shown);
            return 1;
        }
    }
    return 0;
}

/** The macro a condition tests for being defined (`#ifdef X`; `#if defined(X)`, the first
 *  such; else `#elif X`'s first name): its start and length, or NULL (`#ifndef`, none). */
static const char *cond_macro(const char *cond, size_t *len)
{
    const char *p = cond + 1;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "ifndef", 6) == 0)
        return NULL;
    while (*p && *p != ' ' && *p != '\t' && *p != '(')
        p++; /* the directive's word */
    const char *first = NULL;
    size_t first_len = 0;
    for (int after_defined = 0;;) {
        while (*p && !(isalpha((unsigned char)*p) || *p == '_'))
            p++;
        const char *w = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (p == w)
            break;
        if ((size_t)(p - w) == 7 && strncmp(w, "defined", 7) == 0) {
            after_defined = 1;
            continue;
        }
        if (after_defined || strncmp(cond + 1, "ifdef", 5) == 0) {
            *len = (size_t)(p - w);
            return w;
        }
        if (!first) {
            first = w;
            first_len = (size_t)(p - w);
        }
    }
    *len = first_len;
    return first;
}

/** What to do about a unit that stops for a define its build gives, when the error shows one:
 *  an #error, or a name the build may define (or that is defined only under an #if). */
static void define_hint(const struct lint_units *u, const char *error, char *out, size_t cap)
{
    static const char db[] = "or give the build's compile_commands.json with -p";
    out[0] = '\0';
    size_t nlen = 0, mlen = 0;
    const char *name = quoted_after(error, "use of undeclared identifier '", &nlen);
    if (!name)
        name = quoted_after(error, "unknown type name '", &nlen);
    struct lint_define_guard g;
    char where[4200];
    if (at_error_directive(error)) {
        snprintf(out, cap, "an #error that a define of its build avoids: pass that define after "
                           "-- (-DNAME for a macro the message names), %s", db);
    } else if (name && find_guard(u, name, nlen, where, sizeof where, &g)) {
        const char *macro = g.in_else ? NULL : cond_macro(g.cond, &mlen);
        char pass[300];
        if (macro)
            snprintf(pass, sizeof pass, "pass -D%.*s after -- if its build defines it", (int)mlen,
                     macro);
        else
            snprintf(pass, sizeof pass, "pass the defines its build gives after --");
        int n = snprintf(out, cap, "%.*s is defined at %s only %s `%s` (line %u): %s, %s",
                         (int)nlen, name, where, g.in_else ? "in the #else of" : "under", g.cond,
                         (unsigned)g.cond_line, pass, db);
        if (n < 0)
            out[0] = '\0'; /* cut short (a very long path) is still a useful hint */
    } else if (name) {
        snprintf(out, cap, "if its build defines %.*s, pass -D%.*s=VALUE after --, %s", (int)nlen,
                 name, (int)nlen, name, db);
    }
}

/** Adds "PATH: not analyzed: ERROR", and what to do when the error says. */
static void add_not_analyzed(struct lint_strlist *problems, const struct lint_units *u,
                             const char *path, const char *error)
{
    const char *fix = NULL;
    for (size_t k = 0; error && !fix && k < sizeof parse_fixes / sizeof parse_fixes[0]; k++)
        if (strstr(error, parse_fixes[k].error))
            fix = parse_fixes[k].fix;
    char hint[600];
    if (error && !fix) {
        define_hint(u, error, hint, sizeof hint);
        fix = hint[0] ? hint : NULL;
    }
    if (!error)
        error = "unknown failure";
    size_t n = strlen(path) + strlen(error) + (fix ? strlen(fix) : 0) + 40;
    char *m = malloc(n);
    if (!m)
        return;
    snprintf(m, n, "%s: not analyzed: %s%s%s%s", path, error, fix ? " (" : "", fix ? fix : "",
             fix ? ")" : "");
    lint_strlist_add(problems, m);
    free(m);
}

static int load_baseline(const char *path, struct lint_strlist *out)
{
    char *text, why_buf[256];
    size_t len;
    const char *why;
    if (lint_read_file(path, (size_t)1 << 30, &text, &len, &why, why_buf, sizeof why_buf) != 0) {
        fprintf(stderr, "gpumem lint: error: cannot read baseline %s: %s (name an earlier "
                        "report written with --format=sarif)\n",
                path, why);
        return -1;
    }
    char msg[256];
    int rc = lint_baseline_parse(text, len, out, msg, sizeof msg);
    free(text);
    if (rc != 0) {
        fprintf(stderr, "gpumem lint: error: baseline %s: %s (name an earlier report written "
                        "with --format=sarif)\n",
                path, msg);
        return -1;
    }
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, lint_str_cmp);
    return 0;
}

/* What a step of lint_main returns to let the run go on. Any other value ends it: -1 when
 * all is done and the exit status is 0 (--help, --print-commands), else the exit status. */
#define LINT_GO_ON (-2)

/** The options: the config file (named, or found from the first path), then the command
 *  line; then the baseline they name. */
static int read_options(int argc, char **argv, struct lint_options *o, struct lint_cli *c,
                        struct lint_strlist *baseline)
{
    const char *first_path = NULL;
    int rc = find_config_args(argc, argv, c, &first_path);
    if (rc >= 0)
        return rc == 0 ? -1 : rc;
    if (c->config) {
        if (lint_config_load(o, c->config) != 0)
            return LINT_EXIT_USAGE;
    } else if (!c->no_config) {
        c->config_found = lint_config_find(first_path);
        if (c->config_found && lint_config_load(o, c->config_found) != 0)
            return LINT_EXIT_USAGE;
    }
    rc = parse_args(argc, argv, o, c);
    if (rc >= 0)
        return rc == 0 ? -1 : rc;
    if (c->paths.n == 0 && c->compdbs.n == 0) {
        fprintf(stderr, "gpumem lint: error: no files or folders to analyze (gpumem lint [options] "
                        "PATHS... [-- FLAGS])\n"
                        "(`gpumem lint --help` lists the options)\n");
        return LINT_EXIT_USAGE;
    }
    if (o->baseline && load_baseline(o->baseline, baseline) != 0)
        return LINT_EXIT_USAGE;
    return LINT_GO_ON;
}

/** The units of the compilation databases (those under the paths given, when paths are
 *  given too), or else of the paths, with the flags derived from the tree. */
static int collect_units(const struct lint_options *o, const struct lint_cli *c,
                         struct lint_units *u)
{
    for (size_t i = 0; i < c->compdbs.n; i++)
        if (lint_collect_compdb(o, c->compdbs.v[i], u) != 0)
            return LINT_EXIT_USAGE;
    if (c->compdbs.n) {
        if (c->paths.n) {
            for (size_t i = 0; i < c->paths.n; i++) {
                struct stat st;
                if (stat(c->paths.v[i], &st) != 0) {
                    fprintf(stderr, "gpumem lint: error: %s: %s\n", c->paths.v[i],
                            strerror(errno));
                    return LINT_EXIT_USAGE;
                }
            }
            select_units(u, &c->paths);
        }
    } else {
        for (size_t i = 0; i < c->paths.n; i++)
            if (lint_collect_path(o, c->paths.v[i], u) != 0)
                return LINT_EXIT_USAGE;
        lint_derive_flags(u, &c->extra);
        note_as_cuda(o, u);
    }
    return LINT_GO_ON;
}

/** Says that no source was found, and what was not analyzed. */
static int no_units(const struct lint_options *o, const struct lint_cli *c,
                    const struct lint_strlist *problems)
{
    fprintf(stderr, "gpumem lint: error: no source file found in %s%s (looked for",
            c->compdbs.n ? "the compilation database" : "the paths given",
            c->compdbs.n && c->paths.n ? " under the paths given" : "");
    for (size_t i = 0; i < o->extensions.n; i++)
        fprintf(stderr, " %s", o->extensions.v[i]);
    fprintf(stderr, "%s); check the paths, --exclude and --extensions\n",
            o->exclude.n ? ", less --exclude" : "");
    for (size_t i = 0; i < problems->n; i++)
        warn_visible("not analyzed: ", problems->v[i]);
    return LINT_EXIT_INCOMPLETE;
}

/** The analyzer's driver and plugin into @p run, and the flags after `--`. */
static int find_analyzer(const struct lint_options *o, const struct lint_cli *c,
                         struct lint_run *run)
{
    char *clang = find_program(o->clang ? o->clang : GPUMEM_LINT_CLANG);
    if (!clang && !o->clang)
        clang = find_program("clang++-22");
    if (!clang) {
        missing_analyzer(o->clang ? o->clang : "clang++-22", NULL);
        return LINT_EXIT_NO_ANALYZER;
    }
    run->clang = clang;
    char looked[2048];
    char *plugin = find_plugin(o, looked, sizeof looked);
    if (!plugin) {
        missing_analyzer("the gpumem analyzer plugin (gpumem-analyzer.so)", looked[0] ? looked : NULL);
        return LINT_EXIT_NO_ANALYZER;
    }
    run->plugin = plugin;
    for (size_t i = 0; i < c->extra.n; i++)
        lint_strlist_add(&run->extra, c->extra.v[i]);
    return LINT_GO_ON;
}

/** --print-commands: the analyzer's command line of each unit. */
static void print_commands(const struct lint_options *o, const struct lint_run *run,
                           const struct lint_units *u)
{
    for (size_t i = 0; i < u->n; i++) {
        struct lint_strlist a = {0};
        lint_unit_argv(o, run, &u->v[i], "UNIT.sarif", NULL, NULL, &a);
        for (size_t k = 0; k < a.n; k++)
            printf("%s%s", k ? " " : "", a.v[k]);
        printf("\n");
        lint_strlist_free(&a);
    }
}

/** Runs the analyzer on every unit; its findings go to @p f, what was skipped or not
 *  analyzed (and why) to @p problems. */
static int analyze(const struct lint_options *o, const struct lint_run *run,
                   const struct lint_units *u, struct lint_findings *f,
                   struct lint_strlist *problems, struct lint_unit_result **res_out)
{
    struct lint_unit_result *res = calloc(u->n, sizeof *res);
    *res_out = res;
    if (!res || lint_run_units(o, run, u, res) != 0)
        return LINT_EXIT_USAGE;
    int plugin_failed = 0;
    for (size_t i = 0; i < u->n; i++) {
        char msg[512];
        if (u->v[i].skip) {
            snprintf(msg, sizeof msg, "%s: %s", u->v[i].path, u->v[i].skip);
            lint_strlist_add(problems, msg);
            continue;
        }
        if (res[i].status == 2)
            plugin_failed = 1;
        if (res[i].sarif && lint_sarif_parse(res[i].sarif, res[i].sarif_len, i, f, msg,
                                             sizeof msg) != 0 && res[i].status == 0) {
            res[i].status = 1;
            res[i].error = strdup(msg);
        }
        if (res[i].status)
            add_not_analyzed(problems, u, u->v[i].path, res[i].error);
    }
    if (plugin_failed) {
        fprintf(stderr, "gpumem lint: error: clang could not load the analyzer plugin %s "
                        "(built for another clang? rebuild gpumem with clang 22: "
                        "apt-get install clang-22 libclang-22-dev)\n",
                run->plugin);
        return LINT_EXIT_NO_ANALYZER;
    }
    return LINT_GO_ON;
}

/** Writes the report to --output or stdout; LINT_EXIT_OK, or LINT_EXIT_USAGE after saying
 *  what could not be written. */
static int write_report(const struct lint_options *o, const struct lint_cli *c,
                        const struct lint_findings *f, const struct lint_strlist *problems,
                        const struct lint_summary *sum)
{
    FILE *out = stdout;
    if (c->output && strcmp(c->output, "-") != 0) {
        out = fopen(c->output, "w");
        if (!out) {
            fprintf(stderr, "gpumem lint: error: cannot write %s: %s\n", c->output,
                    strerror(errno));
            return LINT_EXIT_USAGE;
        }
    }
    int status = LINT_EXIT_OK;
    if (lint_write(o, f, problems, sum, out) != 0) {
        fprintf(stderr, "gpumem lint: error: cannot write %s: %s\n",
                out == stdout ? "the report to stdout" : c->output, strerror(errno));
        status = LINT_EXIT_USAGE;
    }
    if (out == stdout) {
        if (fflush(stdout) != 0 && status == LINT_EXIT_OK) {
            fprintf(stderr, "gpumem lint: error: cannot write the report to stdout: %s\n",
                    strerror(errno));
            status = LINT_EXIT_USAGE;
        }
    } else if (fclose(out) != 0 && status == LINT_EXIT_OK) {
        fprintf(stderr, "gpumem lint: error: cannot write %s: %s\n", c->output, strerror(errno));
        status = LINT_EXIT_USAGE;
    }
    return status;
}

/** The exit status of a run whose report was written. */
static int exit_status(const struct lint_options *o, const struct lint_strlist *problems,
                       const struct lint_summary *sum)
{
    if (problems->n)
        return LINT_EXIT_INCOMPLETE;
    int worst = -1;
    for (int s = LINT_NOTE; s <= LINT_ERROR; s++)
        if (sum->count[s])
            worst = s;
    if (o->fail_on != LINT_NEVER && worst >= o->fail_on)
        return LINT_EXIT_FINDINGS;
    return LINT_EXIT_OK;
}

static int lint_main(int argc, char **argv, struct lint_options *o, struct lint_cli *c,
                     struct lint_units *u, struct lint_findings *f, struct lint_strlist *problems,
                     struct lint_strlist *baseline, struct lint_unit_result **res_out,
                     struct lint_run *run)
{
    int rc = read_options(argc, argv, o, c, baseline);
    if (rc == LINT_GO_ON)
        rc = collect_units(o, c, u);
    if (rc != LINT_GO_ON)
        return rc;
    for (size_t i = 0; i < u->skipped.n; i++)
        lint_strlist_add(problems, u->skipped.v[i]);
    if (u->n == 0)
        return no_units(o, c, problems);
    check_units(o, u);
    if (output_is_input(c, o, u))
        return LINT_EXIT_USAGE;
    if ((rc = find_analyzer(o, c, run)) != LINT_GO_ON)
        return rc;
    if (c->print_commands) {
        print_commands(o, run, u);
        return -1;
    }
    run->progress = !o->quiet && isatty(2);
    double t0 = lint_now();
    if ((rc = analyze(o, run, u, f, problems, res_out)) != LINT_GO_ON)
        return rc;
    struct lint_summary sum = {0};
    sum.units = u->n;
    lint_findings_finish(f, &sum);
    filter(o, f, baseline, &sum);
    sum.seconds = lint_now() - t0;
    /* Even with -q: what was not analyzed is why the exit status says 3. */
    for (size_t i = 0; i < problems->n; i++)
        warn_visible("", problems->v[i]);
    rc = write_report(o, c, f, problems, &sum);
    return rc != LINT_EXIT_OK ? rc : exit_status(o, problems, &sum);
}

int gpumem_lint_main(int argc, char **argv)
{
    struct lint_options o;
    struct lint_cli c = {0};
    struct lint_units u = {0};
    struct lint_findings f = {0};
    struct lint_strlist problems = {0}, baseline = {0};
    struct lint_unit_result *res = NULL;
    struct lint_run run = {0};
    lint_options_init(&o);
    int rc = lint_main(argc, argv, &o, &c, &u, &f, &problems, &baseline, &res, &run);
    for (size_t i = 0; res && i < u.n; i++) {
        free(res[i].error);
        free(res[i].sarif);
    }
    free(res);
    free((char *)run.clang);
    free((char *)run.plugin);
    lint_strlist_free(&run.extra);
    lint_findings_free(&f);
    lint_units_free(&u);
    lint_strlist_free(&problems);
    lint_strlist_free(&baseline);
    lint_cli_free(&c);
    lint_options_free(&o);
    fflush(stdout);
    return rc < 0 ? 0 : rc;
}

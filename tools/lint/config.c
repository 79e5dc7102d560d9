/* Options: defaults, the rule table, and the config file. The config file is a list of
 * `key = value` lines (format in docs/lint.md); every key is also a command-line option, so
 * the two never drift apart. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include "../cli.h" /* cli_suggest */

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GPUMEM_FAMILY_MEMORY 1
#define GPUMEM_FAMILY_OWN 0
const struct lint_rule_info lint_rules[LINT_RULE_COUNT] = {
#define GPUMEM_RULE(id, checker, family, name, desc, brief, help)                                \
    {#id, "gpumem." #checker, name, desc, brief, help, GPUMEM_FAMILY_##family},
#include "analyzer/rules.def"
#undef GPUMEM_RULE
};

void lint_options_init(struct lint_options *o)
{
    memset(o, 0, sizeof *o);
    o->format = LINT_FORMAT_TEXT;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    o->jobs = cores < 1 ? 1 : cores > 256 ? 256 : (int)cores;
    o->fail_on = LINT_WARNING;
    o->path_mode = LINT_PATH_SHORT;
    o->timeout = 600;
    o->max_file_size = 16u << 20;
    for (int i = 0; i < LINT_RULE_COUNT; i++) {
        o->enabled[i] = 1;
        o->severity[i] = LINT_WARNING;
    }
    lint_strlist_add_split(&o->extensions, ".cu .cuh .c .h .cc .cpp .cxx .hpp");
}

void lint_options_free(struct lint_options *o)
{
    lint_strlist_free(&o->launch_checks);
    lint_strlist_free(&o->owner_fns);
    lint_strlist_free(&o->release_fns);
    lint_strlist_free(&o->noreturn_fns);
    lint_strlist_free(&o->exclude);
    lint_strlist_free(&o->file_suppress);
    lint_strlist_free(&o->extensions);
    free(o->clang);
    free(o->plugin);
    free(o->baseline);
    free(o->config_dir);
    memset(o, 0, sizeof *o);
}

int lint_rule_by_checker(const char *checker)
{
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        if (strcmp(lint_rules[r].checker, checker) == 0)
            return r;
    return -1;
}

int lint_rule_parse(const char *s, size_t len)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        if (strcmp(lint_rules[r].checker, buf) == 0 || strcmp(lint_rules[r].name, buf) == 0 ||
            strcmp(lint_rules[r].checker + 7, buf) == 0)
            return r;
    const char *d = buf;
    if ((d[0] == 'G' || d[0] == 'g') && (d[1] == 'M' || d[1] == 'm'))
        d += 2;
    if (!*d)
        return -1;
    for (const char *p = d; *p; p++)
        if (!isdigit((unsigned char)*p))
            return -1;
    long v = strtol(d, NULL, 10);
    return v >= 1 && v <= LINT_RULE_COUNT ? (int)v - 1 : -1;
}

int lint_severity_parse(const char *s)
{
    static const char *const names[] = {"note", "warning", "error", "never"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    if (strcmp(s, "none") == 0)
        return LINT_NEVER;
    return -1;
}

const char *lint_severity_name(int sev)
{
    switch (sev) {
    case LINT_NOTE: return "note";
    case LINT_ERROR: return "error";
    default: return "warning";
    }
}

int lint_size_parse(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned long long mul = 1;
    if (*end) {
        char u = (char)tolower((unsigned char)*end);
        mul = u == 'k' ? 1ull << 10 : u == 'm' ? 1ull << 20 : u == 'g' ? 1ull << 30 : 0;
        if (!mul)
            return -1;
        end++;
        if (strcmp(end, "") != 0 && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0 &&
            strcmp(end, "ib") != 0 && strcmp(end, "b") != 0)
            return -1;
    }
    if (v > (unsigned long long)SIZE_MAX / mul)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/** Sets rules from "GM001,GM004" to @p v; returns -1 when one is not a rule. */
static int set_rules(int *flags, const char *list, int v)
{
    const char *item;
    size_t len;
    int any = 0;
    while ((item = lint_list_next(&list, &len)) != NULL) {
        int r = lint_rule_parse(item, len);
        if (r < 0)
            return -1;
        flags[r] = v;
        any = 1;
    }
    return any ? 0 : -1;
}

static int parse_bool(const char *v)
{
    if (strcmp(v, "on") == 0 || strcmp(v, "1") == 0 || strcmp(v, "true") == 0 ||
        strcmp(v, "yes") == 0)
        return 1;
    if (strcmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcmp(v, "false") == 0 ||
        strcmp(v, "no") == 0)
        return 0;
    return -1;
}

static int parse_int(const char *v, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long j = strtol(v, &end, 10);
    if (errno || end == v || *end || j < lo || j > hi)
        return -1;
    *out = (int)j;
    return 0;
}

static int set_string(char **dst, const char *v)
{
    char *d = strdup(v);
    if (!d)
        return -1;
    free(*dst);
    *dst = d;
    return 0;
}

/** On the command line an option is --KEY; in a config file, KEY. */
static const char *option_dashes(const char *where)
{
    return strcmp(where, LINT_WHERE_COMMAND_LINE) == 0 ? "--" : "";
}

/** A bad option, in the words every gpumem command uses: "gpumem lint: error: WHAT", with
 *  "FILE:LINE: " before it for a config file's line, and where the options are described
 *  after it for the command line. */
__attribute__((format(printf, 2, 3))) static void option_error(const char *where,
                                                              const char *fmt, ...)
{
    int cmdline = strcmp(where, LINT_WHERE_COMMAND_LINE) == 0;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gpumem lint: error: %s%s", cmdline ? "" : where, cmdline ? "" : ": ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(cmdline ? "\n(`gpumem lint --help` lists the options)\n" : "\n", stderr);
}

/* What a setter returns besides 0 (set) and -1 (not set: it said why, or memory ran out):
 * the value is not one the option takes, or it is not a list of rules. lint_option_set says
 * which, in one wording for every option. */
enum { SET_BAD_VALUE = 1, SET_BAD_RULES = 2 };

struct option_row;
typedef int option_setter(struct lint_options *o, const struct option_row *row,
                          const char *value, const char *where);

/** One option, a key of the config file and a long option of the command line (--KEY): how
 *  its value is set and, for the message about a bad one, what it takes. */
struct option_row {
    const char *key;
    option_setter *set;
    size_t field;             /**< offsetof(struct lint_options, what it sets) */
    long lo, hi;              /**< a number's range; enable and disable: the flag set (lo) */
    const char *const *words; /**< a choice's words, by value, NULL-ended */
    const char *takes;        /**< what it takes, for the message about a bad value */
};
#define OPTION_FIELD(o, row, type) ((type *)(void *)((char *)(o) + (row)->field))

static int set_rule_flags(struct lint_options *o, const struct option_row *row,
                          const char *value, const char *where)
{
    /* enable names the rules to run: the first list of a source (the config file, then the
     * command line, which wins) replaces the selection, and more lists of it add to it. */
    int source = strcmp(where, LINT_WHERE_COMMAND_LINE) == 0 ? 2 : 1;
    if (row->lo == 1 && o->enable_source != source) {
        for (int i = 0; i < LINT_RULE_COUNT; i++)
            o->enabled[i] = 0;
        o->enable_source = source;
    }
    return set_rules(OPTION_FIELD(o, row, int), value, (int)row->lo) != 0 ? SET_BAD_RULES : 0;
}

/** check-macro: the analyzer expands macros and sees the comparison inside a check macro, so
 *  the list of macro names is no longer needed; old configs keep working. */
static int set_nothing(struct lint_options *o, const struct option_row *row, const char *value,
                       const char *where)
{
    (void)o, (void)row, (void)value;
    fprintf(stderr,
            "gpumem lint: warning: %s: 'check-macro' has no effect (the analyzer expands "
            "macros and sees the check inside); remove it\n",
            where);
    return 0;
}

static int set_list(struct lint_options *o, const struct option_row *row, const char *value,
                    const char *where)
{
    (void)where;
    lint_strlist_add_split(OPTION_FIELD(o, row, struct lint_strlist), value);
    return 0;
}

static int set_extensions(struct lint_options *o, const struct option_row *row,
                          const char *value, const char *where)
{
    (void)row;
    lint_strlist_free(&o->extensions);
    lint_strlist_add_split(&o->extensions, value);
    for (size_t i = 0; i < o->extensions.n; i++)
        if (o->extensions.v[i][0] != '.') {
            option_error(where, "%sextensions: '%s' does not start with '.' (use e.g. "
                                ".cu,.cpp)",
                         option_dashes(where), o->extensions.v[i]);
            return -1;
        }
    return 0;
}

/** "GLOB: GM001, GM004" as "GLOB:GM001,GM004", the rules as their ids (malloc'd), or NULL
 *  (*@p rc set: SET_BAD_RULES, or -1 when memory ran out). */
static char *suppress_entry(const char *value, const char *colon, int *rc)
{
    int rules[LINT_RULE_COUNT] = {0};
    const char *list = colon + 1;
    while (isspace((unsigned char)*list))
        list++;
    if (*list && set_rules(rules, list, 1) != 0) {
        *rc = SET_BAD_RULES;
        return NULL;
    }
    size_t glen = (size_t)(colon - value);
    while (glen && isspace((unsigned char)value[glen - 1]))
        glen--;
    size_t cap = glen + 8 * LINT_RULE_COUNT + 2;
    char *buf = malloc(cap);
    if (!buf) {
        *rc = -1;
        return NULL;
    }
    size_t k = (size_t)snprintf(buf, cap, "%.*s:", (int)glen, value);
    int first = 1;
    for (int r = 0; r < LINT_RULE_COUNT; r++)
        if (rules[r]) {
            k += (size_t)snprintf(buf + k, cap - k, "%s%s", first ? "" : ",", lint_rules[r].id);
            first = 0;
        }
    return buf;
}

static int set_suppress(struct lint_options *o, const struct option_row *row, const char *value,
                        const char *where)
{
    (void)where;
    const char *colon = strrchr(value, ':');
    char *buf;
    int rc = 0;
    if (colon) {
        buf = suppress_entry(value, colon, &rc);
    } else {
        size_t n = strlen(value);
        buf = malloc(n + 2);
        if (buf)
            snprintf(buf, n + 2, "%s:", value);
        else
            rc = -1;
    }
    if (!buf)
        return rc;
    lint_strlist_add(OPTION_FIELD(o, row, struct lint_strlist), buf);
    free(buf);
    return 0;
}

/** "GM002: error" */
static int set_severity(struct lint_options *o, const struct option_row *row, const char *value,
                        const char *where)
{
    (void)where;
    const char *colon = strrchr(value, ':');
    if (!colon)
        return SET_BAD_VALUE;
    char *rules = strdup(value), sev[32];
    if (!rules)
        return -1;
    rules[colon - value] = '\0';
    snprintf(sev, sizeof sev, "%s", colon + 1);
    int s = lint_severity_parse(trim(sev));
    int rc = s < 0 || s == LINT_NEVER ? -2 : set_rules(OPTION_FIELD(o, row, int), rules, s);
    free(rules);
    if (rc == -2)
        return SET_BAD_VALUE;
    return rc != 0 ? SET_BAD_RULES : 0;
}

static int set_level(struct lint_options *o, const struct option_row *row, const char *value,
                     const char *where)
{
    (void)where;
    int s = lint_severity_parse(value);
    if (s < 0)
        return SET_BAD_VALUE;
    *OPTION_FIELD(o, row, int) = s;
    return 0;
}

static int set_size(struct lint_options *o, const struct option_row *row, const char *value,
                    const char *where)
{
    (void)where;
    return lint_size_parse(value, OPTION_FIELD(o, row, size_t)) != 0 ? SET_BAD_VALUE : 0;
}

static int set_switch(struct lint_options *o, const struct option_row *row, const char *value,
                      const char *where)
{
    (void)where;
    int b = parse_bool(value);
    if (b < 0)
        return SET_BAD_VALUE;
    *OPTION_FIELD(o, row, int) = b;
    return 0;
}

static int set_number(struct lint_options *o, const struct option_row *row, const char *value,
                      const char *where)
{
    (void)where;
    return parse_int(value, row->lo, row->hi, OPTION_FIELD(o, row, int)) != 0 ? SET_BAD_VALUE
                                                                              : 0;
}

static int set_choice(struct lint_options *o, const struct option_row *row, const char *value,
                      const char *where)
{
    (void)where;
    for (int i = 0; row->words[i]; i++)
        if (strcmp(value, row->words[i]) == 0) {
            *OPTION_FIELD(o, row, int) = i;
            return 0;
        }
    return SET_BAD_VALUE;
}

static int set_text(struct lint_options *o, const struct option_row *row, const char *value,
                    const char *where)
{
    (void)where;
    return set_string(OPTION_FIELD(o, row, char *), value);
}

/* The words of enum lint_format and enum lint_path_mode, by value. */
static const char *const format_words[] = {"text", "json", "sarif", NULL};
static const char *const path_words[] = {"none", "short", "full", NULL};

#define FIELD(name) offsetof(struct lint_options, name)
/* In the order "did you mean" weighs them. */
static const struct option_row option_rows[] = {
    {"format", set_choice, FIELD(format), 0, 0, format_words, "text, json or sarif"},
    {"jobs", set_number, FIELD(jobs), 1, 256, NULL, "a number from 1 to 256"},
    {"exclude", set_list, FIELD(exclude), 0, 0, NULL, NULL},
    {"extensions", set_extensions, FIELD(extensions), 0, 0, NULL, NULL},
    {"max-file-size", set_size, FIELD(max_file_size), 0, 0, NULL,
     "a size such as 1000, 512k or 16MiB"},
    {"enable", set_rule_flags, FIELD(enabled), 1, 0, NULL, NULL},
    {"disable", set_rule_flags, FIELD(enabled), 0, 0, NULL, NULL},
    {"launch-check", set_list, FIELD(launch_checks), 0, 0, NULL, NULL},
    {"owner-fn", set_list, FIELD(owner_fns), 0, 0, NULL, NULL},
    {"release-fn", set_list, FIELD(release_fns), 0, 0, NULL, NULL},
    {"noreturn-fn", set_list, FIELD(noreturn_fns), 0, 0, NULL, NULL},
    {"severity", set_severity, FIELD(severity), 0, 0, NULL,
     "RULES:LEVEL, LEVEL one of note, warning, error; e.g. GM002:error"},
    {"fail-on", set_level, FIELD(fail_on), 0, 0, NULL, "note, warning, error or never"},
    {"suppress", set_suppress, FIELD(file_suppress), 0, 0, NULL, NULL},
    {"pedantic", set_switch, FIELD(pedantic), 0, 0, NULL, "on or off"},
    {"path", set_choice, FIELD(path_mode), 0, 0, path_words, "none, short or full"},
    {"timeout", set_number, FIELD(timeout), 1, 86400, NULL, "seconds, from 1 to 86400"},
    {"clang", set_text, FIELD(clang), 0, 0, NULL, NULL},
    {"analyzer-plugin", set_text, FIELD(plugin), 0, 0, NULL, NULL},
    {"baseline", set_text, FIELD(baseline), 0, 0, NULL, NULL},
    {"check-macro", set_nothing, 0, 0, 0, NULL, NULL},
    {"quiet", set_switch, FIELD(quiet), 0, 0, NULL, "on or off"},
};
#undef FIELD
#define OPTION_COUNT (sizeof option_rows / sizeof option_rows[0])

static void unknown_option(const char *key, const char *where)
{
    const char *keys[OPTION_COUNT];
    for (size_t i = 0; i < OPTION_COUNT; i++)
        keys[i] = option_rows[i].key;
    const char *near = cli_suggest(key, strlen(key), keys, OPTION_COUNT);
    if (near)
        option_error(where, "unknown option '%s'; did you mean %s?", key, near);
    else
        option_error(where, "unknown option '%s'", key);
}

int lint_option_set(struct lint_options *o, const char *key, const char *value, const char *where)
{
    const struct option_row *row = NULL;
    for (size_t i = 0; i < OPTION_COUNT && !row; i++)
        if (strcmp(key, option_rows[i].key) == 0)
            row = &option_rows[i];
    if (!row) {
        unknown_option(key, where);
        return -1;
    }
    int rc = row->set(o, row, value, where);
    if (rc == SET_BAD_RULES)
        option_error(where, "%s%s takes a list of rules (GM001 to GM%03d, or checker names such "
                            "as gpumem.NeverReleased), not '%s'",
                     option_dashes(where), key, LINT_RULE_COUNT, value);
    else if (rc == SET_BAD_VALUE)
        option_error(where, "%s%s takes %s, not '%s'", option_dashes(where), key,
                     row->takes ? row->takes : "a value listed by gpumem lint --help", value);
    return rc == 0 ? 0 : -1;
}

int lint_config_parse(struct lint_options *o, const char *text, size_t len, const char *name)
{
    size_t where_cap = strlen(name) + 32;
    char *where = malloc(where_cap);
    if (!where)
        return -1;
    int rc = 0;
    size_t lineno = 0, pos = 0;
    while (pos < len && rc == 0) {
        /* A line ends at LF, CRLF or a lone CR, and may be of any length. */
        size_t e = pos;
        while (e < len && text[e] != '\n' && text[e] != '\r')
            e++;
        lineno++;
        snprintf(where, where_cap, "%s:%zu", name, lineno);
        if (memchr(text + pos, '\0', e - pos)) {
            fprintf(stderr,
                    "gpumem lint: error: %s: the line holds a NUL byte (a config file is text; "
                    "was a binary file named as the config?)\n",
                    where);
            rc = -1;
            break;
        }
        char *line = malloc(e - pos + 1);
        if (!line) {
            rc = -1;
            break;
        }
        memcpy(line, text + pos, e - pos);
        line[e - pos] = '\0';
        pos = e < len && text[e] == '\r' && e + 1 < len && text[e + 1] == '\n' ? e + 2 : e + 1;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (*s) {
            char *eq = strchr(s, '=');
            if (!eq) {
                /* A switch may stand alone: `pedantic` is `pedantic = on`. */
                if (strcmp(s, "quiet") == 0 || strcmp(s, "pedantic") == 0) {
                    rc = lint_option_set(o, s, "on", where);
                } else {
                    fprintf(stderr, "gpumem lint: error: %s: expected 'key = value', not '%s'\n",
                            where, s);
                    rc = -1;
                }
            } else {
                *eq = '\0';
                rc = lint_option_set(o, trim(s), trim(eq + 1), where);
            }
        }
        free(line);
    }
    free(where);
    return rc;
}

int lint_config_load(struct lint_options *o, const char *path)
{
    char *text, why_buf[256];
    size_t len;
    const char *why;
    if (lint_read_file(path, 1u << 20, &text, &len, &why, why_buf, sizeof why_buf) != 0) {
        fprintf(stderr,
                "gpumem lint: error: cannot read config file %s: %s (name a regular file with "
                "--config, or --no-config)\n",
                path, why);
        return -1;
    }
    int rc = lint_config_parse(o, text, len, path);
    free(text);
    if (rc == 0) {
        char *abs = lint_path_absolute(path);
        char *slash = abs ? strrchr(abs, '/') : NULL;
        if (slash) {
            *(slash == abs ? slash + 1 : slash) = '\0';
            free(o->config_dir);
            o->config_dir = abs;
        } else {
            free(abs);
        }
    }
    return rc;
}

char *lint_config_find(const char *start)
{
    char *dir = lint_path_absolute(start ? start : ".");
    struct stat st;
    if (dir && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(dir, '/');
        *(slash == dir ? slash + 1 : slash) = '\0';
    }
    while (dir) {
        size_t n = strlen(dir) + 16;
        char *cand = malloc(n);
        if (!cand)
            break;
        snprintf(cand, n, "%s%s.gpumem-lint", dir, strcmp(dir, "/") == 0 ? "" : "/");
        if (lstat(cand, &st) == 0) {
            free(dir);
            return cand;
        }
        snprintf(cand, n, "%s%s.git", dir, strcmp(dir, "/") == 0 ? "" : "/");
        int repo_root = lstat(cand, &st) == 0;
        free(cand);
        char *slash = strrchr(dir, '/');
        if (repo_root || !slash || strcmp(dir, "/") == 0)
            break;
        *(slash == dir ? slash + 1 : slash) = '\0';
    }
    free(dir);
    return NULL;
}

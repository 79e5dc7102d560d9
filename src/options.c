/* Options: one table (GPUMEM__OPTION_MAP in internal.h), read once from GPUMEM_<NAME>.
 *
 * A malformed value keeps the default and gets a warning naming the variable and what was
 * expected; an unknown GPUMEM_* variable gets a warning with the nearest known name, because
 * a misspelt option silently doing nothing is a real bug. */
#define _GNU_SOURCE /* environ */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "internal.h"
#include "sigsafe.h"

extern char **environ;

enum { OT_BOOL, OT_SIZE, OT_COUNT, OT_CHOICE, OT_PATH, OT_TEXT };

typedef struct {
    const char *name; /* GPUMEM_... */
    int type;
    const char *choices;
    const char *def;
    const char *help;
} option_def;

static const option_def defs[GPUMEM__OPT_COUNT] = {
#define GPUMEM__OPTION_ROW(name, type, choices, def, help)                                       \
    {"GPUMEM_" #name, OT_##type, choices, def, help},
    GPUMEM__OPTION_MAP(GPUMEM__OPTION_ROW)
#undef GPUMEM__OPTION_ROW
};

/* Effective values, as text and parsed; written once under the init once-control. */
static const char *values[GPUMEM__OPT_COUNT];
/* The flags every allocation and release reads (internal.h): defined here, at the bottom of
 * the library's layers, where every module that writes one can reach it. */
gpumem__hot_flags gpumem__hot;

static uint64_t numbers[GPUMEM__OPT_COUNT];

int gpumem__parse_bool(const char *t, int *out)
{
    static const char *yes[] = {"1", "on", "yes", "true"}, *no[] = {"0", "off", "no", "false"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcasecmp(t, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(t, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

int gpumem__parse_size(const char *t, uint64_t *out)
{
    static const struct {
        const char *suffix;
        uint64_t mult;
    } units[] = {{"", 1},
                 {"b", 1},
                 {"k", 1ull << 10},
                 {"kb", 1000},
                 {"kib", 1ull << 10},
                 {"m", 1ull << 20},
                 {"mb", 1000000},
                 {"mib", 1ull << 20},
                 {"g", 1ull << 30},
                 {"gb", 1000000000},
                 {"gib", 1ull << 30},
                 {"t", 1ull << 40},
                 {"tb", 1000000000000ull},
                 {"tib", 1ull << 40}};
    if (!isdigit((unsigned char)*t))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(t, &end, 10);
    if (errno == ERANGE)
        return -1;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            if (v > UINT64_MAX / units[i].mult)
                return -1;
            *out = v * units[i].mult;
            return 0;
        }
    }
    return -1;
}

/* Whether text is one of the '|'-separated choices. */
static int is_choice(const char *choices, const char *text)
{
    size_t n = strlen(text);
    for (const char *c = choices; *c;) {
        const char *end = strchr(c, '|');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        if (len == n && strncmp(c, text, n) == 0)
            return 1;
        c += len + (end != NULL);
    }
    return 0;
}

/* "a|b|c" as "a, b or c". */
static void choice_list(const char *choices, char *out, size_t n)
{
    size_t o = 0;
    out[0] = '\0';
    for (const char *c = choices; *c && o + 1 < n;) {
        const char *end = strchr(c, '|');
        size_t len = end ? (size_t)(end - c) : strlen(c);
        const char *sep = !end ? "" : strchr(end + 1, '|') ? ", " : " or ";
        int w = snprintf(out + o, n - o, "%.*s%s", (int)len, c, sep);
        if (w < 0 || (size_t)w >= n - o)
            break;
        o += (size_t)w;
        c = end ? end + 1 : c + len;
    }
}

/* A size, within the bounds "LO-HI" of the table's choices column when it has them. */
static int parse_size_in_range(int id, const char *text, const char **expected)
{
    static _Thread_local char range_text[160];
    *expected = "a number, optionally with a unit such as 16MiB or 4GB";
    uint64_t v, lo = 0, hi = UINT64_MAX;
    if (gpumem__parse_size(text, &v) != 0)
        return -1;
    const char *dash = strchr(defs[id].choices, '-');
    if (dash) {
        char low[32];
        snprintf(low, sizeof low, "%.*s", (int)(dash - defs[id].choices), defs[id].choices);
        gpumem__parse_size(low, &lo); /* the table's own text */
        gpumem__parse_size(dash + 1, &hi);
        snprintf(range_text, sizeof range_text, "a size from %s to %s", low, dash + 1);
        *expected = range_text;
    }
    if (v < lo || v > hi)
        return -1;
    numbers[id] = v;
    return 0;
}

/* Parses text for option id into numbers[id]; returns 0, or -1 with what was expected. */
static int parse_value(int id, const char *text, const char **expected)
{
    static _Thread_local char choice_text[128];
    int b;
    switch (defs[id].type) {
    case OT_BOOL:
        *expected = "1/0, on/off, yes/no or true/false";
        if (gpumem__parse_bool(text, &b) != 0)
            return -1;
        numbers[id] = (uint64_t)b;
        return 0;
    case OT_SIZE:
        return parse_size_in_range(id, text, expected);
    case OT_COUNT: {
        unsigned long long lo = 0, hi = 0, v;
        char *end;
        sscanf(defs[id].choices, "%llu-%llu", &lo, &hi); /* the table's own text */
        snprintf(choice_text, sizeof choice_text, "a whole number from %llu to %llu", lo, hi);
        *expected = choice_text;
        if (!isdigit((unsigned char)*text))
            return -1;
        errno = 0;
        v = strtoull(text, &end, 10);
        if (errno == ERANGE || *end || v < lo || v > hi)
            return -1;
        numbers[id] = (uint64_t)v;
        return 0;
    }
    case OT_CHOICE:
        choice_list(defs[id].choices, choice_text, sizeof choice_text);
        *expected = choice_text;
        return is_choice(defs[id].choices, text) ? 0 : -1;
    case OT_PATH:
        *expected = "a non-empty value";
        return *text ? 0 : -1;
    default:
        return 0;
    }
}

/* Edit distance, ignoring case (options are upper case, command-line names lower case), with a
 * swap of two neighbouring letters as one edit ("lnit" is one edit from "lint"). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t rows[3][64], *older = rows[0], *prev = rows[1], *row = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = toupper((unsigned char)a[i - 1]), cb = toupper((unsigned char)b[j - 1]);
            size_t best = prev[j - 1] + (ca != cb);
            best = prev[j] + 1 < best ? prev[j] + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            if (i > 1 && j > 1 && ca == toupper((unsigned char)b[j - 2]) &&
                toupper((unsigned char)a[i - 2]) == cb && older[j - 2] + 1 < best)
                best = older[j - 2] + 1;
            row[j] = best;
        }
        size_t *t = older;
        older = prev;
        prev = row;
        row = t;
    }
    return prev[lb];
}

const char *gpumem__suggest(const char *name, size_t name_len, const char *const *candidates,
                            size_t count, size_t max_distance)
{
    char text[64];
    if (name_len >= sizeof text)
        return NULL;
    memcpy(text, name, name_len);
    text[name_len] = '\0';
    const char *best = NULL;
    size_t best_d = max_distance + 1;
    for (size_t i = 0; i < count; i++) {
        if (!candidates[i])
            continue;
        size_t d = edit_distance(text, candidates[i]);
        if (d < best_d)
            best_d = d, best = candidates[i];
    }
    return best;
}

/* Variables of gpumem's build scripts (scripts/build) and of the Python package (where it
 * finds the library, docs/python.md), which share the prefix: known, not options of the
 * library, so no warning. */
static const char *const build_variables[] = {"GPUMEM_WERROR",     "GPUMEM_SANITIZE",
                                              "GPUMEM_BUILD_DIR",  "GPUMEM_BUILD_TYPE",
                                              "GPUMEM_BUILD_FOR",  "GPUMEM_BUILD_LOG",
                                              "GPUMEM_LIBRARY"};

static void warn_unknown(void)
{
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "GPUMEM_", 7) != 0)
            continue;
        /* `gpumem check` talks to its injected library through GPUMEM_CHECK_* variables. */
        if (strncmp(*e, "GPUMEM_CHECK_", 13) == 0)
            continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        int known = 0;
        for (int i = 0; i < GPUMEM__OPT_COUNT && !known; i++)
            known = strlen(defs[i].name) == len && strncmp(defs[i].name, *e, len) == 0;
        for (size_t i = 0; i < sizeof build_variables / sizeof *build_variables && !known; i++)
            known = strlen(build_variables[i]) == len && strncmp(build_variables[i], *e, len) == 0;
        if (known)
            continue;
        char name[128], shown[4 * sizeof name];
        snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), *e);
        gpumem__visible(name, shown, sizeof shown);
        const char *names[GPUMEM__OPT_COUNT];
        for (int i = 0; i < GPUMEM__OPT_COUNT; i++)
            names[i] = defs[i].name;
        const char *best = gpumem__suggest(name, strlen(name), names, GPUMEM__OPT_COUNT, 3);
        if (best)
            fprintf(stderr, "gpumem: warning: unknown option %s is ignored; did you mean %s?\n",
                    shown, best);
        else
            fprintf(stderr,
                    "gpumem: warning: unknown option %s is ignored; `gpumem info` lists the "
                    "options\n",
                    shown);
    }
}

void gpumem__options_load(void)
{
    for (int i = 0; i < GPUMEM__OPT_COUNT; i++) {
        const char *expected = "";
        int rc = parse_value(i, defs[i].def, &expected); /* defaults always parse */
        (void)rc;
        values[i] = defs[i].def;
        const char *env = getenv(defs[i].name);
        if (!env)
            continue;
        if (parse_value(i, env, &expected) == 0) {
            values[i] = env;
        } else {
            char shown[4 * 256];
            gpumem__visible(env, shown, sizeof shown);
            fprintf(stderr,
                    "gpumem: warning: %s=%s is not valid (expected %s); using the default %s\n",
                    defs[i].name, shown, expected, defs[i].def);
            parse_value(i, defs[i].def, &expected);
        }
    }
    warn_unknown();
    gpumem__hot.backtrace = numbers[GPUMEM__OPT_BACKTRACE] != 0;
    gpumem__hot.fail_alloc = numbers[GPUMEM__OPT_FAIL_ALLOC];
}

const char *gpumem__opt_str(int id)
{
    return values[id] ? values[id] : defs[id].def;
}
uint64_t gpumem__opt_u64(int id)
{
    return numbers[id];
}
int gpumem__opt_bool(int id)
{
    return numbers[id] != 0;
}

void gpumem__opt_describe(int id, const char **name, const char **default_value,
                          const char **help)
{
    *name = defs[id].name;
    *default_value = defs[id].def;
    *help = defs[id].help;
}

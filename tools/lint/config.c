/* Options: defaults, the rule table, and the config file. The config file is a list of
 * `key = value` lines (format in docs/lint.md); every key is also a command-line option, so
 * the two never drift apart. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct lint_rule_info lint_rules[LINT_RULE_COUNT] = {
    {"GM001", "allocation-never-released",
     "A CUDA (or gpumem) allocation is not released, returned, stored outside the function or "
     "handed to an owner on some path to the end of the function.",
     "Release it with the matching call (cudaFree, cudaFreeHost, gpumem_free) on every path, "
     "or give it an owner (GPUMEM_AUTO, gpumem_adopt, a smart pointer)."},
    {"GM002", "mismatched-release",
     "Memory is released with a call that does not match its allocator (pinned memory with "
     "cudaFree, device memory with cudaFreeHost or free, malloc memory with cudaFree).",
     "Pair cudaMalloc/cudaMallocManaged/cudaMallocAsync with cudaFree, cudaMallocHost/"
     "cudaHostAlloc with cudaFreeHost, malloc with free, gpumem_*_alloc with gpumem_free."},
    {"GM003", "misaligned-vector-view",
     "A pointer is cast to a vector type (float4, int2, half2, ...) at an offset that is not a "
     "multiple of the vector's alignment.",
     "Offset vector views by whole vectors (a multiple of the vector width in elements), or "
     "load the misaligned part element by element."},
    {"GM004", "unchecked-cuda-call",
     "A cudaError_t is ignored, or stored and not checked before the next CUDA call; or a "
     "kernel launch is not followed by cudaGetLastError before the next CUDA call.",
     "Wrap the call in a check macro (CUDA_CHECK, GPUMEM_CHECK) right away; after a launch, "
     "check cudaGetLastError() (or GPUMEM_CHECK_LAUNCH())."},
    {"GM005", "allocation-in-loop",
     "An allocation inside a loop body is not released in the same iteration, so each "
     "iteration leaks the previous one's memory.",
     "Hoist the allocation out of the loop, or release it before the iteration ends."},
    {"GM006", "early-exit-leak",
     "A return, goto, break, continue or throw leaves after an allocation and before its "
     "release.",
     "Release on the early path too (a cleanup label, GPUMEM_AUTO, GPUMEM_SCOPE or RAII)."},
    {"GM007", "write-combined-host-read",
     "The host reads memory allocated write-combined (cudaHostAllocWriteCombined, "
     "GPUMEM_HOST_WRITE_COMBINED): such reads are uncached and very slow.",
     "Use write-combined memory only for data the host writes and the device reads; allocate "
     "without the flag where the host must read."},
};

void *lint_array_grow(void *arr, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return arr;
    size_t want = *cap ? *cap * 2 : 16;
    if (want > SIZE_MAX / size)
        return NULL;
    void *p = realloc(arr, want * size);
    if (p)
        *cap = want;
    return p;
}

void lint_strlist_add(struct lint_strlist *l, const char *s)
{
    char **v = lint_array_grow(l->v, l->n, &l->cap, sizeof *v);
    if (!v)
        return;
    l->v = v;
    char *d = strdup(s);
    if (d)
        l->v[l->n++] = d;
}

/** The next item of a comma- or space-separated list: its start and @p len, or NULL when
 *  the list at *@p s is used up. Moves *@p s past the item. */
static const char *list_next(const char **s, size_t *len)
{
    const char *b = *s;
    while (*b == ',' || isspace((unsigned char)*b))
        b++;
    const char *e = b;
    while (*e && *e != ',' && !isspace((unsigned char)*e))
        e++;
    *s = e;
    *len = (size_t)(e - b);
    return e > b ? b : NULL;
}

void lint_strlist_add_split(struct lint_strlist *l, const char *s)
{
    const char *item;
    size_t len;
    while ((item = list_next(&s, &len)) != NULL) {
        char buf[256];
        snprintf(buf, sizeof buf, "%.*s", (int)len, item);
        lint_strlist_add(l, buf);
    }
}

int lint_strlist_has(const struct lint_strlist *l, const char *s, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i]) == len && memcmp(l->v[i], s, len) == 0)
            return 1;
    return 0;
}

void lint_strlist_free(struct lint_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

void lint_options_init(struct lint_options *o)
{
    memset(o, 0, sizeof *o);
    o->format = LINT_FORMAT_TEXT;
    o->jobs = 1;
    o->fail_on = LINT_WARNING;
    o->show_notes = 1;
    o->max_file_size = 16u << 20;
    for (int i = 0; i < LINT_RULE_COUNT; i++) {
        o->enabled[i] = 1;
        o->severity[i] = LINT_WARNING;
    }
    lint_strlist_add_split(&o->check_macros,
                           "CUDA_CHECK checkCudaErrors CUDA_SAFE_CALL gpuErrchk GPUMEM_CHECK "
                           "CUDA_CALL CUDA_RT_CALL CHECK_CUDA HANDLE_ERROR CUDA_TRY");
    lint_strlist_add_split(&o->launch_checks,
                           "GPUMEM_CHECK_LAUNCH getLastCudaError CUDA_CHECK_LAST_ERROR "
                           "CUDA_CHECK_LAUNCH");
    lint_strlist_add_split(&o->owner_fns,
                           "gpumem_adopt push_back emplace_back push_front emplace_front insert "
                           "emplace push reset move make_pair make_tuple store exchange atomic_store "
                           "atomic_exchange atomic_store_explicit atomic_exchange_explicit "
                           "atomic_compare_exchange_strong atomic_compare_exchange_weak "
                           "compare_exchange_strong compare_exchange_weak");
    lint_strlist_add_split(&o->extensions, ".cu .cuh .c .h .cc .cpp .cxx .hpp");
}

void lint_options_free(struct lint_options *o)
{
    lint_strlist_free(&o->check_macros);
    lint_strlist_free(&o->launch_checks);
    lint_strlist_free(&o->owner_fns);
    lint_strlist_free(&o->release_fns);
    lint_strlist_free(&o->exclude);
    lint_strlist_free(&o->file_suppress);
    lint_strlist_free(&o->extensions);
}

int lint_rule_parse(const char *s, size_t len)
{
    char buf[16];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
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
    while ((item = list_next(&list, &len)) != NULL) {
        int r = lint_rule_parse(item, len);
        if (r < 0)
            return -1;
        flags[r] = v;
        any = 1;
    }
    return any ? 0 : -1;
}

/** What @p key accepts, for the message about a bad value. */
static const char *option_values(const char *key)
{
    static const char *const values[][2] = {
        {"severity", "RULES:LEVEL, LEVEL one of note, warning, error; e.g. GM002:error"},
        {"fail-on", "note, warning, error or never"},
        {"max-file-size", "a size such as 1000, 512k or 16MiB"},
        {"notes", "on or off"},
        {"jobs", "a number from 1 to 256"},
        {"format", "text, json or sarif"},
    };
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        if (strcmp(values[i][0], key) == 0)
            return values[i][1];
    return "a value listed by gpumem lint --help";
}

/** Applies one `key = value` option (shared by the config file and the command line).
 *  Returns 0, or -1 after printing an error that names @p where. */
int lint_option_set(struct lint_options *o, const char *key, const char *value, const char *where)
{
    if (strcmp(key, "disable") == 0 || strcmp(key, "enable") == 0) {
        if (set_rules(o->enabled, value, key[0] == 'e') != 0)
            goto bad_rule;
    } else if (strcmp(key, "check-macro") == 0) {
        lint_strlist_add_split(&o->check_macros, value);
    } else if (strcmp(key, "launch-check") == 0) {
        lint_strlist_add_split(&o->launch_checks, value);
    } else if (strcmp(key, "owner-fn") == 0) {
        lint_strlist_add_split(&o->owner_fns, value);
    } else if (strcmp(key, "release-fn") == 0) {
        lint_strlist_add_split(&o->release_fns, value);
    } else if (strcmp(key, "exclude") == 0) {
        lint_strlist_add_split(&o->exclude, value);
    } else if (strcmp(key, "extensions") == 0) {
        lint_strlist_free(&o->extensions);
        lint_strlist_add_split(&o->extensions, value);
    } else if (strcmp(key, "suppress") == 0) {
        /* "GLOB: GM001, GM004" -> "GLOB:GM001,GM004" */
        const char *colon = strrchr(value, ':');
        char buf[600];
        if (colon) {
            char glob[512];
            snprintf(glob, sizeof glob, "%.*s", (int)(colon - value), value);
            int tmp[LINT_RULE_COUNT] = {0};
            const char *rules = colon + 1;
            while (isspace((unsigned char)*rules))
                rules++;
            if (*rules && set_rules(tmp, rules, 1) != 0)
                goto bad_rule;
            int k = snprintf(buf, sizeof buf, "%s:", trim(glob));
            for (int r = 0; r < LINT_RULE_COUNT && k > 0 && (size_t)k < sizeof buf; r++)
                if (tmp[r])
                    k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s",
                                  buf[k - 1] == ':' ? "" : ",", lint_rules[r].id);
        } else {
            snprintf(buf, sizeof buf, "%s:", value);
        }
        lint_strlist_add(&o->file_suppress, buf);
    } else if (strcmp(key, "severity") == 0) {
        /* "GM002: error" */
        const char *colon = strchr(value, ':');
        if (!colon)
            goto bad_value;
        char rules[256], sev[32];
        snprintf(rules, sizeof rules, "%.*s", (int)(colon - value), value);
        snprintf(sev, sizeof sev, "%s", colon + 1);
        int s = lint_severity_parse(trim(sev));
        if (s < 0 || s == LINT_NEVER)
            goto bad_value;
        if (set_rules(o->severity, rules, s) != 0)
            goto bad_rule;
    } else if (strcmp(key, "fail-on") == 0) {
        int s = lint_severity_parse(value);
        if (s < 0)
            goto bad_value;
        o->fail_on = s;
    } else if (strcmp(key, "max-file-size") == 0) {
        if (lint_size_parse(value, &o->max_file_size) != 0)
            goto bad_value;
    } else if (strcmp(key, "notes") == 0) {
        if (strcmp(value, "on") == 0 || strcmp(value, "1") == 0)
            o->show_notes = 1;
        else if (strcmp(value, "off") == 0 || strcmp(value, "0") == 0)
            o->show_notes = 0;
        else
            goto bad_value;
    } else if (strcmp(key, "jobs") == 0) {
        char *end;
        long j = strtol(value, &end, 10);
        if (*end || j < 1 || j > 256)
            goto bad_value;
        o->jobs = (int)j;
    } else if (strcmp(key, "format") == 0) {
        if (strcmp(value, "text") == 0)
            o->format = LINT_FORMAT_TEXT;
        else if (strcmp(value, "json") == 0)
            o->format = LINT_FORMAT_JSON;
        else if (strcmp(value, "sarif") == 0)
            o->format = LINT_FORMAT_SARIF;
        else
            goto bad_value;
    } else {
        fprintf(stderr, "gpumem lint: error: %s: unknown option '%s' (see gpumem lint --help)\n",
                where, key);
        return -1;
    }
    return 0;
bad_rule:
    fprintf(stderr,
            "gpumem lint: error: %s: '%s' is not a list of rules (GM001 to GM%03d)\n", where,
            value, LINT_RULE_COUNT);
    return -1;
bad_value:
    fprintf(stderr, "gpumem lint: error: %s: bad value '%s' for '%s' (use %s)\n", where, value,
            key, option_values(key));
    return -1;
}

int lint_config_load(struct lint_options *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gpumem lint: error: cannot read config file %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    char line[1024], where[600];
    int lineno = 0, rc = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        snprintf(where, sizeof where, "%s:%d", path, lineno);
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            fprintf(stderr, "gpumem lint: error: %s: expected 'key = value'\n", where);
            rc = -1;
            break;
        }
        *eq = '\0';
        if (lint_option_set(o, trim(s), trim(eq + 1), where) != 0) {
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}

/* Whole-program facts: what each function does with the pointers it is given (releases one,
 * allocates into one, returns one, only reads one), learnt by the analyzer from the unit that
 * defines it (gpumem.Memory:FactsOut, one file per unit) and given to the units that call it
 * without its body (gpumem.Memory:FactsIn). A release helper in a common file is then seen
 * by every unit that calls it: its double and wrong-kind releases are found without
 * --release-fn.
 *
 * The analysis of every unit writes its facts as it runs, so no separate pass over the
 * sources is made: after all units are done, the facts are merged here, and only the units
 * that call a function another unit defines with facts are analyzed again, with them. A name
 * that more than one unit defines (one run over several programs, each with its own `init`)
 * is left out: which definition a call reaches is the linker's to say. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/** Appends @p line and a newline to the string @p obj holds under @p key. */
static void append_line(json_t *obj, const char *key, const char *line)
{
    json_t *have = json_object_get(obj, key);
    const char *old = have ? json_string_value(have) : "";
    size_t n = strlen(old) + strlen(line) + 2;
    char *s = malloc(n);
    if (!s)
        return;
    snprintf(s, n, "%s%s\n", old, line);
    json_object_set_new(obj, key, json_string(s));
    free(s);
}

/** Reads one unit's facts file: its `fact NAME ...` lines into @p defs (NAME -> {unit, lines},
 *  or null once two units define it) and its `calls NAME` names into @p calls. */
static void read_unit_facts(const char *path, size_t unit, json_t *defs, json_t *calls)
{
    char *text = NULL, why_buf[128];
    const char *why;
    size_t len;
    if (lint_read_file(path, (size_t)64 << 20, &text, &len, &why, why_buf, sizeof why_buf) != 0)
        return;
    json_t *mine = json_object(); /* NAME -> its lines, in this unit */
    for (char *line = text; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = '\0';
        if (strncmp(line, "fact\t", 5) == 0) {
            const char *end = strchr(line + 5, '\t');
            char *name = end ? strndup(line + 5, (size_t)(end - line - 5)) : NULL;
            if (name)
                append_line(mine, name, line);
            free(name);
        } else if (strncmp(line, "calls\t", 6) == 0) {
            json_array_append_new(calls, json_string(line + 6));
        }
        line = eol ? eol + 1 : NULL;
    }
    const char *name;
    json_t *lines;
    json_object_foreach(mine, name, lines) {
        if (json_object_get(defs, name)) {
            /* A second definition: which one a call reaches is the linker's to say. */
            json_object_set_new(defs, name, json_null());
            continue;
        }
        json_t *def = json_pack("{s:I, s:O}", "unit", (json_int_t)unit, "lines", lines);
        if (def)
            json_object_set_new(defs, name, def);
    }
    json_decref(mine);
    free(text);
}

int lint_facts_merge(const char *tmp, size_t n, const unsigned char *analyzed, const char *out,
                     unsigned char *rerun)
{
    json_t *defs = json_object();
    json_t **unit_calls = calloc(n ? n : 1, sizeof *unit_calls);
    if (!defs || !unit_calls) {
        json_decref(defs);
        free(unit_calls);
        return -1;
    }
    char path[4200];
    for (size_t i = 0; i < n; i++) {
        unit_calls[i] = json_array();
        if (!analyzed[i])
            continue;
        snprintf(path, sizeof path, "%s/%zu.facts", tmp, i);
        read_unit_facts(path, i, defs, unit_calls[i]);
    }
    FILE *f = fopen(out, "w");
    int count = f ? 0 : -1;
    const char *name;
    json_t *def;
    json_object_foreach(defs, name, def) {
        if (f && json_is_object(def))
            fputs(json_string_value(json_object_get(def, "lines")), f);
    }
    if (f && fclose(f) != 0)
        count = -1;
    for (size_t i = 0; i < n && count >= 0; i++) {
        size_t k;
        json_t *callee;
        rerun[i] = 0;
        json_array_foreach(unit_calls[i], k, callee) {
            json_t *d = json_object_get(defs, json_string_value(callee));
            if (json_is_object(d) &&
                (size_t)json_integer_value(json_object_get(d, "unit")) != i) {
                rerun[i] = 1;
                count++;
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        json_decref(unit_calls[i]);
    free(unit_calls);
    json_decref(defs);
    return count;
}

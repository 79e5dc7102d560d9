/* Reads a gpumem trace (Chrome trace event JSON) with jansson and checks what every trace must
 * hold, for the library's and gpumem check's trace tests: the file is one JSON document, every
 * release ("e") follows its allocation ("b") with the same id, kind and name, every counter
 * matches the sum of what was allocated and released before it, and every stack an event names
 * is in the stack table. Counts and bytes per kind come back for the test's own checks. */
#ifndef GPUMEM_TEST_TRACE_READ_H
#define GPUMEM_TEST_TRACE_READ_H

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "harness.h"

typedef struct {
    json_t *root;      /* owns everything below */
    json_t *events;    /* traceEvents */
    json_t *stacks;    /* id -> array of frames */
    json_t *end;       /* the gpumem_end event's args */
    long allocs[GPUMEM_KIND_COUNT_], releases[GPUMEM_KIND_COUNT_];
    long long alloc_bytes[GPUMEM_KIND_COUNT_], release_bytes[GPUMEM_KIND_COUNT_];
    long checkpoints, failed, counters;
    long long last_counter[GPUMEM_KIND_COUNT_]; /* device 0 */
} trace_read_t;

static int trace_kind_of(const char *name)
{
    for (int k = 1; k < GPUMEM_KIND_COUNT_; k++)
        if (strcmp(gpumem_kind_name(k), name) == 0)
            return k;
    return 0;
}

typedef struct {
    const char *id;
    double ts;
    const char *name, *cat;
    int open;
} trace_alloc_seen;

static double trace_ts(json_t *e)
{
    json_t *t = json_object_get(e, "ts");
    return json_is_real(t) ? json_real_value(t) : (double)json_integer_value(t);
}

static int trace_ts_order(const void *a, const void *b)
{
    double x = trace_ts(*(json_t *const *)a), y = trace_ts(*(json_t *const *)b);
    return x < y ? -1 : x > y;
}

/* Loads path and checks it; returns 0 when it loaded (the checks count as the harness's). */
static int trace_read(const char *path, trace_read_t *t)
{
    memset(t, 0, sizeof *t);
    json_error_t err;
    t->root = json_load_file(path, 0, &err);
    if (!t->root) {
        HARNESS_FAIL_("%s is not JSON: %s (line %d)", path, err.text, err.line);
        return -1;
    }
    t->events = json_object_get(t->root, "traceEvents");
    EXPECT_TRUE(json_is_array(t->events));
    size_t n = json_array_size(t->events);
    json_t **sorted = calloc(n + 1, sizeof *sorted);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(t->events, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        EXPECT_TRUE(ph != NULL && name != NULL && json_object_get(e, "pid"));
        EXPECT_TRUE((ph && strcmp(ph, "M") == 0) || json_is_number(json_object_get(e, "ts")));
        if (ph && strcmp(ph, "M") == 0 && name && strcmp(name, "gpumem_stacks") == 0)
            t->stacks = json_object_get(json_object_get(e, "args"), "stacks");
        else if (ph && strcmp(ph, "M") == 0 && name && strcmp(name, "gpumem_end") == 0)
            t->end = json_object_get(e, "args");
        else if (ph && strcmp(ph, "M") != 0)
            sorted[ns++] = e;
    }
    EXPECT_TRUE(t->stacks != NULL);
    EXPECT_TRUE(t->end != NULL);
    /* Threads' buffers reach the file out of order: readers sort by time. */
    qsort(sorted, ns, sizeof *sorted, trace_ts_order);
    trace_alloc_seen *seen_allocs = calloc(ns + 1, sizeof *seen_allocs);
    size_t na = 0;
    long long live[GPUMEM_KIND_COUNT_] = {0};
    for (size_t i = 0; i < ns; i++) {
        json_t *e = sorted[i], *args = json_object_get(e, "args");
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (strcmp(ph, "b") == 0 || strcmp(ph, "e") == 0) {
            const char *cat = json_string_value(json_object_get(e, "cat"));
            const char *id = json_string_value(json_object_get(e, "id"));
            int k = cat ? trace_kind_of(cat) : 0;
            long long bytes = json_integer_value(json_object_get(args, "bytes"));
            EXPECT_TRUE(k > 0 && id != NULL && bytes > 0);
            if (!(k > 0 && id))
                continue;
            if (strcmp(ph, "b") == 0) {
                t->allocs[k]++;
                t->alloc_bytes[k] += bytes;
                live[k] += bytes;
                seen_allocs[na++] = (trace_alloc_seen){id, trace_ts(e), name, cat, 1};
                uint64_t stack = (uint64_t)json_integer_value(json_object_get(args, "stack"));
                if (stack) {
                    /* The format's own reference too: sf names the innermost frame, and the
                     * frame tree from there has the same frames as the gpumem_stacks table. */
                    char leaf[32];
                    snprintf(leaf, sizeof leaf, "%llu.0", (unsigned long long)stack);
                    EXPECT_STR_EQ(json_string_value(json_object_get(e, "sf")), leaf);
                    json_t *tree = json_object_get(t->root, "stackFrames");
                    char key0[24];
                    snprintf(key0, sizeof key0, "%llu", (unsigned long long)stack);
                    json_t *list = json_object_get(t->stacks, key0);
                    const char *node = leaf;
                    size_t depth = 0;
                    while (node && depth < 100) {
                        json_t *fr = json_object_get(tree, node);
                        if (!fr) {
                            HARNESS_FAIL_("stackFrames has no frame %s", node);
                            break;
                        }
                        EXPECT_STR_EQ(json_string_value(json_object_get(fr, "name")),
                                      json_string_value(json_array_get(list, depth)));
                        node = json_string_value(json_object_get(fr, "parent"));
                        depth++;
                    }
                    EXPECT_EQ(depth, json_array_size(list));
                    char key[24];
                    snprintf(key, sizeof key, "%llu", (unsigned long long)stack);
                    json_t *frames = json_object_get(t->stacks, key);
                    if (!json_is_array(frames) || json_array_size(frames) == 0)
                        HARNESS_FAIL_("stack %s of allocation %s is not in the table", key, id);
                }
            } else {
                t->releases[k]++;
                t->release_bytes[k] += bytes;
                live[k] -= bytes;
                size_t j = na;
                while (j > 0 && !(seen_allocs[j - 1].open && strcmp(seen_allocs[j - 1].id, id) == 0))
                    j--;
                if (j == 0) {
                    HARNESS_FAIL_("release of %s (%s) at ts %.3f has no allocation before it", id,
                                  name, trace_ts(e));
                } else {
                    seen_allocs[j - 1].open = 0;
                    EXPECT_STR_EQ(seen_allocs[j - 1].name, name);
                    EXPECT_STR_EQ(seen_allocs[j - 1].cat, cat);
                    EXPECT_TRUE(seen_allocs[j - 1].ts <= trace_ts(e));
                }
            }
        } else if (strcmp(ph, "C") == 0) {
            t->counters++;
            char want[64];
            for (int k = 1; k < GPUMEM_KIND_COUNT_; k++) {
                snprintf(want, sizeof want, "%s memory, device 0", gpumem_kind_name(k));
                if (strcmp(name, want) == 0)
                    t->last_counter[k] = json_integer_value(json_object_get(args, "bytes"));
            }
        } else if (strcmp(ph, "i") == 0 && strcmp(name, "checkpoint") == 0) {
            t->checkpoints++;
        } else if (strcmp(ph, "i") == 0) {
            t->failed++;
        }
    }
    free(seen_allocs);
    free(sorted);
    return 0;
}

/* The first frame of stack id as text ("" when absent). */
static const char *trace_stack_top(const trace_read_t *t, long long id)
{
    char key[24];
    snprintf(key, sizeof key, "%lld", id);
    const char *s = json_string_value(json_array_get(json_object_get(t->stacks, key), 0));
    return s ? s : "";
}

#endif

/* `gpumem report`: pools' reserved memory against what their blocks use, over time, from the
 * counters a pool writes into the trace whenever it gets memory from CUDA or gives some back
 * ("device pool 0x55d0c0 reserved, device 0", args reserved and in_use: the bytes of its blocks
 * in use, thread caches' included, as the pool counts them).
 * What a pool holds beyond what is asked of it is its fragmentation: this is where a user sees
 * it grow, before a long job runs out of memory. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "report.h"

/* The text after key in line, or NULL. */
static const char *after_key(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    return p ? p + strlen(key) : NULL;
}

static int pool_index(report_trace *t, const char *name, size_t len, uint32_t *out)
{
    for (size_t i = 0; i < t->npools; i++) {
        if (strlen(t->pool_names[i]) == len && strncmp(t->pool_names[i], name, len) == 0) {
            *out = (uint32_t)i;
            return 0;
        }
    }
    char **names = realloc(t->pool_names, (t->npools + 1) * sizeof *names);
    if (!names)
        return -1;
    t->pool_names = names;
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    for (size_t i = 0; i < len; i++) /* trace text, printed on a terminal: no control bytes */
        copy[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
    copy[len] = '\0';
    names[t->npools] = copy;
    *out = (uint32_t)t->npools++;
    return 0;
}

int report_take_pool_counter(report_trace *t, const char *line)
{
    const char *name = after_key(line, ",\"name\":\"");
    const char *end = name ? strchr(name, '"') : NULL;
    const char *ts = after_key(line, ",\"ts\":");
    const char *res = after_key(line, "\"reserved\":"), *req = after_key(line, "\"in_use\":");
    if (!name || !end || !ts || !res || !req || !strstr(name, " pool 0x") ||
        !strstr(name, " reserved, device "))
        return 0;
    double us = strtod(ts, NULL);
    if (!(us >= 0.0 && us < 9.2e15))
        return 0;
    if (t->npool_samples == t->pool_samples_cap) {
        size_t cap = t->pool_samples_cap ? t->pool_samples_cap * 2 : 256;
        report_pool_sample *s = realloc(t->pool_samples, cap * sizeof *s);
        if (!s)
            return -1;
        t->pool_samples = s;
        t->pool_samples_cap = cap;
    }
    report_pool_sample *s = &t->pool_samples[t->npool_samples];
    if (pool_index(t, name, (size_t)(end - name), &s->pool) != 0)
        return -1;
    s->t = (int64_t)(us * 1000.0);
    s->reserved = strtoull(res, NULL, 10);
    s->in_use = strtoull(req, NULL, 10);
    t->npool_samples++;
    return 1;
}

static int by_time(const void *a, const void *b)
{
    const report_pool_sample *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

void report_pools_rebase(report_trace *t, int64_t t0)
{
    for (size_t i = 0; i < t->npool_samples; i++)
        t->pool_samples[i].t -= t0;
    if (t->npool_samples)
        qsort(t->pool_samples, t->npool_samples, sizeof *t->pool_samples, by_time);
}

static void one_pool(const report_trace *t, uint32_t pool, FILE *out)
{
    const report_pool_sample *peak = NULL;
    size_t n = 0;
    for (size_t i = 0; i < t->npool_samples; i++) {
        const report_pool_sample *s = &t->pool_samples[i];
        if (s->pool != pool)
            continue;
        n++;
        if (!peak || s->reserved > peak->reserved)
            peak = s;
    }
    if (!peak)
        return;
    char a[32], b[32];
    fprintf(out, "  %s\n    peak %s reserved at %.3f s, when its blocks in use took %s (%.0f %% "
                 "in no block in use)\n",
            t->pool_names[pool], gpumem_format_bytes(peak->reserved, a, sizeof a),
            (double)peak->t / 1e9, gpumem_format_bytes(peak->in_use, b, sizeof b),
            peak->reserved ? 100.0 * (double)(peak->reserved - (peak->in_use < peak->reserved
                                                                     ? peak->in_use
                                                                     : peak->reserved)) /
                                 (double)peak->reserved
                           : 0.0);
    fprintf(out, "    %10s %14s %14s\n", "time", "reserved", "in use");
    size_t shown = 0, seen = 0, step = n > 8 ? (n + 7) / 8 : 1;
    for (size_t i = 0; i < t->npool_samples; i++) {
        const report_pool_sample *s = &t->pool_samples[i];
        if (s->pool != pool || (seen++ % step && seen != n))
            continue;
        shown++;
        fprintf(out, "    %8.3f s %14s %14s\n", (double)s->t / 1e9,
                gpumem_format_bytes(s->reserved, a, sizeof a),
                gpumem_format_bytes(s->in_use, b, sizeof b));
    }
}

void report_pools_summary(const report_trace *t, FILE *out)
{
    if (!t->npools)
        return;
    fprintf(out, "\npools, reserved against in use (each time reserved memory changed):\n");
    for (uint32_t p = 0; p < t->npools; p++)
        one_pool(t, p, out);
}

void report_pools_free(report_trace *t)
{
    for (size_t i = 0; i < t->npools; i++)
        free(t->pool_names[i]);
    free(t->pool_names);
    free(t->pool_samples);
}

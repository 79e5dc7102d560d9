/* Flags for units without a compilation database: the analyzer needs the include paths a
 * build would give. They are derived from the tree: for each `#include "x.h"` that is not
 * beside the including file, and each `#include <x.h>`, the folder under the walked roots that
 * holds x.h (by its path's tail), following the headers found so to a depth of 16; and each
 * root's include/ folder. The CUDA toolkit is found as scripts/setup finds it. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *lint_cuda_root(void)
{
    static char found[4096];
    static int done;
    if (done)
        return found[0] ? found : NULL;
    done = 1;
    const char *cands[] = {getenv("CUDAToolkit_ROOT"), getenv("CUDA_HOME"), getenv("CUDA_PATH"),
                           "/usr/local/cuda", "/usr/lib/cuda", "/usr"};
    for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
        if (!cands[i] || !*cands[i])
            continue;
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/include/cuda_runtime_api.h", cands[i]);
        if (access(probe, R_OK) == 0) {
            snprintf(found, sizeof found, "%s", cands[i]);
            return found;
        }
    }
    return NULL;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/** Adds "-I DIR" to @p args unless it is there already. */
static void add_include(struct lint_strlist *args, const char *dir, size_t len)
{
    for (size_t i = 0; i + 1 < args->n; i++)
        if (strcmp(args->v[i], "-I") == 0 && strlen(args->v[i + 1]) == len &&
            memcmp(args->v[i + 1], dir, len) == 0)
            return;
    lint_strlist_add(args, "-I");
    lint_strlist_addn(args, dir, len);
}

/** For `#include "name"` (or <name>) seen in folder @p here: the header's path, beside it or
 *  among the headers found under the walked roots (whose folder then becomes an -I of the
 *  unit); malloc'd, or NULL when it is neither (a system header). */
static char *resolve(struct lint_units *u, struct lint_unit *x, const char *here, const char *name,
                     size_t nlen, int quoted)
{
    size_t hl = strlen(here);
    char *beside = malloc(hl + nlen + 2);
    if (!beside)
        return NULL;
    snprintf(beside, hl + nlen + 2, "%s/%.*s", here, (int)nlen, name);
    if (quoted && is_file(beside))
        return beside;
    free(beside);
    for (size_t i = 0; i < u->headers.n; i++) {
        const char *h = u->headers.v[i];
        size_t l = strlen(h);
        if (l > nlen && h[l - nlen - 1] == '/' && memcmp(h + l - nlen, name, nlen) == 0) {
            add_include(&x->args, h, l - nlen - 1);
            return strdup(h);
        }
    }
    return NULL;
}

/** Scans @p file (the unit, then the headers it includes, to a depth of 16) for includes;
 *  @p seen holds the files already scanned for this unit. */
static void scan_includes(struct lint_units *u, struct lint_unit *x, const char *file,
                          struct lint_strlist *seen, int depth)
{
    if (depth > 16 || lint_strlist_has(seen, file, strlen(file)))
        return;
    lint_strlist_add(seen, file);
    char *text, why_buf[128];
    size_t len;
    const char *why;
    if (lint_read_file(file, (size_t)64 << 20, &text, &len, &why, why_buf, sizeof why_buf))
        return;
    char *here = strdup(file);
    char *slash = here ? strrchr(here, '/') : NULL;
    if (!slash) {
        free(here);
        free(text);
        return;
    }
    *slash = '\0';
    for (char *p = text; p < text + len;) {
        char *eol = p;
        while (eol < text + len && *eol != '\n' && *eol != '\r')
            eol++;
        char *q = p;
        while (q < eol && (*q == ' ' || *q == '\t'))
            q++;
        if (q < eol && *q == '#') {
            q++;
            while (q < eol && (*q == ' ' || *q == '\t'))
                q++;
            if (eol - q > 7 && memcmp(q, "include", 7) == 0) {
                q += 7;
                while (q < eol && (*q == ' ' || *q == '\t'))
                    q++;
                char close = q < eol && *q == '"' ? '"' : q < eol && *q == '<' ? '>' : 0;
                char *e = close ? memchr(q + 1, close, (size_t)(eol - q - 1)) : NULL;
                if (e && e > q + 1) {
                    char *h = resolve(u, x, here, q + 1, (size_t)(e - q - 1), close == '"');
                    if (h)
                        scan_includes(u, x, h, seen, depth + 1);
                    free(h);
                }
            }
        }
        p = eol + 1;
    }
    free(here);
    free(text);
}

void lint_derive_flags(struct lint_units *u)
{
    for (size_t i = 0; i < u->n; i++) {
        struct lint_unit *x = &u->v[i];
        if (x->from_db)
            continue;
        struct lint_strlist seen = {0};
        scan_includes(u, x, x->abs, &seen, 0);
        lint_strlist_free(&seen);
        for (size_t r = 0; r < u->roots.n; r++) {
            size_t n = strlen(u->roots.v[r]) + 16;
            char *inc = malloc(n);
            if (!inc)
                continue;
            snprintf(inc, n, "%s/include", u->roots.v[r]);
            if (is_dir(inc) && strncmp(x->abs, u->roots.v[r], strlen(u->roots.v[r])) == 0)
                add_include(&x->args, inc, strlen(inc));
            free(inc);
        }
    }
}

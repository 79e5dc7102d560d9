/* Flags for units without a compilation database: the analyzer needs the include paths a
 * build would give. They are derived from the tree: for each `#include "x.h"` that is not
 * beside the unit, the folders under the walked roots that hold x.h (by its path's tail);
 * and each root's include/ folder. The CUDA toolkit is found as scripts/setup finds it. */
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

/** For `#include "name"` in a unit of folder @p here: the folders of known headers whose
 *  path ends in "/name", when name is not found beside the unit. */
static void resolve(struct lint_units *u, struct lint_unit *x, const char *here, const char *name,
                    size_t nlen)
{
    size_t hl = strlen(here);
    char *beside = malloc(hl + nlen + 2);
    if (!beside)
        return;
    snprintf(beside, hl + nlen + 2, "%s/%.*s", here, (int)nlen, name);
    int found = is_file(beside);
    free(beside);
    if (found)
        return;
    for (size_t i = 0; i < u->headers.n; i++) {
        const char *h = u->headers.v[i];
        size_t l = strlen(h);
        if (l > nlen && h[l - nlen - 1] == '/' && memcmp(h + l - nlen, name, nlen) == 0) {
            add_include(&x->args, h, l - nlen - 1);
            return;
        }
    }
}

/** Scans a unit's text for quoted includes. */
static void scan_includes(struct lint_units *u, struct lint_unit *x)
{
    char *text, why_buf[128];
    size_t len;
    const char *why;
    if (lint_read_file(x->abs, (size_t)64 << 20, &text, &len, &why, why_buf, sizeof why_buf))
        return;
    char *here = strdup(x->abs);
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
                if (q < eol && *q == '"') {
                    char *e = memchr(q + 1, '"', (size_t)(eol - q - 1));
                    if (e && e > q + 1)
                        resolve(u, x, here, q + 1, (size_t)(e - q - 1));
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
        scan_includes(u, x);
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

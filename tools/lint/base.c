/* The base every piece of `gpumem lint` stands on, and nothing above it: growable arrays and
 * lists of strings, a hash, paths made absolute and normalized, reading a file whole without
 * ever blocking on a FIFO or a device, and a clock. The options (config.c) and the units
 * (files.c) both use it; neither calls the other's functions through it. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

uint64_t lint_fnv(uint64_t h, const void *s, size_t len)
{
    const unsigned char *p = s;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

int lint_strlist_addn(struct lint_strlist *l, const char *s, size_t len)
{
    char **v = lint_array_grow(l->v, l->n + 1, &l->cap, sizeof *v);
    if (!v)
        return -1;
    l->v = v;
    char *d = malloc(len + 1);
    if (!d)
        return -1;
    memcpy(d, s, len);
    d[len] = '\0';
    l->v[l->n++] = d;
    l->v[l->n] = NULL; /* usable as an argument vector */
    return 0;
}

int lint_strlist_add(struct lint_strlist *l, const char *s)
{
    return lint_strlist_addn(l, s, strlen(s));
}

int lint_str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/** The next item of a comma- or space-separated list: its start and @p len, or NULL when
 *  the list at *@p s is used up. Moves *@p s past the item. */
const char *lint_list_next(const char **s, size_t *len)
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
    while ((item = lint_list_next(&s, &len)) != NULL)
        lint_strlist_addn(l, item, len);
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

char *lint_path_normalize(const char *path)
{
    size_t n = strlen(path);
    char *out = malloc(n + 2);
    /* Where each kept component starts in out, and whether it is "..". */
    size_t *starts = malloc((n / 2 + 2) * sizeof *starts);
    if (!out || !starts) {
        free(out);
        free(starts);
        return NULL;
    }
    size_t base = path[0] == '/' ? 1 : 0, k = base, depth = 0, ups = 0;
    if (base)
        out[0] = '/';
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        const char *e = p;
        while (*e && *e != '/')
            e++;
        size_t len = (size_t)(e - p);
        int dotdot = len == 2 && p[0] == '.' && p[1] == '.';
        if (len == 0 || (len == 1 && p[0] == '.')) {
            /* nothing */
        } else if (dotdot && depth > ups) {
            depth--;
            k = depth ? starts[depth] - 1 : base;
        } else if (dotdot && base) {
            /* "/.." is "/" */
        } else {
            if (k > base)
                out[k++] = '/';
            starts[depth++] = k;
            if (dotdot)
                ups = depth;
            memcpy(out + k, p, len);
            k += len;
        }
        p = e;
    }
    if (k == 0)
        out[k++] = '.';
    out[k] = '\0';
    free(starts);
    return out;
}

char *lint_path_absolute(const char *path)
{
    if (path[0] == '/')
        return lint_path_normalize(path);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return lint_path_normalize(path);
    size_t n = strlen(cwd) + strlen(path) + 2;
    char *joined = malloc(n);
    if (!joined)
        return NULL;
    snprintf(joined, n, "%s/%s", cwd, path);
    char *r = lint_path_normalize(joined);
    free(joined);
    return r;
}

int lint_read_file(const char *path, size_t max, char **buf, size_t *len, const char **why,
                   char *why_buf, size_t why_cap)
{
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    *buf = NULL;
    *len = 0;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why_buf, why_cap, "%s", strerror(errno));
        *why = why_buf;
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = S_ISDIR(st.st_mode) ? "it is a folder, not a file"
                                   : "not a regular file (a FIFO, socket or device)";
        close(fd);
        return -1;
    }
    if ((unsigned long long)st.st_size > max) {
        snprintf(why_buf, why_cap, "too big (%lld bytes; the limit is %zu, see --max-file-size)",
                 (long long)st.st_size, max);
        *why = why_buf;
        close(fd);
        return -1;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *b = malloc(cap);
    if (!b) {
        *why = "out of memory";
        close(fd);
        return -1;
    }
    for (;;) {
        if (n + 1 >= cap) {
            /* The file grew while it was read: keep reading up to the limit. */
            char *nb = cap > max + 1 ? NULL : realloc(b, cap * 2);
            if (!nb) {
                free(b);
                close(fd);
                snprintf(why_buf, why_cap, "grew past the limit of %zu bytes while read", max);
                *why = why_buf;
                return -1;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why_buf, why_cap, "%s", strerror(errno));
            *why = why_buf;
            free(b);
            close(fd);
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

double lint_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

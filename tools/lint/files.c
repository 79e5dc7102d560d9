/* Which files to lint: paths on the command line (folders walked recursively) and
 * compilation databases; and reading one file whole, refusing what is not source. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static int excluded(const struct lint_options *o, const char *path)
{
    for (size_t i = 0; i < o->exclude.n; i++)
        if (fnmatch(o->exclude.v[i], path, 0) == 0)
            return 1;
    return 0;
}

static int has_extension(const struct lint_options *o, const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && lint_strlist_has(&o->extensions, dot, strlen(dot));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void walk_dir(const struct lint_options *o, const char *dir, struct lint_strlist *files,
                     int depth)
{
    if (depth > 64)
        return;
    DIR *d = opendir(dir);
    if (!d) {
        if (!o->quiet)
            fprintf(stderr, "gpumem lint: warning: skipping folder %s: %s\n", dir,
                    strerror(errno));
        return;
    }
    struct lint_strlist names = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        /* Hidden entries (.git, .cache) are never source worth linting. */
        if (e->d_name[0] == '.')
            continue;
        lint_strlist_add(&names, e->d_name);
    }
    closedir(d);
    if (names.n)
        qsort(names.v, names.n, sizeof *names.v, cmp_str);
    for (size_t i = 0; i < names.n; i++) {
        size_t len = strlen(dir) + strlen(names.v[i]) + 2;
        char *path = malloc(len);
        if (!path)
            break;
        snprintf(path, len, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", names.v[i]);
        struct stat st;
        if (excluded(o, path) || lstat(path, &st) != 0) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode))
            walk_dir(o, path, files, depth + 1);
        else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && has_extension(o, names.v[i])) {
            /* A link to a file is followed when it is read; a link to a folder is not
             * walked (it may loop). */
            struct stat target;
            if (!S_ISLNK(st.st_mode) || (stat(path, &target) == 0 && S_ISREG(target.st_mode)))
                lint_strlist_add(files, path);
        }
        free(path);
    }
    lint_strlist_free(&names);
}

int lint_collect_path(const struct lint_options *o, const char *path, struct lint_strlist *files)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "gpumem lint: error: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        walk_dir(o, path, files, 0);
    else if (!excluded(o, path))
        lint_strlist_add(files, path);
    return 0;
}

int lint_collect_compdb(const struct lint_options *o, const char *path, struct lint_strlist *files)
{
    char buf[4096];
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(buf, sizeof buf, "%s/compile_commands.json", path);
        path = buf;
    }
    json_error_t err;
    json_t *db = json_load_file(path, 0, &err);
    if (!db) {
        fprintf(stderr, "gpumem lint: error: %s:%d: cannot read compilation database: %s\n", path,
                err.line, err.text);
        return -1;
    }
    if (!json_is_array(db)) {
        fprintf(stderr, "gpumem lint: error: %s: a compilation database is a JSON array\n", path);
        json_decref(db);
        return -1;
    }
    size_t i;
    json_t *entry;
    json_array_foreach(db, i, entry) {
        const char *file = json_string_value(json_object_get(entry, "file"));
        const char *dir = json_string_value(json_object_get(entry, "directory"));
        if (!file) {
            fprintf(stderr, "gpumem lint: warning: %s: entry %zu has no \"file\"; skipped\n",
                    path, i);
            continue;
        }
        char full[4096];
        if (file[0] == '/' || !dir)
            snprintf(full, sizeof full, "%s", file);
        else
            snprintf(full, sizeof full, "%s/%s", dir, file);
        if (excluded(o, full) || lint_strlist_has(files, full, strlen(full)))
            continue;
        lint_strlist_add(files, full);
    }
    json_decref(db);
    return 0;
}

int lint_read_file(const char *path, size_t max, char **buf, size_t *len, const char **why,
                   char *why_buf, size_t why_cap)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    *buf = NULL;
    *len = 0;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why_buf, why_cap, "cannot read: %s", strerror(errno));
        *why = why_buf;
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why_buf, why_cap, "not a regular file");
        *why = why_buf;
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
        snprintf(why_buf, why_cap, "out of memory");
        *why = why_buf;
        close(fd);
        return -1;
    }
    for (;;) {
        if (n + 1 >= cap) {
            /* The file grew while we read it: keep reading up to the limit. */
            if (cap > max + 1) {
                free(b);
                close(fd);
                snprintf(why_buf, why_cap, "too big (grew past the limit of %zu bytes)", max);
                *why = why_buf;
                return -1;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                close(fd);
                snprintf(why_buf, why_cap, "out of memory");
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
            snprintf(why_buf, why_cap, "cannot read: %s", strerror(errno));
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

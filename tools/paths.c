/* What the tools check of the paths they are given (tool.h). */
#define _GNU_SOURCE /* realpath */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

int tool_path_name(const char *path, char *out)
{
    char dir[PATH_MAX];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--; /* "build/" names build */
    if (n >= sizeof dir)
        return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : dir;
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || !*base)
        return realpath(dir, out) ? 0 : -1;
    char folder[PATH_MAX];
    if (!slash)
        snprintf(folder, sizeof folder, ".");
    else
        snprintf(folder, sizeof folder, "%.*s", slash == dir ? 1 : (int)(slash - dir), dir);
    char resolved[PATH_MAX];
    if (!realpath(folder, resolved))
        return -1;
    int w = snprintf(out, PATH_MAX, "%s%s%s", resolved, strcmp(resolved, "/") ? "/" : "", base);
    return w > 0 && w < PATH_MAX ? 0 : -1;
}

int tool_same_file(const char *a, const char *b)
{
    struct stat x, y;
    if (stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino)
        return 1;
    char na[PATH_MAX], nb[PATH_MAX];
    return tool_path_name(a, na) == 0 && tool_path_name(b, nb) == 0 && strcmp(na, nb) == 0;
}

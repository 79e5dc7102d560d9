/* Files for a test in $TMPDIR (or /tmp), named by the test's process and a name of the caller's,
 * into the caller's buffer, so that two stay apart. */
#ifndef GPUMEM_TESTS_TEMP_FILE_H
#define GPUMEM_TESTS_TEMP_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The path of the test's file called name; NULL when it does not fit in path. */
static inline const char *temp_path(char *path, size_t n, const char *name)
{
    const char *tmp = getenv("TMPDIR");
    int len = snprintf(path, n, "%s/gpumem-test-%d-%s", tmp && *tmp ? tmp : "/tmp",
                       (int)getpid(), name);
    return len > 0 && (size_t)len < n ? path : NULL;
}

/* The test's file called name, holding text; its path, or NULL when it could not be written. */
static inline const char *temp_file(char *path, size_t n, const char *name, const char *text)
{
    if (!temp_path(path, n, name))
        return NULL;
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? path : NULL;
}

#endif

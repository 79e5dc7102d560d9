/* The loaders fuzzed here take a path: each input is written to a file of this process's own
 * first. Returns the path, or NULL when the file could not be written. */
#ifndef GPUMEM_FUZZ_INPUT_FILE_H
#define GPUMEM_FUZZ_INPUT_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *input_file(const char *name, const uint8_t *data, size_t n)
{
    static char path[512];
    const char *tmp = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/gpumem-fuzz-%s-%d", tmp && *tmp ? tmp : "/tmp", name,
             (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    int ok = fwrite(data, 1, n, f) == n;
    if (fclose(f) != 0 || !ok)
        return NULL;
    return path;
}

#endif

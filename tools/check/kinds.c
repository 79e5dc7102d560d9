/* Names of gpumem check's finding kinds: the reports', the JSON's and the suppression files'. */
#include <string.h>

#include "engine.h"

static const char *const kind_names[CHECK_KIND_COUNT] = {
    "leak", "mismatched-release", "double-free", "invalid-free", "interior-free", "failed-alloc",
    "failed-call"};

const char *check_kind_name(int kind)
{
    return kind >= 0 && kind < CHECK_KIND_COUNT ? kind_names[kind] : NULL;
}

int check_kind_from_name(const char *name)
{
    for (int k = 0; k < CHECK_KIND_COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0)
            return k;
    return -1;
}

/* gpumem check's vocabularies: the names of its finding kinds (the reports', the JSON's and the
 * suppression files'), and which CUDA call releases which memory kind (src/kinds.def, the
 * library's and gpumem lint's too). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "engine_int.h"
#include "gpumem.h"

enum { RUNTIME, DRIVER };
static const struct {
    const char *call;
    int kind, api, right;
} releases[] = {
#define RELEASE(call, kind, api, right) {#call, GPUMEM_KIND_##kind, api, right},
#include "kinds.def"
};

unsigned check_release_kinds(const char *call)
{
    unsigned mask = 0;
    for (size_t i = 0; i < sizeof releases / sizeof *releases; i++)
        if (strcmp(releases[i].call, call) == 0)
            mask |= 1u << releases[i].kind;
    return mask;
}

const char *check_right_release(int kind, const char *made_by)
{
    /* A mapping is released by undoing it; everything else by its kind's release, in the API
     * (runtime "cuda...", driver "cu...") of the call that made it. */
    if (made_by && strcmp(made_by, "cuMemMap") == 0)
        return "cuMemUnmap";
    int api = made_by && strncmp(made_by, "cuda", 4) != 0 && strncmp(made_by, "cu", 2) == 0
                  ? DRIVER : RUNTIME;
    const char *other = NULL;
    for (size_t i = 0; i < sizeof releases / sizeof *releases; i++) {
        if (releases[i].kind != kind || !releases[i].right)
            continue;
        if (releases[i].api == api)
            return releases[i].call;
        other = other ? other : releases[i].call;
    }
    return other ? other : "cudaFree";
}

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

int check_leak_kinds_parse(const char *list)
{
    unsigned kinds = 0;
    char copy[256];
    snprintf(copy, sizeof copy, "%s", list ? list : "");
    char *save = NULL;
    for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "definite") == 0)
            kinds |= LEAK_DEFINITE;
        else if (strcmp(w, "reachable") == 0)
            kinds |= LEAK_REACHABLE;
        else if (strcmp(w, "all") == 0)
            kinds |= LEAK_DEFINITE | LEAK_REACHABLE;
        else if (strcmp(w, "none") != 0 && strcmp(w, "possible") != 0 && strcmp(w, "indirect") != 0)
            return -1; /* possible and indirect: valgrind's, never found here (none is) */
    }
    return (int)kinds;
}

const char *check_leak_kind_name(int leak_kind)
{
    return leak_kind == LEAK_DEFINITE ? "definite" : leak_kind == LEAK_REACHABLE ? "reachable" : NULL;
}


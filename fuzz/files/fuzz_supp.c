/* libFuzzer harness of `gpumem check`'s suppression files (tools/check/suppress.c). Inputs
 * whose first byte is odd are a suppression file, loaded and matched against a fixed stack
 * for every finding kind. Even ones are names (call, then frames' functions, files and
 * objects, separated by bytes 1): the suppression generated for that finding must load and
 * match it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "input_file.h"
#include "suppress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void match_fixed(void)
{
    static const char *const fn[8] = {"f0",   "cudaFree", "main", "a*b",
                                      "x[1]", "?",        "\\",   "ns::g<int>"};
    gpumem__frame frames[8];
    for (int i = 0; i < 8; i++)
        frames[i] = (gpumem__frame){fn[i], i % 2 ? "dir/k.cu" : NULL, 7 * i, 0,
                                    i % 3 ? "/usr/lib/libx.so" : NULL, 0};
    for (int k = 0; k < CHECK_KIND_COUNT; k++)
        check_supp_match(k, k % 2 ? "cudaFree" : NULL, frames, 8);
}

static void generated_matches(const uint8_t *data, size_t size, int kind)
{
    char names[4096];
    size_t m = size < sizeof names - 1 ? size : sizeof names - 1;
    memcpy(names, data, m);
    names[m] = '\0';
    for (size_t i = 0; i < m; i++) /* one name a line: no name holds a line break */
        if (names[i] == '\n' || names[i] == '\r')
            names[i] = ' ';
    char *part[5];
    int np = 0;
    for (char *s = names; np < 5;) {
        part[np++] = s;
        char *sep = strchr(s, '\1');
        if (!sep)
            break;
        *sep = '\0';
        s = sep + 1;
    }
    gpumem__frame frames[4];
    int nf = 0;
    for (int i = 1; i < np; i++)
        frames[nf++] = (gpumem__frame){part[i][0] ? part[i] : "???", i == 2 ? part[i] : NULL, i,
                                       0, i == 3 ? part[i] : NULL, 0};
    const char *call = part[0][0] ? part[0] : NULL;
    char err[512];
    const char *path = input_file("supp", (const uint8_t *)"", 0);
    FILE *f = path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    check_supp_generate(f, kind, call, frames, nf);
    fclose(f);
    if (check_supp_load(path, err, sizeof err) != 0) {
        fprintf(stderr, "a generated suppression does not load: %s\n", err);
        abort();
    }
    if (!check_supp_match(kind, call, frames, nf)) {
        fprintf(stderr, "a generated suppression does not match its finding\n");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char err[512];
    check_supp_clear();
    if (data[0] & 1) {
        const char *path = input_file("supp", data + 1, size - 1);
        if (path && check_supp_load(path, err, sizeof err) == 0)
            match_fixed();
    } else {
        generated_matches(data + 1, size - 1, (data[0] >> 1) % CHECK_KIND_COUNT);
    }
    check_supp_clear();
    return 0;
}

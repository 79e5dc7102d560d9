/* libFuzzer harness: any bytes as compile_commands.json, through the reader, the shell
 * splitter and the nvcc-to-clang flag translation. */
#include "lint_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lint_options o;
    struct lint_units u = {0};
    lint_options_init(&o);
    lint_strlist_add(&o.exclude, "*/excluded/*");
    lint_compdb_parse(&o, (const char *)data, size, "fuzz.json", &u);
    /* The same bytes as one shell command line, translated as a compiler's. */
    char *line = malloc(size + 1);
    if (line) {
        memcpy(line, data, size);
        line[size] = '\0';
        struct lint_strlist words = {0}, flags = {0};
        const char *lang = "c++";
        lint_shell_split(line, &words);
        lint_translate_args(words.v, words.n, "/work", &flags, &lang);
        lint_strlist_free(&words);
        lint_strlist_free(&flags);
        free(line);
    }
    lint_units_free(&u);
    lint_options_free(&o);
    return 0;
}

/* libFuzzer harness: any bytes as a source file for the suppression-comment lexer. Checks
 * that every line it can name is inside its table. */
#include "lint_internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lint_suppress s;
    if (lint_suppress_parse((const char *)data, size, &s) != 0)
        return 0;
    for (uint32_t line = 0; line < s.n_lines + 2; line++)
        (void)lint_suppressed(&s, (int)(line % LINT_RULE_COUNT), line);
    /* The table has a slot for every line and the two past the end. */
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        if (data[i] == '\n' || (data[i] == '\r' && !(i + 1 < size && data[i + 1] == '\n')))
            lines++;
    if (s.n_lines != lines + 2)
        abort();
    lint_suppress_free(&s);
    return 0;
}

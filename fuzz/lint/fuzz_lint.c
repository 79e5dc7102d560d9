/* libFuzzer harness for `gpumem lint`: any bytes as a source file, through the parser, every
 * rule, and the JSON and SARIF writers. Build and run with fuzz/lint/run.sh. */
#define _POSIX_C_SOURCE 200809L
#include "lint_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static TSParser *parser;
static struct lint_options opt;
static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!parser) {
        parser = lint_parser_new();
        lint_options_init(&opt);
        sink = fopen("/dev/null", "w");
        if (!parser || !sink)
            abort();
    }
    struct lint_file_result r;
    memset(&r, 0, sizeof r);
    r.path = strdup("fuzz.cu");
    lint_analyze_buffer(&opt, parser, "fuzz.cu", (const char *)data, size, &r);
    struct lint_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.files = 1;
    /* The first byte picks the writer, so all three stay covered without tripling the time. */
    opt.format = size ? data[0] % 3 : 0;
    if (lint_write(&opt, &r, 1, &sum, sink) != 0)
        abort();
    lint_result_free(&r);
    ts_parser_reset(parser);
    return 0;
}

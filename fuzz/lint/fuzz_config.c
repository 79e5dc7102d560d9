/* libFuzzer harness: any bytes as a `.gpumem-lint` config file. */
#include "lint_internal.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lint_options o;
    lint_options_init(&o);
    lint_config_parse(&o, (const char *)data, size, "fuzz.gpumem-lint");
    lint_options_free(&o);
    return 0;
}

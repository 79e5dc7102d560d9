/* libFuzzer harness: any bytes as the analyzer's SARIF and as a --baseline file, then the
 * findings through merging and fingerprints. (The writers are jansson's dumps of what the
 * reader kept; fuzzing them too made each run three times slower.) */
#include "lint_internal.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lint_findings f = {0};
    struct lint_strlist base = {0};
    char why[256];
    lint_sarif_parse((const char *)data, size, 0, &f, why, sizeof why);
    size_t once = f.n;
    lint_sarif_parse((const char *)data, size, 1, &f, why, sizeof why);
    lint_baseline_parse((const char *)data, size, &base, why, sizeof why);
    struct lint_summary sum = {0};
    lint_findings_finish(&f, &sum);
    /* Two units gave the same document: every finding must have been merged. */
    if (f.n + sum.merged != 2 * once || sum.merged < once)
        abort();
    lint_findings_free(&f);
    lint_strlist_free(&base);
    return 0;
}

/* libFuzzer harness of `gpumem report` (tools/report/): the input read as a trace, and what
 * loads written as each view (the summary, PyTorch's memory snapshot, Perfetto's protobuf,
 * the HTML page); a refused trace must leave nothing in the report_trace. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "input_file.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = input_file("trace", data, size);
    if (!in)
        return 0;
    char path[512], out[540], err[1024];
    snprintf(path, sizeof path, "%s", in);
    snprintf(out, sizeof out, "%s.out", path);
    report_trace t;
    if (report_load(path, &t, err, sizeof err) != 0) {
        if (t.process || t.sites || t.events || t.allocs || t.nsites || t.nevents)
            abort(); /* report.h: nothing to free after -1 */
        return 0;
    }
    FILE *sink = fopen("/dev/null", "w");
    if (sink) {
        report_summary(&t, sink, 5);
        fclose(sink);
    }
    const char *names[] = {path};
    report_memory_viz(&t, out, 0, err, sizeof err);
    report_perfetto(&t, names, 1, out, err, sizeof err);
    report_html(&t, out, err, sizeof err);
    remove(out);
    report_free(&t);
    return 0;
}

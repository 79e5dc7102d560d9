/* `gpumem report`: a trace as a self-contained HTML timeline, or as a text summary. */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "gpumem.h"
#include "tool.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gpumem report --html TRACE -o FILE.html\n"
            "       gpumem report --summary TRACE\n"
            "       gpumem report --merge [--json=OUT.json] [-o OUT_TRACE.json] FILE...\n"
            "\n"
            "Shows a trace of a program's CUDA memory over time: one that GPUMEM_TRACE=FILE\n"
            "(programs using gpumem) or `gpumem check --trace=FILE -- PROGRAM` (any CUDA\n"
            "program) wrote. The trace itself also opens in https://ui.perfetto.dev and\n"
            "chrome://tracing.\n"
            "\n"
            "options (each as --opt VALUE or --opt=VALUE):\n"
            "  --html=TRACE        write one HTML file (no network needed) that a browser opens\n"
            "                      from disk: live memory over time stacked by call site, a\n"
            "                      track per memory kind and device, the peak and what was live\n"
            "                      then, hover, click and drag to zoom, the largest call sites\n"
            "  -o, --output=FILE   where --html writes (required with --html)\n"
            "  --summary=TRACE     print the peak, the call sites live at the peak and what was\n"
            "                      still live at the end, as text (for terminals and CI logs)\n"
            "  --top=N             call sites to list in the summary (default 10)\n"
            "  --merge FILE...     the reports (gpumem check --json) and traces of a job's\n"
            "                      processes as one: `gpumem report --merge --help` says more\n"
            "  -h, --help, --version\n"
            "\n"
            "exit status: 0 done; 1 the trace cannot be read or the output cannot be written;\n"
            "2 usage error.\n");
}

/* "12.345 ms": ns in the unit that suits it. */
static const char *secs(int64_t ns, char *buf, size_t n)
{
    if (ns < 1000000)
        snprintf(buf, n, "%.3f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.3f s", (double)ns / 1e9);
    return buf;
}

static void print_stack(FILE *out, char **frames, const char *indent, int max)
{
    for (int i = 0; frames && frames[i] && i < max; i++)
        fprintf(out, "%s%s %s\n", indent, i ? "by" : "at", frames[i]);
}

void report_summary(const report_trace *t, FILE *out, int top)
{
    char b1[32];
    fprintf(out, "gpumem report: %s\n", t->process ? t->process : "(unnamed process)");
    char tb[32];
    fprintf(out, "  %zu allocations, %zu events over %s, %zu call sites%s\n", t->nallocs,
            t->nevents, secs(t->duration, tb, sizeof tb), t->nsites,
            t->complete ? "" : "; the trace ends early (the program crashed or was killed)");
    if (t->unmatched_releases)
        fprintf(out, "  %llu releases of allocations the trace does not have were left out\n",
                (unsigned long long)t->unmatched_releases);
    if (t->dropped)
        fprintf(out, "  warning: the traced program could not record %llu events (no memory for "
                     "the trace's buffers); releases among them are missing, so memory counted "
                     "live at the end may have been released\n",
                (unsigned long long)t->dropped);
    if (t->bad_times)
        fprintf(out, "  %llu events with a timestamp that is no time (NaN, infinite or out of "
                     "range) were left out\n",
                (unsigned long long)t->bad_times);
    if (!t->nevents) {
        fprintf(out, "no allocations in the trace\n");
        return;
    }
    uint32_t *rank = report_sites_ranked(t);
    if (!rank)
        return;
    fprintf(out, "\npeak: %s live at %s\n", report_bytes(t->peak_bytes, b1, sizeof b1),
            secs(t->peak_t, tb, sizeof tb));
    fprintf(out, "  live at the peak, by call site:\n");
    int shown = 0;
    int64_t rest = 0;
    size_t rest_sites = 0;
    for (size_t i = 0; i < t->nsites; i++) {
        const report_site *s = &t->sites[rank[i]];
        if (s->at_peak <= 0)
            continue;
        if (shown >= top) {
            rest += s->at_peak;
            rest_sites++;
            continue;
        }
        shown++;
        fprintf(out, "  %12s in %llu %s allocation%s at %s\n",
                report_bytes(s->at_peak, b1, sizeof b1), (unsigned long long)s->count_at_peak,
                gpumem_kind_name(s->kind), s->count_at_peak == 1 ? "" : "s", s->name);
        print_stack(out, report_stack(t, s->stack), "                 ", 6);
    }
    if (rest_sites)
        fprintf(out, "  %12s in %zu more call site%s\n", report_bytes(rest, b1, sizeof b1),
                rest_sites, rest_sites == 1 ? "" : "s");
    fprintf(out, "\npeak by memory kind and device:\n");
    for (size_t i = 0; i < t->ntracks; i++) {
        char name[64];
        fprintf(out, "  %-28s %12s at %s\n", report_track_name(t, i, name, sizeof name),
                report_bytes(t->tracks[i].peak, b1, sizeof b1), secs(t->tracks[i].peak_t, tb, sizeof tb));
    }
    if (t->leaked_count) {
        fprintf(out, "\nleaks at end: %s in %llu allocation%s from %llu call site%s%s\n",
                report_bytes(t->leaked_bytes, b1, sizeof b1),
                (unsigned long long)t->leaked_count, t->leaked_count == 1 ? "" : "s",
                (unsigned long long)t->leaked_sites, t->leaked_sites == 1 ? "" : "s",
                t->complete ? "" : " (the trace ends early: some may have been released later)");
        shown = 0;
        for (size_t i = 0; i < t->nsites && shown < top; i++) {
            const report_site *s = &t->sites[rank[i]];
            if (!s->leaked_count)
                continue;
            shown++;
            fprintf(out, "  %12s in %llu %s allocation%s at %s\n",
                    report_bytes(s->leaked, b1, sizeof b1), (unsigned long long)s->leaked_count,
                    gpumem_kind_name(s->kind), s->leaked_count == 1 ? "" : "s", s->name);
            print_stack(out, report_stack(t, s->stack), "                 ", 6);
        }
    } else {
        fprintf(out, "\nleaks at end: none (every allocation in the trace was released)\n");
    }
    if (t->nfailures) {
        fprintf(out, "\nfailed allocations: %zu\n", t->nfailures);
        for (size_t i = 0; i < t->nfailures && (int)i < top; i++) {
            const report_failure *f = &t->failures[i];
            fprintf(out, "  %s: %s: %s %s memory on device %d at %s%s%s\n",
                    secs(f->t, tb, sizeof tb), f->what, report_bytes(f->bytes, b1, sizeof b1),
                    gpumem_kind_name(f->kind), f->device, f->site,
                    f->cuda_error ? ", " : "", f->cuda_error ? f->cuda_error : "");
        }
    }
    free(rank);
    report_pools_summary(t, out);
}

int gpumem_report_main(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) /* merging has options of its own */
        if (strcmp(argv[i], "--merge") == 0)
            return report_merge_main(argc, argv);
    const char *html = NULL, *summary = NULL, *output = NULL;
    int top = 10;
    enum { OPT_HTML, OPT_SUMMARY, OPT_OUTPUT, OPT_TOP };
    static const cli_opt opts[] = {{"--html", 0, CLI_VALUE, OPT_HTML},
                                   {"--summary", 0, CLI_VALUE, OPT_SUMMARY},
                                   {"--output", 'o', CLI_VALUE, OPT_OUTPUT},
                                   {"--top", 0, CLI_VALUE, OPT_TOP}};
    static const cli_cmd cmd = {"report", opts, CLI_COUNT(opts), usage, CLI_NO_OPERANDS};
    cli c;
    cli_start(&c, &cmd, argc, argv);
    for (int id; (id = cli_next(&c)) != CLI_DONE;) {
        const char *v = c.value;
        switch (id) {
        case CLI_EXIT:
            return c.status;
        case OPT_HTML:
        case OPT_SUMMARY:
        case OPT_OUTPUT:
            if (!*v)
                return cli_usage_error(&c, "%s needs a path", c.opt);
            *(id == OPT_HTML ? &html : id == OPT_SUMMARY ? &summary : &output) = v;
            break;
        case OPT_TOP: {
            char *end;
            long n = strtol(v, &end, 10);
            if (!*v || *end || n < 1 || n > 100000)
                return cli_usage_error(&c, "--top takes a number from 1 to 100000, not '%s'", v);
            top = (int)n;
            break;
        }
        }
    }
    if (!html && !summary)
        return cli_usage_error(&c, "%s",
                               "say what to make: --html TRACE -o FILE.html, or --summary TRACE");
    if (html && summary)
        return cli_usage_error(&c, "%s", "--html and --summary are separate runs; give one of them");
    if (html && !output)
        return cli_usage_error(&c, "%s", "--html needs -o FILE.html, the file to write");
    if (!html && output)
        return cli_usage_error(&c, "%s", "-o goes with --html");
    if (html && tool_same_file(html, output))
        return cli_usage_error(&c, "-o %s is the trace itself, which the page would replace; "
                                   "name another file",
                               output);

    report_trace t;
    char err[1024];
    if (report_load(html ? html : summary, &t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem report: error: %s\n", err);
        return 1;
    }
    if (!t.complete)
        fprintf(stderr, "gpumem report: warning: %s ends early (no end marker: the program "
                        "crashed, was killed, or is still running); showing what it has\n",
                html ? html : summary);
    else if (t.frames_cut)
        fprintf(stderr, "gpumem report: warning: %s ends early, inside its stackFrames table "
                        "(every event is there, so this report is whole; other viewers such as "
                        "Perfetto may refuse the file)\n",
                html ? html : summary);
    /* Damage the output cannot show (the HTML page has no place for it): said on stderr for
     * every output, and the report made of the rest, as for a trace that ends early. */
    if (t.bad_times)
        fprintf(stderr, "gpumem report: warning: %s: %llu event%s with a timestamp that is no "
                        "time (NaN, infinite or out of range) left out; a release among them "
                        "makes its allocation look live to the end\n",
                html ? html : summary, (unsigned long long)t.bad_times,
                t.bad_times == 1 ? "" : "s");
    if (t.dropped)
        fprintf(stderr, "gpumem report: warning: %s: the traced program could not record %llu "
                        "event%s; a release among them makes its allocation look live to the "
                        "end\n",
                html ? html : summary, (unsigned long long)t.dropped, t.dropped == 1 ? "" : "s");
    int rc = 0;
    if (summary) {
        report_summary(&t, stdout, top);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "gpumem report: error: writing the summary failed\n");
            rc = 1;
        }
    } else if (report_html(&t, output, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem report: error: %s\n", err);
        rc = 1;
    }
    report_free(&t);
    return rc;
}

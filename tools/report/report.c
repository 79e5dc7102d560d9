/* `gpumem report`: a trace as a self-contained HTML timeline, or as a text summary. */
#include "report.h"

#include <errno.h>
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
            "       gpumem report --memory-viz TRACE -o FILE.pickle\n"
            "       gpumem report --perfetto TRACE [--perfetto TRACE...] -o FILE.pftrace\n"
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
            "  --summary=TRACE     print the peak, the call sites live at the peak and what was\n"
            "                      still live at the end, as text (for terminals and CI logs)\n"
            "  --memory-viz=TRACE  write PyTorch's memory snapshot (the pickle that\n"
            "                      torch.cuda.memory._dump_snapshot writes): open it in\n"
            "                      https://pytorch.org/memory_viz or torch.cuda._memory_viz;\n"
            "                      every allocation of the program, by any allocator\n"
            "  --perfetto=TRACE    write Perfetto's own trace format (protobuf TrackEvent):\n"
            "                      counters in bytes per memory kind and device, a slice per\n"
            "                      allocation by call site, arrows from each allocation to its\n"
            "                      release; give --perfetto once per process (the ranks of a\n"
            "                      job: --trace=trace.%%r.json) to see them side by side\n"
            "  -o, --output=FILE   where --html, --memory-viz and --perfetto write (required)\n"
            "  --top=N             call sites to list in the summary (default 10)\n"
            "  --max-entries=N     --memory-viz: keep the last N trace entries of each device\n"
            "                      (default: all), as torch.cuda.memory._record_memory_history's\n"
            "                      max_entries does\n"
            "  --merge FILE...     the reports (gpumem check --json) and traces of a job's\n"
            "                      processes as one: `gpumem report --merge --help` says more\n"
            "  -h, --help, --version\n"
            "\n"
            "exit status: 0 done; 1 a trace cannot be read or the output cannot be written;\n"
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

/* The peak of each memory kind and device, in a table. */
static void print_track_peaks(const report_trace *t, FILE *out)
{
    fprintf(out, "\npeak by memory kind and device:\n");
    /* One column for the names: 28 wide, or as wide as the longest where one is longer
     * ("device-async memory, device 12"). */
    int width = 28;
    char name[64], b1[32], tb[32];
    for (size_t i = 0; i < t->ntracks; i++) {
        int n = (int)strlen(report_track_name(t, i, name, sizeof name));
        width = n > width ? n : width;
    }
    for (size_t i = 0; i < t->ntracks; i++)
        fprintf(out, "  %-*s %12s at %s\n", width, report_track_name(t, i, name, sizeof name),
                report_bytes(t->tracks[i].peak, b1, sizeof b1),
                secs(t->tracks[i].peak_t, tb, sizeof tb));
}

/* The summary's first lines: the process, the trace's size, and what was left out of it. */
static void print_head(const report_trace *t, FILE *out)
{
    char tb[32];
    fprintf(out, "gpumem report: %s\n", t->process ? t->process : "(unnamed process)");
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
}

/* The memory live at the end, by call site (the top of rank). */
static void print_leaks(const report_trace *t, FILE *out, const uint32_t *rank, int top)
{
    char b1[32];
    if (!t->leaked_count) {
        fprintf(out, "\nleaks at end: none (every allocation in the trace was released)\n");
        return;
    }
    fprintf(out, "\nleaks at end: %s in %llu allocation%s from %llu call site%s%s\n",
            report_bytes(t->leaked_bytes, b1, sizeof b1), (unsigned long long)t->leaked_count,
            t->leaked_count == 1 ? "" : "s", (unsigned long long)t->leaked_sites,
            t->leaked_sites == 1 ? "" : "s",
            t->complete ? "" : " (the trace ends early: some may have been released later)");
    int shown = 0;
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
}

static void print_failures(const report_trace *t, FILE *out, int top)
{
    char b1[32], tb[32];
    if (!t->nfailures)
        return;
    fprintf(out, "\nfailed allocations: %zu\n", t->nfailures);
    for (size_t i = 0; i < t->nfailures && (int)i < top; i++) {
        const report_failure *f = &t->failures[i];
        fprintf(out, "  %s: %s: %s %s memory on device %d at %s%s%s\n",
                secs(f->t, tb, sizeof tb), f->what, report_bytes(f->bytes, b1, sizeof b1),
                gpumem_kind_name(f->kind), f->device, f->site,
                f->cuda_error ? ", " : "", f->cuda_error ? f->cuda_error : "");
    }
}

void report_summary(const report_trace *t, FILE *out, int top)
{
    char b1[32], tb[32];
    print_head(t, out);
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
    print_track_peaks(t, out);
    print_leaks(t, out, rank, top);
    print_failures(t, out, top);
    free(rank);
    report_pools_summary(t, out);
}

enum report_mode { MODE_NONE, MODE_HTML, MODE_SUMMARY, MODE_MEMORY_VIZ, MODE_PERFETTO };

static const char *const mode_option[] = {"", "--html", "--summary", "--memory-viz", "--perfetto"};
static const char *const mode_file[] = {"", "FILE.html", "", "FILE.pickle", "FILE.pftrace"};


typedef struct {
    enum report_mode mode;
    const char *traces[REPORT_MAX_TRACES];
    size_t ntraces;
    const char *output;
    int top;
    uint64_t max_entries;
} report_args;

/* A number option's value from 1 to max; -1 (after a usage error) when it is not one. */
static long long number(cli *c, const char *v, long long max)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (!*v || *end || errno || n < 1 || n > max) {
        cli_usage_error(c, "%s takes a number from 1 to %lld, not '%s'", c->opt, max, v);
        return -1;
    }
    return n;
}

/* Reads the command line into a; returns -1 to go on, else the exit status. */
/* The options: a mode's option returns the mode. */
enum { OPT_OUTPUT = MODE_PERFETTO + 1, OPT_TOP, OPT_MAX_ENTRIES };
static const cli_opt opts[] = {{"--html", 0, CLI_VALUE, MODE_HTML},
                               {"--summary", 0, CLI_VALUE, MODE_SUMMARY},
                               {"--memory-viz", 0, CLI_VALUE, MODE_MEMORY_VIZ},
                               {"--perfetto", 0, CLI_VALUE, MODE_PERFETTO},
                               {"--output", 'o', CLI_VALUE, OPT_OUTPUT},
                               {"--top", 0, CLI_VALUE, OPT_TOP},
                               {"--max-entries", 0, CLI_VALUE, OPT_MAX_ENTRIES}};
static const cli_cmd cmd = {"report", opts, CLI_COUNT(opts), usage, CLI_NO_OPERANDS};

static int parse(int argc, char **argv, report_args *a)
{
    cli c;
    cli_start(&c, &cmd, argc, argv);
    for (int id; (id = cli_next(&c)) != CLI_DONE;) {
        const char *v = c.value;
        long long n;
        switch (id) {
        case CLI_EXIT:
            return c.status;
        case OPT_OUTPUT:
            if (!*v)
                return cli_usage_error(&c, "%s needs a path", c.opt);
            a->output = v;
            break;
        case OPT_TOP:
            if ((n = number(&c, v, 100000)) < 0)
                return CLI_EXIT_USAGE;
            a->top = (int)n;
            break;
        case OPT_MAX_ENTRIES:
            if ((n = number(&c, v, (long long)1 << 40)) < 0)
                return CLI_EXIT_USAGE;
            a->max_entries = (uint64_t)n;
            break;
        default: /* a mode and its trace */
            if (!*v)
                return cli_usage_error(&c, "%s needs a path", c.opt);
            if (a->mode && (a->mode != (enum report_mode)id || id != MODE_PERFETTO))
                return cli_usage_error(&c, "%s and %s are separate runs; give one of them",
                                       mode_option[a->mode], c.opt);
            if (a->ntraces == REPORT_MAX_TRACES)
                return cli_usage_error(&c, "at most %d traces in one --perfetto run", REPORT_MAX_TRACES);
            a->mode = (enum report_mode)id;
            a->traces[a->ntraces++] = v;
            break;
        }
    }
    return -1;
}

/* The combinations parse() cannot see one option at a time. Returns -1 to go on. */
static int check_args(const report_args *a)
{
    const cli c = {.cmd = &cmd};
    if (!a->mode)
        return cli_usage_error(&c, "%s", "say what to make: --html TRACE -o FILE.html, --summary "
                                         "TRACE, --memory-viz TRACE -o FILE.pickle or "
                                         "--perfetto TRACE -o FILE.pftrace");
    const char *opt = mode_option[a->mode];
    if (a->mode == MODE_SUMMARY && a->output)
        return cli_usage_error(&c, "%s", "-o goes with --html, --memory-viz and --perfetto");
    if (a->mode != MODE_SUMMARY && !a->output)
        return cli_usage_error(&c, "%s needs -o %s, the file to write", opt, mode_file[a->mode]);
    if (a->max_entries && a->mode != MODE_MEMORY_VIZ)
        return cli_usage_error(&c, "%s", "--max-entries goes with --memory-viz");
    for (size_t i = 0; a->output && i < a->ntraces; i++)
        if (tool_same_file(a->traces[i], a->output))
            return cli_usage_error(&c, "-o %s is the trace itself, which %s would replace; "
                                       "name another file",
                                   a->output, opt);
    return -1;
}

/* Reads one trace, with a warning when it ends early. Returns 0, or -1 after an error. */
static int load(const char *path, report_trace *t)
{
    char err[1024];
    if (report_load(path, t, err, sizeof err) != 0) {
        fprintf(stderr, "gpumem report: error: %s\n", err);
        return -1;
    }
    if (!t->complete)
        fprintf(stderr, "gpumem report: warning: %s ends early (no end marker: the program "
                        "crashed, was killed, or is still running); showing what it has\n",
                path);
    else if (t->frames_cut)
        fprintf(stderr, "gpumem report: warning: %s ends early, inside its stackFrames table "
                        "(every event is there, so this report is whole; other viewers such as "
                        "Perfetto may refuse the file)\n",
                path);
    /* Damage the output cannot show (the HTML page has no place for it): said on stderr for
     * every output, and the report made of the rest, as for a trace that ends early. */
    if (t->bad_times)
        fprintf(stderr, "gpumem report: warning: %s: %llu event%s with a timestamp that is no "
                        "time (NaN, infinite or out of range) left out; a release among them "
                        "makes its allocation look live to the end\n",
                path, (unsigned long long)t->bad_times, t->bad_times == 1 ? "" : "s");
    if (t->dropped)
        fprintf(stderr, "gpumem report: warning: %s: the traced program could not record %llu "
                        "event%s; a release among them makes its allocation look live to the "
                        "end\n",
                path, (unsigned long long)t->dropped, t->dropped == 1 ? "" : "s");
    return 0;
}

/* Makes the output of one mode from the traces read. Returns the exit status. */
static int make(const report_args *a, report_trace *traces)
{
    char err[1024] = "";
    int rc = 0;
    switch (a->mode) {
    case MODE_SUMMARY:
        report_summary(&traces[0], stdout, a->top);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            snprintf(err, sizeof err, "writing the summary failed");
            rc = -1;
        }
        break;
    case MODE_HTML:
        rc = report_html(&traces[0], a->output, err, sizeof err);
        break;
    case MODE_MEMORY_VIZ:
        rc = report_memory_viz(&traces[0], a->output, a->max_entries, err, sizeof err);
        break;
    default:
        rc = report_perfetto(traces, a->traces, a->ntraces, a->output, err, sizeof err);
        break;
    }
    if (rc == 0)
        return 0;
    fprintf(stderr, "gpumem report: error: %s\n", err);
    return 1;
}

int gpumem_report_main(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) /* merging has options of its own */
        if (strcmp(argv[i], "--merge") == 0)
            return report_merge_main(argc, argv);
    report_args a = {.top = 10};
    int rc = parse(argc, argv, &a);
    if (rc < 0)
        rc = check_args(&a);
    if (rc >= 0)
        return rc;
    report_trace *traces = calloc(a.ntraces, sizeof *traces);
    if (!traces) {
        fprintf(stderr, "gpumem report: error: out of memory\n");
        return 1;
    }
    size_t loaded = 0;
    while (loaded < a.ntraces && load(a.traces[loaded], &traces[loaded]) == 0)
        loaded++;
    rc = loaded == a.ntraces ? make(&a, traces) : 1;
    for (size_t i = 0; i < loaded; i++)
        report_free(&traces[i]);
    free(traces);
    return rc;
}

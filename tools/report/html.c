/* The HTML timeline: the template (timeline.html, timeline.css, timeline.js, compiled in by the
 * build) with the trace's facts as one JSON document in it. The page draws on canvases and
 * aggregates events to pixel columns itself, so its size is the data's, whatever the count of
 * events; nothing in it asks the network. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "report.h"

/* Generated from the template files at build time (embed.cmake). */
extern const char gpumem_report_html[], gpumem_report_css[], gpumem_report_js[];

/* s as a JSON string that can sit inside a <script> element: '<', '>' and '&' escaped. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c == '<' || *c == '>' || *c == '&')
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static void write_stack(FILE *f, const report_trace *t, uint64_t id)
{
    char **frames = report_stack(t, id);
    fputc('[', f);
    for (int i = 0; frames && frames[i]; i++) {
        if (i)
            fputc(',', f);
        json_str(f, frames[i]);
    }
    fputc(']', f);
}

static void write_data(FILE *f, const report_trace *t, const uint32_t *rank)
{
    uint32_t *pos = malloc((t->nsites + 1) * sizeof *pos); /* site -> its rank */
    for (size_t i = 0; pos && i < t->nsites; i++)
        pos[rank[i]] = (uint32_t)i;
    fprintf(f, "{\"process\":");
    json_str(f, t->process);
    fprintf(f, ",\"tool\":");
    json_str(f, t->tool);
    fprintf(f, ",\"version\":\"%s\",\"complete\":%s,\"duration\":%lld,\"allocations\":%zu,",
            gpumem_version(), t->complete ? "true" : "false", (long long)t->duration,
            t->nallocs);
    fprintf(f, "\"peak\":{\"bytes\":%lld,\"t\":%lld},", (long long)t->peak_bytes,
            (long long)t->peak_t);
    fprintf(f, "\"leaked\":{\"bytes\":%lld,\"count\":%llu,\"sites\":%llu},",
            (long long)t->leaked_bytes, (unsigned long long)t->leaked_count,
            (unsigned long long)t->leaked_sites);
    fprintf(f, "\"tracks\":[");
    for (size_t i = 0; i < t->ntracks; i++) {
        char name[64];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, report_track_name(t, i, name, sizeof name));
        fprintf(f, ",\"kind\":\"%s\",\"device\":%d,\"peak\":%lld,\"peak_t\":%lld}",
                gpumem_kind_name(t->tracks[i].kind), t->tracks[i].device,
                (long long)t->tracks[i].peak, (long long)t->tracks[i].peak_t);
    }
    fprintf(f, "],\"sites\":[");
    for (size_t i = 0; i < t->nsites; i++) {
        const report_site *s = &t->sites[rank[i]];
        fprintf(f, "%s{\"name\":", i ? ",\n" : "");
        json_str(f, s->name);
        fprintf(f, ",\"kind\":\"%s\",\"count\":%llu,\"total\":%llu,\"peak\":%lld,"
                   "\"at_peak\":%lld,\"count_at_peak\":%llu,\"leaked\":%lld,"
                   "\"leaked_count\":%llu,\"stack\":",
                gpumem_kind_name(s->kind), (unsigned long long)s->count,
                (unsigned long long)s->total, (long long)s->peak, (long long)s->at_peak,
                (unsigned long long)s->count_at_peak, (long long)s->leaked,
                (unsigned long long)s->leaked_count);
        write_stack(f, t, s->stack);
        fputc('}', f);
    }
    fprintf(f, "],\"failures\":[");
    for (size_t i = 0; i < t->nfailures; i++) {
        const report_failure *x = &t->failures[i];
        fprintf(f, "%s{\"t\":%lld,\"bytes\":%lld,\"kind\":\"%s\",\"device\":%d,\"what\":",
                i ? "," : "", (long long)x->t, (long long)x->bytes, gpumem_kind_name(x->kind),
                x->device);
        json_str(f, x->what);
        fprintf(f, ",\"site\":");
        json_str(f, x->site);
        fputc('}', f);
    }
    fprintf(f, "],\"checkpoints\":[");
    for (size_t i = 0; i < t->ncheckpoints; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)t->checkpoints[i]);
    /* Events as columns: time steps, signed bytes, site rank, track. */
    fprintf(f, "],\n\"ev\":{\"dt\":[");
    int64_t prev = 0;
    for (size_t i = 0; i < t->nevents; i++) {
        fprintf(f, "%s%lld", i ? "," : "", (long long)(t->events[i].t - prev));
        prev = t->events[i].t;
    }
    fprintf(f, "],\n\"b\":[");
    for (size_t i = 0; i < t->nevents; i++)
        fprintf(f, "%s%lld", i ? "," : "", (long long)t->events[i].bytes);
    fprintf(f, "],\n\"s\":[");
    for (size_t i = 0; i < t->nevents; i++)
        fprintf(f, "%s%u", i ? "," : "", pos ? pos[t->events[i].site] : 0);
    fprintf(f, "],\n\"k\":[");
    for (size_t i = 0; i < t->nevents; i++)
        fprintf(f, "%s%u", i ? "," : "", t->events[i].track);
    fprintf(f, "]}}");
    free(pos);
}

/* Writes tpl up to marker (or all of it when marker is NULL); returns what follows it. */
static const char *upto(FILE *f, const char *tpl, const char *marker)
{
    const char *at = marker ? strstr(tpl, marker) : NULL;
    size_t n = at ? (size_t)(at - tpl) : strlen(tpl);
    fwrite(tpl, 1, n, f);
    return at ? at + strlen(marker) : tpl + n;
}

int report_html(const report_trace *t, const char *out_path, char *err, size_t errn)
{
    uint32_t *rank = report_sites_ranked(t);
    if (!rank) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    FILE *f = fopen(out_path, "w");
    if (!f) {
        snprintf(err, errn, "cannot write %s: %s", out_path, strerror(errno));
        free(rank);
        return -1;
    }
    const char *rest = upto(f, gpumem_report_html, "/*@STYLE@*/");
    fputs(gpumem_report_css, f);
    rest = upto(f, rest, "/*@DATA@*/");
    write_data(f, t, rank);
    rest = upto(f, rest, "/*@SCRIPT@*/");
    fputs(gpumem_report_js, f);
    upto(f, rest, NULL);
    free(rank);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        snprintf(err, errn, "writing %s failed: %s (the file is incomplete)", out_path,
                 strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}

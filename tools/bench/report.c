/* `gpumem bench`: the link arithmetic, the table and the JSON document. No CUDA here, so that
 * tests/bench/ can check every line against made-up results. */
#include <stdio.h>
#include <string.h>

#ifdef GPUMEM_HAVE_JANSSON
#include <jansson.h>
#endif

#include "bench.h"
#include "gpumem.h"

double bench_link_gbps(unsigned gen, unsigned width)
{
    /* Transfer rate per lane in GT/s, and the share of the line that carries data: 8b/10b
     * up to generation 2, 128b/130b for 3 to 5; generation 6 sends 256-byte FLITs of which
     * 242 bytes are packets (the rest is CRC and FEC), with no line code of its own. */
    static const double rate[] = {0.0, 2.5, 5.0, 8.0, 16.0, 32.0, 64.0};
    if (gen == 0 || gen >= sizeof rate / sizeof rate[0] || width == 0)
        return 0.0;
    double code = gen <= 2 ? 8.0 / 10.0 : gen <= 5 ? 128.0 / 130.0 : 242.0 / 256.0;
    return rate[gen] * (double)width * code / 8.0;
}

double bench_link_limit(const bench_link *link)
{
    return link->known ? bench_link_gbps(link->max_gen, link->max_width) : 0.0;
}

char *bench_link_describe(const bench_link *link, char *buf, size_t n)
{
    double limit = bench_link_limit(link);
    if (!link->known || limit <= 0.0) {
        if (link->known)
            snprintf(buf, n, "link limit unknown (NVML reports PCIe generation %u, x%u)",
                     link->max_gen, link->max_width);
        else
            snprintf(buf, n, "link limit unknown (%s)", link->why[0] ? link->why : "no reason given");
        return buf;
    }
    int len = snprintf(buf, n, "PCIe %u.0 x%u, limit %.1f GB/s a direction", link->max_gen,
                       link->max_width, limit);
    /* A link at rest often runs slower to save power; under load it should reach its maximum.
     * Both are shown only where they differ from the maximum. */
    if (len >= 0 && (size_t)len < n && link->cur_gen &&
        (link->cur_gen != link->max_gen || link->cur_width != link->max_width))
        len += snprintf(buf + len, n - (size_t)len, "; at rest %u.0 x%u", link->cur_gen,
                        link->cur_width);
    if (len >= 0 && (size_t)len < n && link->busy_gen &&
        (link->busy_gen != link->max_gen || link->busy_width != link->max_width))
        snprintf(buf + len, n - (size_t)len, "; during the copies %u.0 x%u, below its maximum",
                 link->busy_gen, link->busy_width);
    return buf;
}

char *bench_format_ns(double ns, char *buf, size_t n)
{
    if (ns < 0.0)
        snprintf(buf, n, "-");
    else if (ns < 10e3)
        snprintf(buf, n, "%.2f us", ns / 1e3);
    else if (ns < 1e6)
        snprintf(buf, n, "%.1f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, n, "%.2f s", ns / 1e9);
    return buf;
}

double bench_nvlink_gbps(int cc_major, int cc_minor)
{
    /* One direction of one link, from NVIDIA's product pages: P100 4 links of 40 GB/s both
     * ways; V100, A100 and H100/H200 6, 12 and 18 links of 50 GB/s both ways; the RTX 3090's
     * bridge 4 links of 112.5 Gbit/s a direction; B200 18 links of 100 GB/s both ways. */
    static const struct {
        int major, minor;
        double gbps;
    } rate[] = {{6, 0, 20.0}, {7, 0, 25.0}, {7, 5, 25.0}, {8, 0, 25.0},
                {8, 6, 14.0625}, {9, 0, 25.0}, {10, 0, 50.0}, {10, 3, 50.0}};
    for (size_t i = 0; i < sizeof rate / sizeof rate[0]; i++)
        if (rate[i].major == cc_major && rate[i].minor == cc_minor)
            return rate[i].gbps;
    return 0.0;
}

char *bench_pair_describe(const bench_pair_link *pair, char *buf, size_t n)
{
    if (pair->limit_gbps <= 0.0)
        snprintf(buf, n, "link limit unknown (%s)", pair->why[0] ? pair->why : "no reason given");
    else if (pair->nvlinks)
        snprintf(buf, n, "NVLink, %u link%s of %g GB/s, limit %.1f GB/s a direction",
                 pair->nvlinks, pair->nvlinks == 1 ? "" : "s", pair->nvlink_gbps,
                 pair->limit_gbps);
    else
        snprintf(buf, n, "PCIe %u.0 x%u (NVML shows no NVLink between them), limit %.1f GB/s a "
                 "direction", pair->pcie_gen, pair->pcie_width, pair->limit_gbps);
    return buf;
}

const bench_pair_link *bench_pair_find(const bench_report *r, int src, int dst)
{
    for (int i = 0; i < r->npairs; i++)
        if (r->pairs[i].src == src && r->pairs[i].dst == dst)
            return &r->pairs[i];
    return NULL;
}

double bench_vs_ratio(const bench_report *r, const bench_row *row, int i)
{
    if (!row->vs || row->value[i] < 0.0)
        return BENCH_NOT_MEASURED;
    for (int k = 0; k < r->nrows; k++) {
        const bench_row *g = &r->rows[k];
        if (g->section == row->section && g->device == row->device && strcmp(g->key, row->vs) == 0)
            return g->value[i] > 0.0 ? row->value[i] / g->value[i] : BENCH_NOT_MEASURED;
    }
    return BENCH_NOT_MEASURED;
}

bench_row *bench_row_add(bench_report *r, int section, const char *key, const char *label)
{
    if (r->nrows >= BENCH_MAX_ROWS)
        return NULL;
    bench_row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof *row);
    row->section = section;
    row->key = key;
    row->label = label;
    row->value[0] = row->value[1] = BENCH_NOT_MEASURED;
    row->device = r->device;
    row->peer = -1;
    return row;
}

static void format_ratio(double v, char *buf, size_t n)
{
    if (v < 0.0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.2fx", v);
}

static void format_gbps(double v, char *buf, size_t n)
{
    if (v < 0.0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.1f", v);
}

static void format_share(double v, double limit, char *buf, size_t n)
{
    if (v < 0.0 || limit <= 0.0)
        snprintf(buf, n, "-");
    else
        snprintf(buf, n, "%.0f %%", 100.0 * v / limit);
}

static void print_notes(FILE *out, const bench_report *r, int section)
{
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        if (row->section == section && row->deprecated)
            fprintf(out, "  * %s: deprecated: %s\n", row->label, row->deprecated);
        if (row->section == section && row->note[0])
            fprintf(out, "  * %s: %s\n", row->label, row->note);
    }
}

static int has_section(const bench_report *r, int section)
{
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].section == section)
            return 1;
    return 0;
}

/* Allocation rows (BENCH_ALLOC), or each device's pool rows (BENCH_DEVICE_POOL, labelled with
 * their device): the median pair at both sizes, and a peer's ratio to the row it is compared
 * with. */
static void print_pairs(FILE *out, const bench_report *r, int section, const char *title)
{
    char a[32], b[32], label[96];
    fprintf(out, "\n%-44s %12s %12s\n", title,
            gpumem_format_bytes(r->alloc_bytes[0], a, sizeof a),
            gpumem_format_bytes(r->alloc_bytes[1], b, sizeof b));
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        if (row->section != section)
            continue;
        if (section == BENCH_DEVICE_POOL)
            snprintf(label, sizeof label, "device %d: %s", row->device, row->label);
        else
            snprintf(label, sizeof label, "%s", row->label);
        fprintf(out, "  %-42s %12s %12s", label, bench_format_ns(row->value[0], a, sizeof a),
                bench_format_ns(row->value[1], b, sizeof b));
        double x0 = bench_vs_ratio(r, row, 0), x1 = bench_vs_ratio(r, row, 1);
        if (x0 >= 0.0 || x1 >= 0.0) { /* a peer: how many times its gpumem row it takes */
            format_ratio(x0, a, sizeof a);
            format_ratio(x1, b, sizeof b);
            if (section == BENCH_DEVICE_POOL)
                fprintf(out, "   %s, %s the device's own", a, b);
            else
                fprintf(out, "   %s, %s gpumem's", a, b);
        }
        if (row->deprecated)
            fputs("   (deprecated)", out);
        fputc('\n', out);
    }
    print_notes(out, r, section);
}

static void print_copies(FILE *out, const bench_report *r)
{
    char a[32], b[32], c[32], d[32], title[64];
    double limit = bench_link_limit(&r->link);
    snprintf(title, sizeof title, "copies of %s (median)",
             gpumem_format_bytes(r->copy_bytes, a, sizeof a));
    fprintf(out, "\n%-44s %9s %8s %9s %8s\n", title, "H2D GB/s", "of link", "D2H GB/s",
            "of link");
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        if (row->section != BENCH_COPY)
            continue;
        format_gbps(row->value[0], a, sizeof a);
        format_share(row->value[0], limit, b, sizeof b);
        format_gbps(row->value[1], c, sizeof c);
        format_share(row->value[1], limit, d, sizeof d);
        fprintf(out, "  %-42s %9s %8s %9s %8s\n", row->label, a, b, c, d);
    }
    print_notes(out, r, BENCH_COPY);
}

static void print_host(FILE *out, const bench_report *r)
{
    char a[32], b[32], title[64];
    snprintf(title, sizeof title, "host access, %s, one thread (median)",
             gpumem_format_bytes(r->host_bytes, a, sizeof a));
    fprintf(out, "\n%-44s %10s %10s\n", title, "write GB/s", "read GB/s");
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        if (row->section != BENCH_HOST)
            continue;
        format_gbps(row->value[0], a, sizeof a);
        format_gbps(row->value[1], b, sizeof b);
        fprintf(out, "  %-42s %10s %10s\n", row->label, a, b);
    }
    print_notes(out, r, BENCH_HOST);
}

/* Peer copies by ordered pair of devices, each pair under the line that says what joins them;
 * each column's share is of that link's limit. */
static void print_peers(FILE *out, const bench_report *r)
{
    char a[32], b[32], c[32], d[32], title[96], link[320];
    snprintf(title, sizeof title, "between devices, copies of %s (median)",
             gpumem_format_bytes(r->peer_bytes, a, sizeof a));
    fprintf(out, "\n%-44s %9s %8s %9s %8s\n", title, "peer off", "of link", "peer on",
            "of link");
    int src = -1, dst = -1;
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        if (row->section != BENCH_PEER)
            continue;
        const bench_pair_link *pair = bench_pair_find(r, row->device, row->peer);
        if (row->device != src || row->peer != dst) {
            src = row->device;
            dst = row->peer;
            if (pair)
                bench_pair_describe(pair, link, sizeof link);
            else
                snprintf(link, sizeof link, "link limit unknown (not asked)");
            fprintf(out, "  device %d -> %d: %s\n", src, dst, link);
        }
        double limit = pair ? pair->limit_gbps : 0.0;
        format_gbps(row->value[0], a, sizeof a);
        format_share(row->value[0], limit, b, sizeof b);
        format_gbps(row->value[1], c, sizeof c);
        format_share(row->value[1], limit, d, sizeof d);
        fprintf(out, "    %-40s %9s %8s %9s %8s\n", row->label, a, b, c, d);
    }
    for (int i = 0; i < r->nrows; i++) {
        const bench_row *row = &r->rows[i];
        if (row->section == BENCH_PEER && row->note[0])
            fprintf(out, "  * %s %d -> %d: %s\n", row->label, row->device, row->peer, row->note);
    }
}

int bench_print_table(FILE *out, const bench_report *r)
{
    char link[320];
    fprintf(out, "gpumem bench %s: device %d, %s (compute capability %d.%d), %s run", r->version,
            r->device, r->device_name, r->cc_major, r->cc_minor, r->quick ? "quick" : "full");
    if (r->seconds > 0.0)
        fprintf(out, " in %.1f s", r->seconds);
    if (r->sim)
        fprintf(out, "\nsimulated devices (GPUMEM_BACKEND=sim): only what goes through gpumem "
                     "is measured, in host memory");
    else
        fprintf(out, "\nlink: %s", bench_link_describe(&r->link, link, sizeof link));
    fputc('\n', out);
    if (has_section(r, BENCH_ALLOC))
        print_pairs(out, r, BENCH_ALLOC, "allocate + release (a pair, median)");
    if (has_section(r, BENCH_COPY))
        print_copies(out, r);
    if (has_section(r, BENCH_HOST))
        print_host(out, r);
    if (r->devices_note[0])
        fprintf(out, "\nseveral devices: %s\n", r->devices_note);
    if (has_section(r, BENCH_PEER))
        print_peers(out, r);
    if (has_section(r, BENCH_DEVICE_POOL))
        print_pairs(out, r, BENCH_DEVICE_POOL, "each device's pool (a pair, median)");
    fflush(out);
    return ferror(out) ? -1 : 0;
}

#ifdef GPUMEM_HAVE_JANSSON
int bench_have_json(void)
{
    return 1;
}

static json_t *number_or_null(double v)
{
    return v < 0.0 ? json_null() : json_real(v);
}

static json_t *share_or_null(double v, double limit)
{
    return v < 0.0 || limit <= 0.0 ? json_null() : json_real(v / limit);
}

static json_t *gen_width(unsigned gen, unsigned width)
{
    if (!gen)
        return json_null();
    return json_pack("{s:i, s:i}", "generation", (int)gen, "width", (int)width);
}

static json_t *link_json(const bench_link *l)
{
    double limit = bench_link_limit(l);
    return json_pack("{s:b, s:o, s:o, s:o, s:o, s:o}", "known", l->known,
                     "why", l->known ? json_null() : json_string(l->why),
                     "max", gen_width(l->max_gen, l->max_width),
                     "at_rest", gen_width(l->cur_gen, l->cur_width),
                     "during_copies", gen_width(l->busy_gen, l->busy_width),
                     "limit_gbps", limit > 0.0 ? json_real(limit) : json_null());
}

static json_t *row_json(const bench_report *r, const bench_row *row, double limit)
{
    json_t *o = json_pack("{s:s, s:s}", "key", row->key, "label", row->label);
    if (row->section == BENCH_DEVICE_POOL)
        json_object_set_new(o, "device", json_integer(row->device));
    if (row->section == BENCH_ALLOC || row->section == BENCH_DEVICE_POOL) {
        json_object_set_new(o, "vs", row->vs ? json_string(row->vs) : json_null());
        json_object_set_new(o, "vs_ratio",
                            row->vs ? json_pack("[o, o]", number_or_null(bench_vs_ratio(r, row, 0)),
                                                number_or_null(bench_vs_ratio(r, row, 1)))
                                    : json_null());
        json_object_set_new(o, "deprecated",
                            row->deprecated ? json_string(row->deprecated) : json_null());
    }
    if (row->section == BENCH_ALLOC || row->section == BENCH_DEVICE_POOL) {
        json_object_set_new(o, "median_ns", json_pack("[o, o]", number_or_null(row->value[0]),
                                                      number_or_null(row->value[1])));
    } else if (row->section == BENCH_PEER) {
        const bench_pair_link *pair = bench_pair_find(r, row->device, row->peer);
        double plimit = pair ? pair->limit_gbps : 0.0;
        json_object_set_new(o, "src", json_integer(row->device));
        json_object_set_new(o, "dst", json_integer(row->peer));
        json_object_set_new(o, "access_off_gbps", number_or_null(row->value[0]));
        json_object_set_new(o, "access_off_link_fraction", share_or_null(row->value[0], plimit));
        json_object_set_new(o, "access_on_gbps", number_or_null(row->value[1]));
        json_object_set_new(o, "access_on_link_fraction", share_or_null(row->value[1], plimit));
    } else if (row->section == BENCH_COPY) {
        json_object_set_new(o, "h2d_gbps", number_or_null(row->value[0]));
        json_object_set_new(o, "h2d_link_fraction", share_or_null(row->value[0], limit));
        json_object_set_new(o, "d2h_gbps", number_or_null(row->value[1]));
        json_object_set_new(o, "d2h_link_fraction", share_or_null(row->value[1], limit));
    } else {
        json_object_set_new(o, "write_gbps", number_or_null(row->value[0]));
        json_object_set_new(o, "read_gbps", number_or_null(row->value[1]));
    }
    json_object_set_new(o, "samples", json_pack("[i, i]", row->samples[0], row->samples[1]));
    json_object_set_new(o, "note", row->note[0] ? json_string(row->note) : json_null());
    return o;
}

static json_t *pair_json(const bench_pair_link *p)
{
    return json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:o}", "src", p->src, "dst", p->dst,
                     "nvlinks", (int)p->nvlinks,
                     "nvlink_gbps", p->nvlinks ? json_real(p->nvlink_gbps) : json_null(),
                     "pcie", p->nvlinks ? json_null() : gen_width(p->pcie_gen, p->pcie_width),
                     "limit_gbps", p->limit_gbps > 0.0 ? json_real(p->limit_gbps) : json_null(),
                     "why", p->limit_gbps > 0.0 ? json_null() : json_string(p->why));
}

/* "devices": what crosses between them; rows empty and note set with one device. */
static json_t *devices_json(const bench_report *r, json_t *peers, json_t *pools)
{
    json_t *links = json_array();
    for (int i = 0; i < r->npairs; i++)
        json_array_append_new(links, pair_json(&r->pairs[i]));
    return json_pack("{s:i, s:i, s:o, s:I, s:o, s:o, s:{s:[I, I], s:o}}", "count", r->ndev,
                     "measured", r->ndev_measured,
                     "note", r->devices_note[0] ? json_string(r->devices_note) : json_null(),
                     "peer_bytes", (json_int_t)r->peer_bytes, "links", links, "peer_copies",
                     peers, "pools", "bytes", (json_int_t)r->alloc_bytes[0],
                     (json_int_t)r->alloc_bytes[1], "rows", pools);
}

int bench_write_json(FILE *out, const bench_report *r, char *err, size_t errn)
{
    double limit = bench_link_limit(&r->link);
    char cc[16];
    snprintf(cc, sizeof cc, "%d.%d", r->cc_major, r->cc_minor);
    json_t *sections[BENCH_SECTIONS];
    for (int s = 0; s < BENCH_SECTIONS; s++)
        sections[s] = json_array();
    for (int i = 0; i < r->nrows; i++)
        json_array_append_new(sections[r->rows[i].section], row_json(r, &r->rows[i], limit));
    json_t *root = json_pack(
        "{s:s, s:s, s:s, s:b, s:f, s:{s:i, s:s, s:s}, s:o, s:{s:[I, I], s:o}, s:{s:I, s:o}, "
        "s:{s:I, s:o}, s:o}",
        "tool", "gpumem bench", "version", r->version, "backend", r->sim ? "sim" : "cuda",
        "quick", r->quick, "seconds", r->seconds,
        "device", "index", r->device, "name", r->device_name, "compute_capability", cc,
        "link", link_json(&r->link),
        "allocation", "bytes", (json_int_t)r->alloc_bytes[0], (json_int_t)r->alloc_bytes[1],
        "rows", sections[BENCH_ALLOC],
        "copies", "bytes", (json_int_t)r->copy_bytes, "rows", sections[BENCH_COPY],
        "host_access", "bytes", (json_int_t)r->host_bytes, "rows", sections[BENCH_HOST],
        "devices", devices_json(r, sections[BENCH_PEER], sections[BENCH_DEVICE_POOL]));
    if (!root) {
        snprintf(err, errn, "could not build the JSON document");
        return -1;
    }
    int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(root);
    if (rc != 0 || fputc('\n', out) == EOF || fflush(out) != 0) {
        snprintf(err, errn, "writing the JSON document failed");
        return -1;
    }
    return 0;
}
#else
int bench_have_json(void)
{
    return 0;
}

int bench_write_json(FILE *out, const bench_report *r, char *err, size_t errn)
{
    (void)out;
    (void)r;
    snprintf(err, errn, "this gpumem was built without jansson, so it cannot write JSON "
                        "(apt-get install libjansson-dev, then rebuild)");
    return -1;
}
#endif

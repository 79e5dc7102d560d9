/* A trace as PyTorch's memory snapshot (report.h): the pickle that
 * torch.cuda.memory._dump_snapshot writes and that PyTorch's viewer (pytorch.org/memory_viz,
 * torch.cuda._memory_viz) reads, made from a gpumem trace of any program.
 *
 * PyTorch's snapshot sees its caching allocator: segments (what it took from cudaMalloc) split
 * into blocks (tensors). A gpumem trace sees every allocation the program made, by any
 * allocator, each from its allocation to its release, but not inside other allocators' memory.
 * So each allocation is a segment of one block: its trace entries are segment_alloc and alloc
 * when it is made, free_requested, free_completed and segment_free when it is released (what
 * PyTorch records with its cache off), with the allocation's stack as frames. The snapshot's
 * segments are what was still live at the end of the trace.
 *
 * The format has one trace per device and no memory kinds: device memory of every kind (device,
 * stream-ordered, managed, virtual, arrays) goes to its device's trace, host memory (pinned,
 * mapped, registered) to one more device after the last GPU, as PyTorch's own profile_plot
 * puts CPU memory. Failed allocations are left out: the format's oom entry needs the device's
 * free memory, which a trace does not record.
 *
 * Addresses: the viewer keeps them as JavaScript numbers, exact below 2^53. What gpumem check
 * records for memory without an address (CUDA arrays, cuMemCreate handles) is a key far above
 * every address. A handle's memory is shown where it is mapped (cuMemMap, an allocation at its
 * address), so handles are left out; arrays (and allocations a trace gives no address) get
 * addresses of their own from 2^52 up, each 2 MiB-aligned after the one before. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpumem.h"
#include "pickle.h"
#include "report.h"

/* Device ordinals past this share the last trace (a hostile trace may name any number). */
#define MAX_DEVICE 1023
/* Addresses of x86-64 and of CUDA's unified address space are below this; registry keys of
 * handles and arrays are above it. */
#define ADDRESS_LIMIT ((uint64_t)1 << 56)
#define SHOWN_BASE ((uint64_t)1 << 52)
#define SHOWN_ALIGN ((uint64_t)2 << 20)
#define LEFT_OUT UINT64_MAX

enum key {
    K_SEGMENTS, K_DEVICE_TRACES, K_DEVICE, K_ADDRESS, K_TOTAL_SIZE, K_ALLOCATED_SIZE,
    K_ACTIVE_SIZE, K_REQUESTED_SIZE, K_STREAM, K_SEGMENT_TYPE, K_SEGMENT_POOL_ID,
    K_IS_EXPANDABLE, K_FRAMES, K_BLOCKS, K_SIZE, K_STATE, K_ACTION, K_ADDR, K_TIME_US,
    K_FILENAME, K_LINE, K_NAME, K_GPUMEM, K_PROCESS, K_HOST_DEVICE,
    V_ALLOC, V_FREE_REQUESTED, V_FREE_COMPLETED, V_SEGMENT_ALLOC, V_SEGMENT_FREE,
    V_ACTIVE_ALLOCATED, V_LARGE, V_SMALL, KEY_COUNT
};

static const char *const key_text[KEY_COUNT] = {
    "segments", "device_traces", "device", "address", "total_size", "allocated_size",
    "active_size", "requested_size", "stream", "segment_type", "segment_pool_id",
    "is_expandable", "frames", "blocks", "size", "state", "action", "addr", "time_us",
    "filename", "line", "name", "gpumem", "process", "host_memory_device",
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
    "active_allocated", "large", "small"};

typedef struct {
    pickle_out p;
    const report_trace *t;
    uint32_t key_slot[KEY_COUNT]; /* memo slot + 1 of each key once written, 0 before */
    uint32_t *stack_slot;         /* memo slot + 1 of each stack's frames (by stacks index) */
    uint32_t *site_slot;          /* of a site's one frame, for allocations without a stack */
    uint32_t *release_slot;       /* of a release site's one frame */
    int *trace_of_track;          /* the device trace each track goes to */
    uint64_t *address;            /* per allocation: its address as shown, or LEFT_OUT */
    int ntraces, host_trace;
} viz;

static void key(viz *v, enum key k)
{
    if (v->key_slot[k]) {
        pickle_again(&v->p, v->key_slot[k] - 1);
        return;
    }
    pickle_text(&v->p, key_text[k]);
    v->key_slot[k] = pickle_keep(&v->p) + 1;
}

/* A dict item key: value, the value an int. */
static void item_int(viz *v, enum key k, int64_t value)
{
    key(v, k);
    pickle_int(&v->p, value);
    pickle_item(&v->p, PICKLE_SETITEMS);
}

static void item_uint(viz *v, enum key k, uint64_t value)
{
    key(v, k);
    pickle_uint(&v->p, value);
    pickle_item(&v->p, PICKLE_SETITEMS);
}

static int is_host_kind(int kind)
{
    return kind == GPUMEM_KIND_PINNED || kind == GPUMEM_KIND_HOST ||
           kind == GPUMEM_KIND_REGISTERED;
}

/* The line number after the last ':' of text[0, n), when all digits: its offset, else 0. */
static size_t line_at(const char *text, size_t n)
{
    size_t i = n;
    while (i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9')
        i--;
    return i < n && i > 1 && text[i - 1] == ':' ? i : 0;
}

/* "file.cu:31 (load)" as PyTorch's frame {filename, line, name}; "fn (in libx.so)" as name fn
 * in file libx.so; anything else as a name alone, in file "??". */
static void frame(viz *v, const char *text)
{
    size_t n = strlen(text);
    const char *open = NULL;
    for (const char *s = strstr(text, " ("); s; s = strstr(s + 1, " ("))
        open = s;
    char file[1024] = "??", name[1024];
    long line = 0;
    snprintf(name, sizeof name, "%s", text);
    if (open && text[n - 1] == ')') {
        size_t head = (size_t)(open - text), inner = n - head - 3;
        const char *in = open + 2;
        size_t at = line_at(text, head);
        if (inner >= 3 && strncmp(in, "in ", 3) == 0) {
            snprintf(name, sizeof name, "%.*s", (int)head, text);
            snprintf(file, sizeof file, "%.*s", (int)(inner - 3), in + 3);
        } else if (at) {
            snprintf(file, sizeof file, "%.*s", (int)(at - 1), text);
            line = strtol(text + at, NULL, 10);
            snprintf(name, sizeof name, "%.*s", (int)inner, in);
        }
    }
    uint32_t saved = pickle_dict(&v->p);
    key(v, K_FILENAME);
    pickle_text(&v->p, file);
    pickle_item(&v->p, PICKLE_SETITEMS);
    item_int(v, K_LINE, line);
    key(v, K_NAME);
    pickle_text(&v->p, name);
    pickle_item(&v->p, PICKLE_SETITEMS);
    pickle_end(&v->p, PICKLE_SETITEMS, saved);
}

/* A list of frames, written once and referred to after that (*slot: memo slot + 1). */
static void frames(viz *v, uint32_t *slot, char **list, const char *one)
{
    if (*slot) {
        pickle_again(&v->p, *slot - 1);
        return;
    }
    uint32_t saved = pickle_list(&v->p);
    for (int i = 0; list && list[i]; i++) {
        frame(v, list[i]);
        pickle_item(&v->p, PICKLE_APPENDS);
    }
    if (!list && one) {
        frame(v, one);
        pickle_item(&v->p, PICKLE_APPENDS);
    }
    pickle_end(&v->p, PICKLE_APPENDS, saved);
    *slot = pickle_keep(&v->p) + 1;
}

static void alloc_frames(viz *v, const report_alloc *a)
{
    long s = report_stack_index(v->t, a->stack);
    if (s >= 0)
        frames(v, &v->stack_slot[s], v->t->stack_frames[s], NULL);
    else
        frames(v, &v->site_slot[a->site], NULL, v->t->sites[a->site].name);
}

static void release_frames(viz *v, const report_alloc *a)
{
    if (a->released_at != UINT32_MAX)
        frames(v, &v->release_slot[a->released_at], NULL,
               v->t->release_names[a->released_at]);
    else
        alloc_frames(v, a);
}

/* One trace entry: {action, addr, size, stream, frames, time_us}. */
static void entry(viz *v, enum key action, const report_alloc *a, int64_t t, int released)
{
    uint32_t saved = pickle_dict(&v->p);
    key(v, K_ACTION);
    key(v, action);
    pickle_item(&v->p, PICKLE_SETITEMS);
    item_uint(v, K_ADDR, v->address[a - v->t->allocs]);
    item_int(v, K_SIZE, a->bytes);
    item_uint(v, K_STREAM, a->stream);
    key(v, K_FRAMES);
    if (released)
        release_frames(v, a);
    else
        alloc_frames(v, a);
    pickle_item(&v->p, PICKLE_SETITEMS);
    item_int(v, K_TIME_US, (v->t->t0 + t) / 1000);
    pickle_end(&v->p, PICKLE_SETITEMS, saved);
    pickle_item(&v->p, PICKLE_APPENDS);
}

/* A segment live at the end, with its one block. */
static void segment(viz *v, const report_alloc *a)
{
    uint32_t saved = pickle_dict(&v->p);
    item_int(v, K_DEVICE, v->trace_of_track[a->track]);
    item_uint(v, K_ADDRESS, v->address[a - v->t->allocs]);
    item_int(v, K_TOTAL_SIZE, a->bytes);
    item_int(v, K_ALLOCATED_SIZE, a->bytes);
    item_int(v, K_ACTIVE_SIZE, a->bytes);
    item_int(v, K_REQUESTED_SIZE, a->bytes);
    item_uint(v, K_STREAM, a->stream);
    key(v, K_SEGMENT_TYPE);
    key(v, a->bytes > (1 << 20) ? V_LARGE : V_SMALL); /* PyTorch's pools: above 1 MiB, large */
    pickle_item(&v->p, PICKLE_SETITEMS);
    key(v, K_SEGMENT_POOL_ID);
    pickle_int(&v->p, 0);
    pickle_int(&v->p, 0);
    pickle_tuple2(&v->p);
    pickle_item(&v->p, PICKLE_SETITEMS);
    key(v, K_IS_EXPANDABLE);
    pickle_false(&v->p);
    pickle_item(&v->p, PICKLE_SETITEMS);
    key(v, K_FRAMES);
    alloc_frames(v, a);
    pickle_item(&v->p, PICKLE_SETITEMS);
    key(v, K_BLOCKS);
    uint32_t list = pickle_list(&v->p);
    uint32_t block = pickle_dict(&v->p);
    item_uint(v, K_ADDRESS, v->address[a - v->t->allocs]);
    item_int(v, K_SIZE, a->bytes);
    item_int(v, K_REQUESTED_SIZE, a->bytes);
    key(v, K_STATE);
    key(v, V_ACTIVE_ALLOCATED);
    pickle_item(&v->p, PICKLE_SETITEMS);
    key(v, K_FRAMES);
    alloc_frames(v, a);
    pickle_item(&v->p, PICKLE_SETITEMS);
    pickle_end(&v->p, PICKLE_SETITEMS, block);
    pickle_item(&v->p, PICKLE_APPENDS);
    pickle_end(&v->p, PICKLE_APPENDS, list);
    pickle_item(&v->p, PICKLE_SETITEMS);
    pickle_end(&v->p, PICKLE_SETITEMS, saved);
    pickle_item(&v->p, PICKLE_APPENDS);
}

/* Which device trace each track goes to: device memory to its device, host memory after the
 * last device. */
static int place_tracks(viz *v)
{
    const report_trace *t = v->t;
    v->trace_of_track = calloc(t->ntracks + 1, sizeof *v->trace_of_track);
    if (!v->trace_of_track)
        return -1;
    int last = -1, host = 0;
    for (size_t i = 0; i < t->ntracks; i++) {
        int d = t->tracks[i].device < 0 ? 0 : t->tracks[i].device;
        d = d > MAX_DEVICE ? MAX_DEVICE : d;
        if (is_host_kind(t->tracks[i].kind))
            host = 1;
        else
            last = d > last ? d : last;
        v->trace_of_track[i] = d;
    }
    v->host_trace = host ? last + 1 : -1;
    v->ntraces = last + 1 + host;
    for (size_t i = 0; i < t->ntracks; i++)
        if (is_host_kind(t->tracks[i].kind))
            v->trace_of_track[i] = v->host_trace;
    return 0;
}

/* Each allocation's address as shown (see the top of this file). */
static int place_addresses(viz *v)
{
    const report_trace *t = v->t;
    v->address = calloc(t->nallocs + 1, sizeof *v->address);
    if (!v->address)
        return -1;
    uint64_t next = SHOWN_BASE;
    for (size_t i = 0; i < t->nallocs; i++) {
        const report_alloc *a = &t->allocs[i];
        if (a->address && a->address < ADDRESS_LIMIT) {
            v->address[i] = a->address;
        } else if (t->tracks[a->track].kind == GPUMEM_KIND_VIRTUAL && a->address) {
            v->address[i] = LEFT_OUT;
        } else {
            v->address[i] = next;
            uint64_t size = ((uint64_t)a->bytes + SHOWN_ALIGN - 1) / SHOWN_ALIGN * SHOWN_ALIGN;
            next = next + size < (uint64_t)1 << 53 ? next + size : SHOWN_BASE;
        }
    }
    return 0;
}

/* The entries of one device's trace: the last max_entries of them (0: all), as PyTorch's
 * record keeps the most recent ones. */
static void device_trace(viz *v, int dev, uint64_t max_entries)
{
    const report_trace *t = v->t;
    uint64_t total = 0;
    for (size_t i = 0; i < t->nevents; i++)
        if (v->trace_of_track[t->events[i].track] == dev &&
            v->address[t->events[i].alloc] != LEFT_OUT)
            total += t->events[i].bytes > 0 ? 2 : 3;
    uint64_t skip = max_entries && total > max_entries ? total - max_entries : 0;
    uint32_t saved = pickle_list(&v->p);
    for (size_t i = 0; i < t->nevents; i++) {
        const report_event *e = &t->events[i];
        if (v->trace_of_track[e->track] != dev || v->address[e->alloc] == LEFT_OUT)
            continue;
        unsigned n = e->bytes > 0 ? 2 : 3;
        if (skip) {
            skip = skip > n ? skip - n : 0;
            continue;
        }
        const report_alloc *a = &t->allocs[e->alloc];
        if (e->bytes > 0) {
            entry(v, V_SEGMENT_ALLOC, a, e->t, 0);
            entry(v, V_ALLOC, a, e->t, 0);
        } else {
            entry(v, V_FREE_REQUESTED, a, e->t, 1);
            entry(v, V_FREE_COMPLETED, a, e->t, 1);
            entry(v, V_SEGMENT_FREE, a, e->t, 1);
        }
    }
    pickle_end(&v->p, PICKLE_APPENDS, saved);
    pickle_item(&v->p, PICKLE_APPENDS);
}

static void snapshot(viz *v, uint64_t max_entries)
{
    const report_trace *t = v->t;
    uint32_t top = pickle_dict(&v->p);
    key(v, K_SEGMENTS);
    uint32_t segs = pickle_list(&v->p);
    for (size_t i = 0; i < t->nallocs; i++)
        if (t->allocs[i].t_release < 0 && v->address[i] != LEFT_OUT)
            segment(v, &t->allocs[i]);
    pickle_end(&v->p, PICKLE_APPENDS, segs);
    pickle_item(&v->p, PICKLE_SETITEMS);
    key(v, K_DEVICE_TRACES);
    uint32_t traces = pickle_list(&v->p);
    for (int d = 0; d < v->ntraces; d++)
        device_trace(v, d, max_entries);
    pickle_end(&v->p, PICKLE_APPENDS, traces);
    pickle_item(&v->p, PICKLE_SETITEMS);
    /* What the snapshot does not say by itself: whose trace, and which device is host memory
     * (-1: none). PyTorch's readers leave keys they do not know alone. */
    key(v, K_GPUMEM);
    uint32_t info = pickle_dict(&v->p);
    key(v, K_PROCESS);
    pickle_text(&v->p, t->process ? t->process : "");
    pickle_item(&v->p, PICKLE_SETITEMS);
    item_int(v, K_HOST_DEVICE, v->host_trace);
    pickle_end(&v->p, PICKLE_SETITEMS, info);
    pickle_item(&v->p, PICKLE_SETITEMS);
    pickle_end(&v->p, PICKLE_SETITEMS, top);
}

int report_memory_viz(const report_trace *t, const char *out_path, uint64_t max_entries,
                      char *err, size_t errn)
{
    viz v = {.t = t};
    v.stack_slot = calloc(t->nstacks + 1, sizeof *v.stack_slot);
    v.site_slot = calloc(t->nsites + 1, sizeof *v.site_slot);
    v.release_slot = calloc(t->nrelease_names + 1, sizeof *v.release_slot);
    int rc = -1;
    FILE *f = NULL;
    if (!v.stack_slot || !v.site_slot || !v.release_slot || place_tracks(&v) != 0 ||
        place_addresses(&v) != 0) {
        snprintf(err, errn, "out of memory");
        goto out;
    }
    f = fopen(out_path, "wb");
    if (!f) {
        snprintf(err, errn, "cannot write %s: %s", out_path, strerror(errno));
        goto out;
    }
    pickle_start(&v.p, f);
    snapshot(&v, max_entries);
    pickle_stop(&v.p);
    int failed = ferror(f);
    if (fclose(f) != 0 || failed) {
        snprintf(err, errn, "writing %s failed: %s (the file is incomplete)", out_path,
                 strerror(errno ? errno : EIO));
        goto out;
    }
    rc = 0;
out:
    free(v.stack_slot);
    free(v.site_slot);
    free(v.release_slot);
    free(v.trace_of_track);
    free(v.address);
    return rc;
}

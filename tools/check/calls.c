/* gpumem check's failed CUDA calls (engine.h): every runtime or driver call that returned an
 * error, unless its failure is the documented answer of a query (probes.def), is a
 * failed-call finding. Programs repeat calls in loops, so a failure is grouped by call, status
 * and stack: reported when the group first fails, counted after, and summed up at the end.
 * --failed-calls=note keeps them in the report without counting them as errors; =no does not
 * watch them at all (the front end then subscribes to the memory calls only). */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine_int.h"
#include "internal.h"
#include "settings.h"

#define PROBE_ANY (-1)
static const struct {
    const char *call;
    int status;
} probes[] = {
#define PROBE(call, status, why) {call, status},
#include "probes.def"
#undef PROBE
};

int check_call_probe(const char *call, int status)
{
    for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
        if ((probes[i].status == PROBE_ANY || probes[i].status == status) &&
            fnmatch(probes[i].call, call, 0) == 0)
            return 1;
    return 0;
}

int check_failed_calls_mode(void)
{
    /* The choices' order in settings.def is CHECK_CALLS_ERROR, _NOTE, _NO's. */
    return check_setting_choice(CHECK_SET_FAILED_CALLS);
}

int check_watch_all_calls(void)
{
    return check_setting_choice(CHECK_SET_WATCH_CALLS) == 1;
}

/* "cuMemAlloc_v2" -> "cuMemAlloc", "cudaMemcpyAsync_ptsz" -> "cudaMemcpyAsync": the name the
 * program wrote. Names are kept for the whole run, so each distinct one is copied once; calls
 * fail on any thread, so the list has a lock of its own. */
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *clean_name(const char *name);

static const char *program_name(const char *name)
{
    pthread_mutex_lock(&names_lock);
    const char *clean = clean_name(name);
    pthread_mutex_unlock(&names_lock);
    return clean;
}

static const char *clean_name(const char *name)
{
    typedef struct {
        const char *raw, *clean;
    } name_pair;
    static name_pair names[512];
    static size_t n;
    for (size_t i = 0; i < n; i++)
        if (names[i].raw == name)
            return names[i].clean;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", name);
    for (int changed = 1; changed;) {
        changed = 0;
        size_t len = strlen(buf);
        char *u = strrchr(buf, '_');
        if (!u)
            break;
        if (strcmp(u, "_ptsz") == 0 || strcmp(u, "_ptds") == 0 ||
            (u[1] == 'v' && u[2] >= '0' && u[2] <= '9' && strspn(u + 2, "0123456789") == len - (size_t)(u - buf) - 2)) {
            *u = '\0';
            changed = 1;
        }
    }
    const char *clean = strdup(buf);
    if (!clean)
        return name;
    if (n < sizeof names / sizeof *names)
        names[n++] = (name_pair){name, clean};
    return clean;
}

/* A group of failures: one call, status and stack. */
typedef struct {
    const char *call; /* the program's name for it */
    int status;
    uint32_t stack;
    uint64_t count;
    long finding; /* its finding's index in the findings' list */
} call_group;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static call_group *groups;
static size_t ngroups, groups_cap;
static uint64_t failures;

/* The probes seen (but for not ready, every query's answer): for the JSON report, so that what
 * was passed over as an answer is on record. */
static struct {
    const char *call;
    int status;
    uint64_t count;
} probes_seen[64];
static size_t nprobes;

void check_call_probed(const char *call, int status)
{
    call = program_name(call);
    pthread_mutex_lock(&lock);
    size_t i = 0;
    while (i < nprobes && !(probes_seen[i].status == status && strcmp(probes_seen[i].call, call) == 0))
        i++;
    if (i == nprobes && nprobes < sizeof probes_seen / sizeof *probes_seen) {
        probes_seen[nprobes].call = call;
        probes_seen[nprobes].status = status;
        probes_seen[nprobes++].count = 0;
    }
    if (i < nprobes)
        probes_seen[i].count++;
    pthread_mutex_unlock(&lock);
}

size_t check__calls_probes(const char **call, int *status, uint64_t *count, size_t max)
{
    pthread_mutex_lock(&lock);
    size_t n = nprobes < max ? nprobes : max;
    for (size_t i = 0; i < n; i++) {
        call[i] = probes_seen[i].call;
        status[i] = probes_seen[i].status;
        count[i] = probes_seen[i].count;
    }
    pthread_mutex_unlock(&lock);
    return n;
}

static call_group *find_group(const char *call, int status, uint32_t stack)
{
    for (size_t i = 0; i < ngroups; i++)
        if (groups[i].status == status && groups[i].stack == stack &&
            strcmp(groups[i].call, call) == 0)
            return &groups[i];
    return NULL;
}

static call_group *add_group(const char *call, int status, uint32_t stack)
{
    if (ngroups == groups_cap) {
        size_t cap = groups_cap ? groups_cap * 2 : 32;
        call_group *grown = realloc(groups, cap * sizeof *grown);
        if (!grown)
            return NULL;
        groups = grown;
        groups_cap = cap;
    }
    groups[ngroups] = (call_group){call, status, stack, 0, -1};
    return &groups[ngroups++];
}

void check_call_failed(const char *call, int status, const char *status_name,
                       const char *status_text, uint32_t stack)
{
    check_setup();
    call = program_name(call);
    if (check_call_probe(call, status)) {
        if (status != 600)
            check_call_probed(call, status);
        return;
    }
    int mode = check_failed_calls_mode();
    if (mode == CHECK_CALLS_NO)
        return;
    check_tls_busy++;
    if (!stack)
        stack = check__capture();
    pthread_mutex_lock(&lock);
    failures++;
    call_group *g = find_group(call, status, stack);
    int first = !g;
    if (!g)
        g = add_group(call, status, stack);
    if (g)
        g->count++;
    long index = g ? g->finding : -1;
    pthread_mutex_unlock(&lock);
    if (first) {
        finding f = {.kind = CHECK_FAILED_CALL, .call = call, .stack = stack, .error = status,
                     .error_name = status_name, .error_text = status_text, .count = 1,
                     .note = mode == CHECK_CALLS_NOTE};
        index = check__report(&f);
        /* Failures of the group on other threads while it was reported: counted now. */
        uint64_t more = 0;
        pthread_mutex_lock(&lock);
        g = find_group(call, status, stack);
        if (g) {
            g->finding = index;
            more = g->count - 1;
        }
        pthread_mutex_unlock(&lock);
        if (more)
            check__findings_count_add(index, more);
    } else if (index >= 0) {
        check__findings_count_add(index, 1);
    }
    check_tls_busy--;
}

void check__calls_summary(uint64_t *calls, uint64_t *sites)
{
    pthread_mutex_lock(&lock);
    *calls = failures;
    *sites = ngroups;
    pthread_mutex_unlock(&lock);
}

/* ---- calls counted (GPUMEM_CHECK_COUNT_CALLS=1) ---- */

#define SEEN_IDS 2048
static _Atomic uint64_t seen_count[2][SEEN_IDS];
static _Atomic(const char *) seen_name[2][SEEN_IDS];

int check_count_calls(void)
{
    return check_setting_choice(CHECK_SET_COUNT_CALLS) == 1;
}

void check_call_seen(int domain, unsigned id, const char *name)
{
    if (domain < 0 || domain > 1 || id >= SEEN_IDS)
        return;
    if (!atomic_load_explicit(&seen_name[domain][id], memory_order_relaxed))
        atomic_store_explicit(&seen_name[domain][id], name, memory_order_relaxed);
    atomic_fetch_add_explicit(&seen_count[domain][id], 1, memory_order_relaxed);
}

void check__calls_seen_report(void)
{
    enum { TOP = 12 };
    uint64_t total = 0, top_n[TOP] = {0};
    const char *top_name[TOP] = {0};
    for (int d = 0; d < 2; d++)
        for (unsigned i = 0; i < SEEN_IDS; i++) {
            uint64_t n = atomic_load_explicit(&seen_count[d][i], memory_order_relaxed);
            if (!n)
                continue;
            total += n;
            int at = TOP;
            while (at > 0 && top_n[at - 1] < n)
                at--;
            if (at == TOP)
                continue;
            memmove(&top_n[at + 1], &top_n[at], (TOP - 1 - at) * sizeof *top_n);
            memmove(&top_name[at + 1], &top_name[at], (TOP - 1 - at) * sizeof *top_name);
            top_n[at] = n;
            top_name[at] = atomic_load_explicit(&seen_name[d][i], memory_order_relaxed);
        }
    check__say("CALLS SEEN: %llu CUDA call%s came through gpumem check's callbacks%s",
               (unsigned long long)total, total == 1 ? "" : "s", total ? "; the most frequent:" : "");
    for (int i = 0; i < TOP && top_n[i]; i++)
        check__say("   %-40s %12llu  %5.1f %%", top_name[i] ? top_name[i] : "?",
                   (unsigned long long)top_n[i], 100.0 * (double)top_n[i] / (double)total);
}

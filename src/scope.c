/* Ownership: GPUMEM_AUTO's cleanup, gpumem_steal and scopes.
 *
 * A scope keeps, for each adopted allocation, the pointer and the allocation's sequence
 * number. Closing releases an entry only when the registry still has that pointer live with
 * that sequence number. A pointer released by hand behind the scope's back is therefore never
 * released a second time, even when CUDA has since handed the same address to a new
 * allocation (which a plain second gpumem_free would have released: the quarantine only
 * catches a double free while the address is unused).
 *
 * Entries live in the scope itself up to GPUMEM_SCOPE_INLINE, then in a heap array that
 * doubles. A scope belongs to one thread, so nothing here locks; the registry lookups lock
 * their shard as usual. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SCOPE_MAGIC 0x5c09e0a1u

/* Reallocation of the entry array, replaceable by the tests to make growth fail. */
extern void *(*gpumem__scope_realloc)(void *p, size_t bytes);
void *(*gpumem__scope_realloc)(void *p, size_t bytes) = realloc;

/* The pointer stored in a pointer variable of any object type. memcpy, not *(void **)pp: the
 * variable's type is float * or the like, and reading it as void * would break aliasing. */
static void *load_ptr(const void *pp)
{
    void *p;
    memcpy(&p, pp, sizeof p);
    return p;
}

static void store_null(void *pp)
{
    void *null = NULL;
    memcpy(pp, &null, sizeof null);
}

void gpumem_auto_release(void *pp)
{
    if (!pp)
        return;
    void *p = load_ptr(pp);
    if (!p)
        return;
    store_null(pp);
    (gpumem_free)(p);
}

void *gpumem_steal(void *pp)
{
    if (!pp)
        return NULL;
    void *p = load_ptr(pp);
    store_null(pp);
    return p;
}

void gpumem_scope_init_at(gpumem_scope *s, gpumem_site site)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    s->magic = SCOPE_MAGIC;
    s->capacity = GPUMEM_SCOPE_INLINE;
    s->site = site;
}

gpumem_scope gpumem_scope_make_at(gpumem_site site)
{
    gpumem_scope s;
    gpumem_scope_init_at(&s, site);
    return s;
}

size_t gpumem_scope_count(const gpumem_scope *s)
{
    return s && s->magic == SCOPE_MAGIC ? s->count : 0;
}

static gpumem_scope_entry *entries(gpumem_scope *s)
{
    return s->heap ? s->heap : s->inline_entries;
}

/* Index of the entry for p (the most recent one when a stale entry shares the address), or
 * s->count when there is none. */
static size_t find_entry(gpumem_scope *s, const void *p)
{
    gpumem_scope_entry *e = entries(s);
    for (size_t i = s->count; i-- > 0;)
        if (e[i].ptr == p)
            return i;
    return s->count;
}

static void remove_entry(gpumem_scope *s, size_t i)
{
    gpumem_scope_entry *e = entries(s);
    memmove(&e[i], &e[i + 1], (s->count - i - 1) * sizeof *e);
    s->count--;
}

/* Makes room for one more entry. Returns 0, or -1 when the heap array cannot grow (the scope
 * is unchanged). */
static int grow(gpumem_scope *s)
{
    if (s->count < s->capacity)
        return 0;
    if (s->capacity > SIZE_MAX / 2 / sizeof(gpumem_scope_entry))
        return -1;
    size_t cap = s->capacity * 2;
    gpumem_scope_entry *n = gpumem__scope_realloc(s->heap, cap * sizeof *n);
    if (!n)
        return -1;
    if (!s->heap)
        memcpy(n, s->inline_entries, s->count * sizeof *n);
    s->heap = n;
    s->capacity = cap;
    return 0;
}

static void scope_where(const gpumem_scope *s, char *buf, size_t n)
{
    gpumem__site_str(s->site, buf, n);
}

/* Reports a bad scope or a failed growth after releasing p, so the memory does not leak.
 * The release comes first: a successful gpumem_free resets the record, the error below is the
 * one the caller sees. */
static void *adopt_failed(int code, const gpumem_scope *s, void *p, const gpumem__rec *r,
                          gpumem_site site)
{
    gpumem_free_at(p, site);
    char where[256], size_text[32];
    gpumem_error *e = gpumem__err_begin(code, "gpumem_adopt", site);
    gpumem__err_alloc(e, r);
    gpumem__err_append(e, "gpumem_adopt at %s: ", gpumem__site_str(site, where, sizeof where));
    if (code == GPUMEM_ENOMEM) {
        char decl[256];
        scope_where(s, decl, sizeof decl);
        gpumem__err_append(e, "the scope declared at %s cannot grow past %zu entries (out of "
                              "host memory)", decl, s->count);
    } else {
        gpumem__err_append(e, "the scope is NULL or was never initialized (declare it with "
                              "GPUMEM_SCOPE or GPUMEM_SCOPE_MANUAL)");
    }
    gpumem__err_append(e, "\n    the %s %s allocation at %p, made at %s, was released at once "
                          "so that it does not leak",
                       gpumem_format_bytes(r->bytes, size_text, sizeof size_text),
                       gpumem_kind_name(r->kind), (void *)r->base,
                       gpumem__site_str(r->site, where, sizeof where));
    gpumem__err_raise(e);
    return NULL;
}

static void *adopt_refused(const void *p, gpumem_site site)
{
    char where[256], size_text[32];
    gpumem__rec r;
    gpumem_error *e;
    if (gpumem__reg_find(p, &r)) {
        e = gpumem__err_begin(GPUMEM_EINTERIOR, "gpumem_adopt", site);
        gpumem__err_alloc(e, &r);
        e->alloc_offset = (size_t)((uintptr_t)p - r.base);
        gpumem__err_append(e, "gpumem_adopt of %p, which is %zu bytes into the %s %s allocation "
                              "at %p made at %s",
                           p, e->alloc_offset,
                           gpumem_format_bytes(r.bytes, size_text, sizeof size_text),
                           gpumem_kind_name(r.kind), (void *)r.base,
                           gpumem__site_str(r.site, where, sizeof where));
    } else {
        e = gpumem__err_begin(GPUMEM_EFOREIGN, "gpumem_adopt", site);
        gpumem__err_append(e, "gpumem_adopt of %p, which is not live gpumem memory (never "
                              "allocated by gpumem, or already released)",
                           p);
    }
    gpumem__err_append(e, "\n    %-18s %s", "adopted at",
                       gpumem__site_str(site, where, sizeof where));
    gpumem__err_append(e, "\n  hint: adopt the pointer a gpumem allocation returned; nothing "
                          "was adopted or released");
    gpumem__err_raise(e);
    return NULL;
}

void *gpumem_adopt_at(gpumem_scope *s, void *p, gpumem_site site)
{
    if (!p)
        return NULL;
    gpumem__rec r;
    if (!gpumem__reg_find(p, &r) || r.base != (uintptr_t)p)
        return adopt_refused(p, site);
    if (!s || s->magic != SCOPE_MAGIC)
        return adopt_failed(GPUMEM_EINVAL, s, p, &r, site);
    size_t i = find_entry(s, p);
    if (i < s->count && entries(s)[i].seq == r.seq)
        return p; /* already held: adopting twice must not release twice */
    if (grow(s) != 0)
        return adopt_failed(GPUMEM_ENOMEM, s, p, &r, site);
    entries(s)[s->count++] = (gpumem_scope_entry){p, r.seq, r.site};
    return p;
}

/* An adopted allocation that is no longer live as adopted: released by hand, perhaps with
 * its address reused since. */
static int report_released_elsewhere(const char *fn, const gpumem_scope *s,
                                     const gpumem_scope_entry *en, gpumem_site site)
{
    char where[256], decl[256];
    gpumem_error *e = gpumem__err_begin(GPUMEM_EDOUBLEFREE, fn, site);
    e->alloc_base = en->ptr;
    e->alloc_site = en->site;
    e->alloc_seq = en->seq;
    scope_where(s, decl, sizeof decl);
    gpumem__err_append(e, "double free prevented: %p, adopted by the scope declared at %s, "
                          "was already released outside the scope; it is not released again",
                       en->ptr, decl);
    gpumem__err_append(e, "\n    %-18s %s", "released again at",
                       gpumem__site_str(site, where, sizeof where));
    gpumem__err_append(e, "\n    %-18s %s, #%llu", "allocated at",
                       gpumem__site_str(en->site, where, sizeof where),
                       (unsigned long long)en->seq);
    gpumem__err_append(e, "\n  hint: release adopted memory early with "
                          "gpumem_scope_release(s, p), or take it back with "
                          "gpumem_scope_steal(s, p)");
    return gpumem__err_raise(e);
}

/* Releases an entry already taken out of the scope, if it is still live as adopted. */
static int release_entry(const char *fn, const gpumem_scope *s, const gpumem_scope_entry *en,
                         gpumem_site site)
{
    gpumem__rec r;
    if (gpumem__reg_find(en->ptr, &r) && r.base == (uintptr_t)en->ptr && r.seq == en->seq)
        return gpumem_free_at(en->ptr, site);
    return report_released_elsewhere(fn, s, en, site);
}

static int close_scope(gpumem_scope *s, gpumem_site site)
{
    if (!s || s->magic != SCOPE_MAGIC)
        return GPUMEM_OK;
    int first = GPUMEM_OK;
    /* Entries are taken off the end one at a time, so a handler that looks at the scope sees
     * only what is still held. */
    while (s->count > 0) {
        gpumem_scope_entry en = entries(s)[s->count - 1];
        s->count--;
        int rc = release_entry("gpumem_scope_close", s, &en, site);
        if (rc != GPUMEM_OK && first == GPUMEM_OK)
            first = rc;
    }
    free(s->heap);
    s->heap = NULL;
    s->capacity = GPUMEM_SCOPE_INLINE;
    return first;
}

int gpumem_scope_close_at(gpumem_scope *s, gpumem_site site)
{
    return close_scope(s, site);
}

void gpumem_scope_cleanup(void *scope)
{
    gpumem_scope *s = scope;
    if (s && s->magic == SCOPE_MAGIC)
        close_scope(s, s->site);
}

#define NOT_HELD SIZE_MAX

/* Index of p's entry when s is a scope that holds p, else NOT_HELD. */
static size_t held_at(gpumem_scope *s, const void *p)
{
    if (!s || s->magic != SCOPE_MAGIC)
        return NOT_HELD;
    size_t i = find_entry(s, p);
    return i < s->count ? i : NOT_HELD;
}

static int not_held(const char *fn, const gpumem_scope *s, const void *p, gpumem_site site)
{
    char where[256], decl[256] = "(not a scope)";
    if (s && s->magic == SCOPE_MAGIC)
        scope_where(s, decl, sizeof decl);
    gpumem_error *e = gpumem__err_begin(GPUMEM_EINVAL, fn, site);
    gpumem__err_append(e, "%s of %p at %s: the scope declared at %s does not hold it; nothing "
                          "was changed",
                       fn, p, gpumem__site_str(site, where, sizeof where), decl);
    return gpumem__err_raise(e);
}

int gpumem_scope_release_at(gpumem_scope *s, void *p, gpumem_site site)
{
    if (!p)
        return GPUMEM_OK;
    size_t i = held_at(s, p);
    if (i == NOT_HELD)
        return not_held("gpumem_scope_release", s, p, site);
    gpumem_scope_entry en = entries(s)[i];
    remove_entry(s, i);
    return release_entry("gpumem_scope_release", s, &en, site);
}

void *gpumem_scope_steal_at(gpumem_scope *s, void *p, gpumem_site site)
{
    if (!p)
        return NULL;
    size_t i = held_at(s, p);
    if (i == NOT_HELD) {
        not_held("gpumem_scope_steal", s, p, site);
        return NULL;
    }
    remove_entry(s, i);
    return p;
}

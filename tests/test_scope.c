/* Ownership in C: GPUMEM_AUTO, gpumem_steal and scopes, on every path out of a block. Each
 * test checks what is live (gpumem_live_get) after the block, not only return values.
 *
 * Built twice: test_scope (cleanup attribute on) and test_scope_manual (-DGPUMEM_NO_CLEANUP:
 * GPUMEM_AUTO and GPUMEM_SCOPE are not defined, and the explicit-close path is what runs). */
#include "gpumem.h"
#include "backend_arg.h"
#include "harness.h"

#if defined(GPUMEM_NO_CLEANUP) && (GPUMEM_HAVE_CLEANUP || defined(GPUMEM_AUTO) ||               \
                                   defined(GPUMEM_SCOPE))
#error "GPUMEM_NO_CLEANUP must leave GPUMEM_AUTO and GPUMEM_SCOPE undefined"
#endif

#define EXPECT_NOT_NULL_(a) EXPECT_PTR_(!=, a, NULL)

/* The test replaces the scope's reallocation to make growth fail (src/scope.c). */
extern void *(*gpumem__scope_realloc)(void *p, size_t bytes);

static struct {
    int calls;
    int codes[16];
    uint64_t seqs[16];
    char message[1024];
} seen;

static void capture(const gpumem_error *e, void *arg)
{
    (void)arg;
    if (seen.calls < 16) {
        seen.codes[seen.calls] = e->code;
        seen.seqs[seen.calls] = e->alloc_seq;
    }
    seen.calls++;
    snprintf(seen.message, sizeof seen.message, "%s", e->message);
}

static void reset_seen(void)
{
    memset(&seen, 0, sizeof seen);
}

static uint64_t live(int kind)
{
    gpumem_live l;
    gpumem_live_get(&l);
    return l.count[kind];
}

static uint64_t seq_of(const void *p)
{
    gpumem_info info;
    return gpumem_query(p, &info) == GPUMEM_OK ? info.seq : 0;
}

/* ---- GPUMEM_AUTO ------------------------------------------------------------------------ */
#if GPUMEM_HAVE_CLEANUP
static int auto_early_return(int fail)
{
    GPUMEM_AUTO float *d = gpumem_device_alloc(1000, sizeof *d);
    GPUMEM_AUTO char *h = gpumem_pinned_alloc(100, 1);
    if (!d || !h)
        return -1;
    EXPECT_EQ(live(0), 2);
    if (fail)
        return 1; /* both released here */
    h[0] = 'x';
    return 0; /* and here */
}

static void test_auto_return(void)
{
    reset_seen();
    EXPECT_EQ(auto_early_return(1), 1);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(auto_early_return(0), 0);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(seen.calls, 0);
}

static void test_auto_goto_and_break(void)
{
    reset_seen();
    {
        GPUMEM_AUTO void *m = gpumem_managed_alloc(64, 4, GPUMEM_ATTACH_GLOBAL);
        EXPECT_EQ(live(GPUMEM_KIND_MANAGED), 1);
        if (m)
            goto out; /* leaves the block: m is released */
    }
out:
    EXPECT_EQ(live(GPUMEM_KIND_MANAGED), 0);
    for (int i = 0; i < 10; i++) {
        GPUMEM_AUTO void *h = gpumem_host_alloc(64, 4, GPUMEM_HOST_MAPPED);
        EXPECT_EQ(live(GPUMEM_KIND_HOST), 1); /* the previous iteration's was released */
        if (i % 2)
            continue;
        if (i == 6)
            break;
    }
    EXPECT_EQ(live(GPUMEM_KIND_HOST), 0);
    EXPECT_EQ(seen.calls, 0);
}

static void test_auto_null(void)
{
    reset_seen();
    {
        GPUMEM_AUTO float *zero = gpumem_device_alloc(0, sizeof *zero); /* NULL, not a failure */
        GPUMEM_AUTO float *none = NULL;
        EXPECT_NULL(zero);
        EXPECT_NULL(none);
    }
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(live(0), 0);
}

static float *make_owned(size_t n)
{
    GPUMEM_AUTO float *d = gpumem_device_alloc_async(n, sizeof *d, NULL);
    if (!d)
        return NULL;
    /* ... fill it; any early return above this line releases it ... */
    return gpumem_steal(&d); /* ownership goes to the caller; d is NULL at the '}' */
}

static void test_steal(void)
{
    reset_seen();
    float *p = make_owned(256);
    ASSERT_NOT_NULL(p);
    EXPECT_EQ(live(GPUMEM_KIND_DEVICE_ASYNC), 1);
    {
        GPUMEM_AUTO float *d = gpumem_device_alloc(10, sizeof *d);
        EXPECT_EQ(live(GPUMEM_KIND_DEVICE), 1);
        EXPECT_EQ(gpumem_free(gpumem_steal(&d)), GPUMEM_OK); /* early release */
        EXPECT_NULL(d);
        EXPECT_EQ(live(GPUMEM_KIND_DEVICE), 0);
    } /* d is NULL: nothing to release, no double free */
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(gpumem_free(p), GPUMEM_OK);
    EXPECT_NULL(gpumem_steal(NULL));
    EXPECT_EQ(live(0), 0);
}
#endif /* GPUMEM_HAVE_CLEANUP */

/* ---- scopes with automatic close -------------------------------------------------------- */
#if GPUMEM_HAVE_CLEANUP
static int scope_run(size_t n, int fail_at)
{
    GPUMEM_SCOPE(s);
    float *d_in = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d_in));
    float *d_out = gpumem_adopt(s, gpumem_device_alloc(n, sizeof *d_out));
    float *h_buf = gpumem_adopt(s, gpumem_host_alloc(n, sizeof *h_buf, GPUMEM_HOST_WRITE_COMBINED));
    if (!d_in || !d_out || !h_buf)
        return gpumem_last_error()->code; /* the scope still releases what exists */
    EXPECT_EQ(gpumem_scope_count(s), 3);
    if (fail_at == 1)
        return 1;
    void *m = gpumem_adopt(s, gpumem_managed_alloc(n, 4, 0));
    void *p = gpumem_adopt(s, gpumem_pinned_alloc(n, 4));
    if (!m || !p)
        return -1;
    EXPECT_EQ(live(0), 5);
    return 0;
}

static void test_scope_return(void)
{
    reset_seen();
    EXPECT_EQ(scope_run(1000, 1), 1);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(scope_run(1000, 0), 0);
    EXPECT_EQ(live(0), 0);
    /* count * size overflows: the first adoption gets NULL, the record is kept. */
    EXPECT_EQ(scope_run(SIZE_MAX / 2, 0), GPUMEM_EOVERFLOW);
    EXPECT_EQ(live(0), 0);
    EXPECT_GE(seen.calls, 1);
    EXPECT_EQ(seen.codes[0], GPUMEM_EOVERFLOW);
}

static void test_scope_goto_break_and_nesting(void)
{
    reset_seen();
    {
        GPUMEM_SCOPE(outer);
        void *a = gpumem_adopt(outer, gpumem_device_alloc(10, 4));
        ASSERT_NOT_NULL(a);
        for (int i = 0; i < 5; i++) {
            GPUMEM_SCOPE(inner);
            void *b = gpumem_adopt(inner, gpumem_pinned_alloc(10, 4));
            void *c = gpumem_adopt(inner, gpumem_device_alloc(10, 4));
            EXPECT_TRUE(b && c);
            EXPECT_EQ(live(0), 3); /* the previous iteration's inner scope closed */
            {
                GPUMEM_SCOPE(innermost);
                EXPECT_NOT_NULL_(gpumem_adopt(innermost, gpumem_host_alloc(1, 4, 0)));
                EXPECT_EQ(live(0), 4);
            }
            EXPECT_EQ(live(0), 3); /* innermost closed first */
            if (i == 3)
                break;
        }
        EXPECT_EQ(live(0), 1); /* inner closed, outer still open */
        EXPECT_EQ(gpumem_scope_count(outer), 1);
        {
            GPUMEM_SCOPE(g);
            EXPECT_NOT_NULL_(gpumem_adopt(g, gpumem_managed_alloc(1, 4, GPUMEM_ATTACH_HOST)));
            goto done;
        }
    done:
        EXPECT_EQ(live(0), 1);
    }
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(seen.calls, 0);
}

/* A hand release of adopted memory: the scope does not release it again, and says so, naming
 * the scope's declaration (the automatic close's release site). */
static int hand_release_line;
static void hand_release(void)
{
    GPUMEM_SCOPE(s); hand_release_line = __LINE__;
    void *a = gpumem_adopt(s, gpumem_device_alloc(10, 4));
    if (a)
        gpumem_free(a); /* a mistake: the scope owns it */
}

static void test_scope_close_reports_errors(void)
{
    reset_seen();
    hand_release();
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(seen.codes[0], GPUMEM_EDOUBLEFREE);
    EXPECT_CONTAINS(seen.message, "gpumem: error: double free prevented");
    EXPECT_CONTAINS(seen.message, "was already released outside the scope");
    char decl[64];
    snprintf(decl, sizeof decl, "test_scope.c:%d (hand_release)", hand_release_line);
    EXPECT_CONTAINS(seen.message, decl);
    EXPECT_CONTAINS(seen.message, "gpumem_scope_release(s, p)");
    EXPECT_EQ(live(0), 0);
}
#endif /* GPUMEM_HAVE_CLEANUP */

/* ---- explicit close: the path for compilers without cleanup ----------------------------- */
static int manual_run(int fail)
{
    GPUMEM_SCOPE_MANUAL(s);
    int rc = 0;
    float *d = gpumem_adopt(s, gpumem_device_alloc(100, sizeof *d));
    char *h = gpumem_adopt(s, gpumem_pinned_alloc(100, 1));
    if (!d || !h || fail) {
        rc = 1;
        goto out;
    }
    h[0] = 1;
out:
    if (gpumem_scope_close(s) != GPUMEM_OK)
        rc = -1;
    return rc;
}

static void test_manual_close(void)
{
    reset_seen();
    EXPECT_EQ(manual_run(1), 1);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(manual_run(0), 0);
    EXPECT_EQ(live(0), 0);

    GPUMEM_SCOPE_MANUAL(s);
    EXPECT_EQ(gpumem_scope_count(s), 0);
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK); /* empty: nothing to do */
    EXPECT_NOT_NULL_(gpumem_adopt(s, gpumem_device_alloc(1, 1)));
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK); /* twice: harmless */
    EXPECT_EQ(live(0), 0);
    /* A closed scope is empty and may adopt again. */
    EXPECT_NOT_NULL_(gpumem_adopt(s, gpumem_host_alloc(1, 1, GPUMEM_HOST_PORTABLE)));
    EXPECT_EQ(live(0), 1);
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(gpumem_scope_close(NULL), GPUMEM_OK);
    EXPECT_EQ(seen.calls, 0);

    /* A scope that is not a local variable. */
    struct holder {
        int id;
        gpumem_scope scope;
    } *hold = malloc(sizeof *hold);
    ASSERT_NOT_NULL(hold);
    gpumem_scope_init(&hold->scope);
    EXPECT_NOT_NULL_(gpumem_adopt(&hold->scope, gpumem_device_alloc(8, 8)));
    EXPECT_EQ(live(0), 1);
    EXPECT_EQ(gpumem_scope_close(&hold->scope), GPUMEM_OK);
    EXPECT_EQ(live(0), 0);
    free(hold);
}

/* Closing releases in reverse order of adoption: observed through the reports of memory
 * released behind the scope's back, which close emits in its own order. */
static void test_reverse_order(void)
{
    GPUMEM_SCOPE_MANUAL(s);
    void *p[3];
    uint64_t seq[3];
    for (int i = 0; i < 3; i++) {
        p[i] = gpumem_adopt(s, gpumem_device_alloc(16, 1));
        ASSERT_NOT_NULL(p[i]);
        seq[i] = seq_of(p[i]);
    }
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(gpumem_free(p[i]), GPUMEM_OK);
    reset_seen();
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_EDOUBLEFREE);
    ASSERT_EQ(seen.calls, 3);
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(seen.codes[i], GPUMEM_EDOUBLEFREE);
        EXPECT_EQ(seen.seqs[i], seq[2 - i]);
    }
    EXPECT_CONTAINS(seen.message, "test_scope.c:"); /* names the close's call site */
    EXPECT_EQ(live(0), 0);
    reset_seen();
}

static void test_null_pass_through(void)
{
    reset_seen();
    GPUMEM_SCOPE_MANUAL(s);
    EXPECT_NULL(gpumem_adopt(s, NULL));
    EXPECT_NULL(gpumem_adopt(s, gpumem_pinned_alloc(SIZE_MAX, 2)));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EOVERFLOW); /* adoption kept the record */
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(gpumem_scope_count(s), 0);
    EXPECT_EQ(gpumem_scope_release(s, NULL), GPUMEM_OK);
    EXPECT_NULL(gpumem_scope_steal(s, NULL));
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
}

/* Adopting twice holds once and releases once. */
static void test_double_adoption(void)
{
    reset_seen();
    GPUMEM_SCOPE_MANUAL(s);
    void *a = gpumem_adopt(s, gpumem_device_alloc(4, 4));
    ASSERT_NOT_NULL(a);
    EXPECT_PTR_EQ(gpumem_adopt(s, a), a);
    EXPECT_PTR_EQ(gpumem_adopt(s, a), a);
    EXPECT_EQ(gpumem_scope_count(s), 1);
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(seen.calls, 0);
}

static void test_release_and_steal_from_scope(void)
{
    reset_seen();
    GPUMEM_SCOPE_MANUAL(s);
    void *a = gpumem_adopt(s, gpumem_device_alloc(4, 4));
    void *b = gpumem_adopt(s, gpumem_pinned_alloc(4, 4));
    void *c = gpumem_adopt(s, gpumem_managed_alloc(4, 4, 0));
    ASSERT_NOT_NULL(a);
    ASSERT_NOT_NULL(b);
    ASSERT_NOT_NULL(c);
    EXPECT_EQ(gpumem_scope_release(s, b), GPUMEM_OK); /* early release */
    EXPECT_EQ(live(GPUMEM_KIND_PINNED), 0);
    EXPECT_EQ(gpumem_scope_count(s), 2);
    EXPECT_PTR_EQ(gpumem_scope_steal(s, c), c); /* the caller owns c again */
    EXPECT_EQ(gpumem_scope_count(s), 1);
    EXPECT_EQ(seen.calls, 0);

    /* Not held: refused, nothing changed. */
    EXPECT_EQ(gpumem_scope_release(s, b), GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "does not hold it; nothing was changed");
    EXPECT_NULL(gpumem_scope_steal(s, c));
    EXPECT_EQ(seen.calls, 2);
    EXPECT_EQ(live(GPUMEM_KIND_MANAGED), 1);

    reset_seen();
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    EXPECT_EQ(live(GPUMEM_KIND_DEVICE), 0);
    EXPECT_EQ(live(GPUMEM_KIND_MANAGED), 1); /* stolen: not released by the scope */
    EXPECT_EQ(gpumem_free(c), GPUMEM_OK);
    EXPECT_EQ(seen.calls, 0);
    EXPECT_EQ(live(0), 0);
}

/* This test releases adopted memory by hand on purpose, which GCC >= 12 rightly flags
 * (-Wuse-after-free, from the malloc(gpumem_free, 1) attribute). */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
/* The address of memory released by hand is reused by a new allocation before the scope
 * closes: the scope must not release the new one. Whether the allocator reuses the address
 * is up to it, so this tries a few times. */
static void test_reused_address_not_released(void)
{
    GPUMEM_SCOPE_MANUAL(s);
    void *a = gpumem_adopt(s, gpumem_pinned_alloc(4096, 1));
    ASSERT_NOT_NULL(a);
    uintptr_t addr = (uintptr_t)a;
    EXPECT_EQ(gpumem_free(a), GPUMEM_OK); /* behind the scope's back */
    void *held[64];
    int n = 0;
    int same = 0;
    while (n < 64) {
        held[n] = gpumem_pinned_alloc(4096, 1);
        if (!held[n])
            break;
        if ((uintptr_t)held[n++] == addr) {
            same = 1;
            break;
        }
    }
    reset_seen();
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_EDOUBLEFREE);
    EXPECT_EQ(seen.calls, 1);
    EXPECT_EQ(live(GPUMEM_KIND_PINNED), (uint64_t)n); /* the new ones are all still live */
    if (same)
        fprintf(stderr, "  (the address was reused; the new allocation survived the close)\n");
    for (int i = 0; i < n; i++)
        EXPECT_EQ(gpumem_free(held[i]), GPUMEM_OK);
    EXPECT_EQ(live(0), 0);
    reset_seen();
}

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic pop
#endif

static void test_adopt_refuses_bad_pointers(void)
{
    reset_seen();
    GPUMEM_SCOPE_MANUAL(s);
    int on_stack = 0;
    EXPECT_NULL(gpumem_adopt(s, &on_stack));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EFOREIGN);
    EXPECT_CONTAINS(seen.message, "which is not live gpumem memory");
    char *d = gpumem_device_alloc(1024, 1);
    ASSERT_NOT_NULL(d);
    EXPECT_NULL(gpumem_adopt(s, d + 64));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINTERIOR);
    EXPECT_CONTAINS(seen.message, "which is 64 bytes into the 1.0 KiB device allocation");
    EXPECT_EQ(live(GPUMEM_KIND_DEVICE), 1); /* neither adopted nor released */
    EXPECT_EQ(gpumem_scope_count(s), 0);

    /* No scope: released at once so that it does not leak. */
    EXPECT_NULL(gpumem_adopt(NULL, d));
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_EINVAL);
    EXPECT_CONTAINS(seen.message, "was released at once so that it does not leak");
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    reset_seen();
}

static int fail_realloc_calls;
static void *failing_realloc(void *p, size_t bytes)
{
    (void)p;
    (void)bytes;
    fail_realloc_calls++;
    return NULL;
}

static void test_growth(void)
{
    reset_seen();
    GPUMEM_SCOPE_MANUAL(s);
    /* Past the inline entries onto the heap, twice over. */
    for (int i = 0; i < 100; i++)
        EXPECT_NOT_NULL_(gpumem_adopt(s, gpumem_device_alloc(1, 4)));
    EXPECT_EQ(gpumem_scope_count(s), 100);
    EXPECT_EQ(live(0), 100);
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(seen.calls, 0);

    /* Growth fails: the pointer is released at once, the scope keeps what it had. */
    for (int i = 0; i < GPUMEM_SCOPE_INLINE; i++)
        EXPECT_NOT_NULL_(gpumem_adopt(s, gpumem_device_alloc(1, 4)));
    void *(*saved)(void *, size_t) = gpumem__scope_realloc;
    gpumem__scope_realloc = failing_realloc;
    EXPECT_NULL(gpumem_adopt(s, gpumem_pinned_alloc(1, 4)));
    gpumem__scope_realloc = saved;
    EXPECT_EQ(fail_realloc_calls, 1);
    EXPECT_EQ(gpumem_last_error()->code, GPUMEM_ENOMEM);
    EXPECT_CONTAINS(seen.message, "cannot grow past 8 entries (out of host memory)");
    EXPECT_CONTAINS(seen.message, "pinned allocation");
    EXPECT_CONTAINS(seen.message, "was released at once so that it does not leak");
    EXPECT_EQ(live(GPUMEM_KIND_PINNED), 0);
    EXPECT_EQ(gpumem_scope_count(s), GPUMEM_SCOPE_INLINE);
    reset_seen();
    EXPECT_EQ(gpumem_scope_close(s), GPUMEM_OK);
    EXPECT_EQ(live(0), 0);
    EXPECT_EQ(seen.calls, 0);
}

int main(int argc, char **argv)
{
    gpumem_set_error_handler(capture, NULL);
    if (!test_select_backend(argc, argv))
        return 2;
    if (!test_device_ready())
        return harness_exit();
    fprintf(stderr, "cleanup attribute: %s\n", GPUMEM_HAVE_CLEANUP ? "on" : "off");
#if GPUMEM_HAVE_CLEANUP
    RUN(test_auto_return);
    RUN(test_auto_goto_and_break);
    RUN(test_auto_null);
    RUN(test_steal);
    RUN(test_scope_return);
    RUN(test_scope_goto_break_and_nesting);
    RUN(test_scope_close_reports_errors);
#endif
    RUN(test_manual_close);
    RUN(test_reverse_order);
    RUN(test_null_pass_through);
    RUN(test_double_adoption);
    RUN(test_release_and_steal_from_scope);
    RUN(test_reused_address_not_released);
    RUN(test_adopt_refuses_bad_pointers);
    RUN(test_growth);
    EXPECT_EQ(live(0), 0);
    return harness_exit();
}

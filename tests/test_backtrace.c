/* The stack module (src/backtrace.c): capture, deduplication, symbolization and trimming.
 *
 * Built three ways (tests/CMakeLists.txt), each checking what it can expect:
 *   test_backtrace          -g, with the library as built (libdw when found): names, files,
 *                           lines;
 *   test_backtrace_nodebug  -g0: names from the symbol table, no file and no line;
 *   test_backtrace_nolibdw  backtrace.c compiled in without libdw or libunwind (glibc's
 *                           backtrace() and dladdr), linked with -rdynamic: names only.
 * The functions whose frames are checked are not static, so that dladdr can name them in the
 * last build, and noinline, with work after each call, so that every one keeps its frame. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "backtrace.h"
#include "harness.h"

#define NOINLINE __attribute__((noinline))
/* Keeps a call from becoming a tail call, which would take its caller's frame away. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

#if defined(BT_NO_DEBUG)
enum { expect_files = 0 };
#else
enum { expect_files = 1 };
#endif

static int have_libdw;  /* from gpumem__stack_backend() */
/* Function names: from libdw, or from dladdr when this executable exports its functions.
 * Without either (the library built without libdw, no -rdynamic), only addresses, objects,
 * ids and the trimming of libc's start code can be checked. */
static int have_names;
/* Set by the functions themselves, from every thread in test_threads: atomic. */
static _Atomic int line_leaf, line_middle, line_outer, line_site_a, line_site_b;

uint32_t gpumem__test_wrapper(int skip);
uint32_t bt_leaf(int skip);
uint32_t bt_middle(int skip);
uint32_t bt_outer(int skip);
uint32_t bt_site_a(void);
uint32_t bt_site_b(void);
uint32_t bt_recurse(int depth);

/* Stands for gpumem's allocation path between the caller and the capture: named like
 * gpumem's functions, so it must be trimmed. */
NOINLINE uint32_t gpumem__test_wrapper(int skip)
{
    uint32_t id = gpumem__stack_capture(skip);
    KEEP_FRAME();
    return id;
}

NOINLINE uint32_t bt_leaf(int skip)
{
    uint32_t id = gpumem__test_wrapper(skip); line_leaf = __LINE__;
    KEEP_FRAME();
    return id;
}

NOINLINE uint32_t bt_middle(int skip)
{
    uint32_t id = bt_leaf(skip); line_middle = __LINE__;
    KEEP_FRAME();
    return id;
}

NOINLINE uint32_t bt_outer(int skip)
{
    uint32_t id = bt_middle(skip); line_outer = __LINE__;
    KEEP_FRAME();
    return id;
}

NOINLINE uint32_t bt_site_a(void)
{
    uint32_t id = bt_leaf(0); line_site_a = __LINE__;
    KEEP_FRAME();
    return id;
}

NOINLINE uint32_t bt_site_b(void)
{
    uint32_t id = bt_leaf(0); line_site_b = __LINE__;
    KEEP_FRAME();
    return id;
}

NOINLINE uint32_t bt_recurse(int depth)
{
    uint32_t id = depth > 0 ? bt_recurse(depth - 1) : bt_leaf(0);
    KEEP_FRAME();
    return id;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = s ? strlen(s) : 0, m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Line within a line of the call: optimized line tables may put the return address there. */
static void expect_frame(const gpumem__frame *f, const char *func, int line)
{
    EXPECT_STR_EQ(f->func, func);
    EXPECT_NE(f->pc, 0);
    if (expect_files && have_libdw) {
        EXPECT_TRUE(has_suffix(f->file, "/test_backtrace.c"));
        EXPECT_GE(f->line, line - 1);
        EXPECT_LE(f->line, line + 1);
    } else {
        EXPECT_NULL(f->file);
        EXPECT_EQ(f->line, 0);
    }
}

NOINLINE static void test_nested_frames(void)
{
    uint32_t id = bt_outer(0);
    ASSERT_NE(id, 0);
    gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
    int n = gpumem__stack_frames(id, f, GPUMEM__STACK_MAX_FRAMES);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  frame %d: %s %s:%d [%s]\n", i, f[i].func, f[i].file ? f[i].file : "-",
                f[i].line, f[i].object ? f[i].object : "-");
    if (!have_names) {
        /* wrapper, leaf, middle, outer, this, main: all in this executable, none in libc */
        EXPECT_EQ(n, 6);
        for (int i = 0; i < n; i++) {
            EXPECT_STR_EQ(f[i].func, "???");
            EXPECT_NE(f[i].pc, 0);
            EXPECT_TRUE(f[i].object && !strstr(f[i].object, "libc.so"));
        }
        return;
    }
    /* bt_leaf, bt_middle, bt_outer, test_nested_frames, main: gpumem's frames and libc's
     * start code are gone. (dladdr cannot name the static test_nested_frames.) */
    ASSERT_EQ(n, 5);
    expect_frame(&f[0], "bt_leaf", line_leaf);
    if (have_libdw)
        EXPECT_STR_EQ(f[3].func, "test_nested_frames");
    expect_frame(&f[1], "bt_middle", line_middle);
    expect_frame(&f[2], "bt_outer", line_outer);
    EXPECT_STR_EQ(f[n - 1].func, "main");
    for (int i = 0; i < n; i++) {
        EXPECT_TRUE(strncmp(f[i].func, "gpumem_", 7) != 0);
        EXPECT_TRUE(f[i].object != NULL);
    }
    /* A smaller buffer gets the innermost frames. */
    gpumem__frame two[2];
    EXPECT_EQ(gpumem__stack_frames(id, two, 2), 2);
    EXPECT_STR_EQ(two[0].func, "bt_leaf");
    EXPECT_STR_EQ(two[1].func, "bt_middle");
}

static void test_print(void)
{
    uint32_t id = bt_outer(0);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ASSERT_NOT_NULL(out);
    gpumem__stack_print(id, out, "    ");
    gpumem__stack_print(0, out, "    "); /* prints nothing */
    fclose(out);
    fprintf(stderr, "%s", text);
    if (!have_names) {
        EXPECT_CONTAINS(text, "    at ??? (in ");
        EXPECT_TRUE(strstr(text, "libc.so") == NULL);
        free(text);
        return;
    }
    if (expect_files && have_libdw) {
        char want[128];
        snprintf(want, sizeof want, "    at bt_leaf (");
        EXPECT_CONTAINS(text, want);
        snprintf(want, sizeof want, "test_backtrace.c:%d)\n    by bt_middle (", line_leaf);
        if (!strstr(text, want)) /* the line may be off by one (see expect_frame) */
            snprintf(want, sizeof want, "test_backtrace.c:");
        EXPECT_CONTAINS(text, want);
    } else {
        EXPECT_CONTAINS(text, "    at bt_leaf (in ");
        EXPECT_CONTAINS(text, "\n    by bt_middle (in ");
    }
    EXPECT_CONTAINS(text, "    by main (");
    EXPECT_TRUE(strstr(text, " gpumem_") == NULL);
    EXPECT_TRUE(strstr(text, "__libc_start") == NULL);
    free(text);
}

/* Calls fn(arg) `times` times from one call site, each id into out. The trip count is read
 * from a volatile so that the compiler cannot unroll or peel the loop: a copy of the call would
 * be another call site, hence another stack. */
static volatile int opaque_times;
NOINLINE static void repeat(uint32_t (*fn)(int), int arg, uint32_t *out, int times)
{
    opaque_times = times;
    for (int i = 0; i < opaque_times; i++)
        out[i] = fn(arg);
}

static uint32_t site_a(int unused)
{
    (void)unused;
    return bt_site_a();
}

static uint32_t site_b(int unused)
{
    (void)unused;
    return bt_site_b();
}

NOINLINE static void test_dedup(void)
{
    uint32_t a[3], b[2], s0[2], s1[2];
    repeat(site_a, 0, a, 3);
    repeat(site_b, 0, b, 2);
    EXPECT_NE(a[0], 0);
    EXPECT_EQ(a[0], a[1]);
    EXPECT_EQ(a[0], a[2]);
    EXPECT_EQ(b[0], b[1]);
    EXPECT_NE(a[0], b[0]);
    /* The same stack from another call site in this function is a different stack. */
    EXPECT_NE(bt_site_a(), a[0]);
    /* Skip drops innermost frames before the lookup: a different stack, a different id. */
    repeat(bt_outer, 0, s0, 2);
    repeat(bt_outer, 1, s1, 2);
    EXPECT_EQ(s0[0], s0[1]);
    EXPECT_EQ(s1[0], s1[1]);
    EXPECT_NE(s0[0], s1[0]);
    gpumem__frame f[8];
    EXPECT_EQ(gpumem__stack_frames(0, f, 8), 0);
    EXPECT_EQ(gpumem__stack_frames(0x7fffffffu, f, 8), 0);
    if (!have_names)
        return;
    int n = gpumem__stack_frames(s1[0], f, 8);
    ASSERT_NE(n, 0);
    EXPECT_STR_EQ(f[0].func, "bt_leaf"); /* skip 1 dropped gpumem__test_wrapper */
    /* bt_leaf, bt_site_b, site_b (unless a tail call), repeat, test_dedup, main */
    n = gpumem__stack_frames(b[0], f, 8);
    ASSERT_NE(n, 0);
    expect_frame(&f[1], "bt_site_b", line_site_b);
    EXPECT_STR_EQ(f[n - 1].func, "main");
    EXPECT_EQ(gpumem__stack_frames(a[0], f, 0), 0);
}

static void test_deep_stack(void)
{
    uint32_t id = bt_recurse(100);
    gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
    int n = gpumem__stack_frames(id, f, GPUMEM__STACK_MAX_FRAMES);
    /* The innermost frames are kept: the allocation's own caller first. */
    EXPECT_GE(n, GPUMEM__STACK_MAX_FRAMES - 2); /* less the wrapper, trimmed */
    EXPECT_LE(n, GPUMEM__STACK_MAX_FRAMES);
    ASSERT_NE(n, 0);
    if (have_names) {
        EXPECT_STR_EQ(f[0].func, "bt_leaf");
        EXPECT_STR_EQ(f[n - 1].func, "bt_recurse");
    }
    EXPECT_EQ(bt_recurse(100), id);
    /* Deeper than the frames kept, stacks that share their innermost frames are one. */
    EXPECT_EQ(bt_recurse(99), id);
    EXPECT_NE(bt_recurse(20), id);
}

/* ---- 8 threads at once: the same stacks must get the same ids everywhere ---- */
#define THREADS 8
#define ROUNDS 2000

typedef struct {
    int index;
    uint32_t same;       /* bt_site_a from the thread function: equal on every thread */
    uint32_t own[4];     /* stacks by depth: equal across threads for equal depth */
    int bad;
    pthread_barrier_t *start;
} worker;

/* One round of a thread: straight-line code, so each capture has one call site. */
void bt_thread_round(worker *w, int r);
NOINLINE void bt_thread_round(worker *w, int r)
{
    uint32_t a = bt_site_a();
    int depth = (r + w->index) % 4;
    uint32_t id = bt_recurse(depth + 1);
    if (r == 0)
        w->same = a;
    else if (a != w->same)
        w->bad++;
    if (r < 4)
        w->own[depth] = id;
    else if (w->own[depth] != id)
        w->bad++;
    if (r % 64 == 0 && have_names) { /* symbolize while others capture */
        gpumem__frame f[16];
        int n = gpumem__stack_frames(a, f, 16);
        if (n < 2 || strcmp(f[0].func, "bt_leaf") != 0 || strcmp(f[1].func, "bt_site_a") != 0)
            w->bad++;
        /* Below the thread function are start_thread and clone: trimmed. */
        if (n >= 3 && strcmp(f[n - 1].func, "bt_thread_main") != 0)
            w->bad++;
    }
}

void *bt_thread_main(void *arg);
NOINLINE void *bt_thread_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int r = 0; r < ROUNDS; r++)
        bt_thread_round(w, r);
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[THREADS];
    worker w[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.index = i, .start = &start};
        ASSERT_EQ(pthread_create(&t[i], NULL, bt_thread_main, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
        EXPECT_EQ(w[i].bad, 0);
        EXPECT_EQ(w[i].same, w[0].same);
        for (int d = 0; d < 4; d++) {
            EXPECT_EQ(w[i].own[d], w[0].own[d]);
            for (int e = 0; e < d; e++)
                EXPECT_NE(w[i].own[d], w[i].own[e]);
        }
    }
    /* The threads' stack of bt_site_a differs from main's (a different bottom). */
    EXPECT_NE(w[0].same, bt_site_a());
}

/* At exit, after main returned: a stack never printed before is symbolized then. */
static uint32_t exit_id;
static void at_exit(void)
{
    gpumem__frame f[8];
    if (gpumem__stack_frames(exit_id, f, 8) < 1 ||
        (have_names && strcmp(f[0].func, "bt_leaf") != 0)) {
        fprintf(stderr, "FAIL: symbolization at exit\n");
        _exit(1);
    }
}

int main(void)
{
    const char *backend = gpumem__stack_backend();
    fprintf(stderr, "backtraces: %s\n", backend);
    have_libdw = strstr(backend, "libdw") != NULL;
    Dl_info self;
    have_names = have_libdw || (dladdr((void *)(uintptr_t)bt_leaf, &self) && self.dli_sname);
    if (strcmp(backend, "unavailable") == 0) {
        EXPECT_EQ(gpumem__stack_capture(0), 0);
        SKIP("no unwinder on this platform");
        return harness_exit();
    }
    exit_id = bt_recurse(3);
    atexit(at_exit);
    RUN(test_nested_frames);
    RUN(test_print);
    RUN(test_dedup);
    RUN(test_deep_stack);
    RUN(test_threads);
    return harness_exit();
}

/* Inlined functions in stacks (src/backtrace.c with libdw): built -O2 -g, so that the static
 * inline helper below is inlined into its caller and has no frame of its own. The stack must
 * still show it, at its own line, followed by the function it was inlined into, at the line of
 * the call, as a debugger shows them. Skipped (77) without libdw or names. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "harness.h"

#define NOINLINE __attribute__((noinline))
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

static int line_capture, line_inline_call, line_outer_call;
static volatile int sink;

uint32_t gpumem__test_wrapper(void);
uint32_t inline_caller(int n);

/* Stands for gpumem's allocation path: trimmed. */
NOINLINE uint32_t gpumem__test_wrapper(void)
{
    uint32_t id = gpumem__stack_capture(0);
    KEEP_FRAME();
    return id;
}

static inline __attribute__((always_inline)) uint32_t make_buffer(int n)
{
    sink = n;
    uint32_t id = gpumem__test_wrapper(); line_capture = __LINE__;
    sink = n + 1;
    return id;
}

NOINLINE uint32_t inline_caller(int n)
{
    uint32_t id = make_buffer(n); line_inline_call = __LINE__;
    KEEP_FRAME();
    return id;
}

static int near_line(const gpumem__frame *f, int line)
{
    return f->file && f->line >= line - 1 && f->line <= line + 1;
}

NOINLINE static void test_inlined_helper(void)
{
    uint32_t id = inline_caller(3); line_outer_call = __LINE__;
    ASSERT_NE(id, 0);
    gpumem__frame f[GPUMEM__STACK_MAX_FRAMES];
    int n = gpumem__stack_frames(id, f, GPUMEM__STACK_MAX_FRAMES);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  frame %d: %s %s:%d%s\n", i, f[i].func, f[i].file ? f[i].file : "-",
                f[i].line, f[i].inlined ? " (inlined)" : "");
    /* make_buffer (inlined), inline_caller, this test, main */
    ASSERT_EQ(n, 4);
    EXPECT_STR_EQ(f[0].func, "make_buffer");
    EXPECT_TRUE(near_line(&f[0], line_capture));
    EXPECT_EQ(f[0].inlined, 1);
    EXPECT_STR_EQ(f[1].func, "inline_caller");
    EXPECT_TRUE(near_line(&f[1], line_inline_call));
    EXPECT_EQ(f[1].inlined, 0);
    /* One return address for both: the inlined code has no frame of its own. */
    EXPECT_EQ(f[0].pc, f[1].pc);
    EXPECT_STR_EQ(f[2].func, "test_inlined_helper");
    EXPECT_TRUE(near_line(&f[2], line_outer_call));
    EXPECT_STR_EQ(f[3].func, "main");
    /* The text report says which frame the inlined one is part of. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ASSERT_NOT_NULL(mem);
    gpumem__stack_print(id, mem, "  ");
    fclose(mem);
    EXPECT_CONTAINS(text, "  at make_buffer (");
    EXPECT_CONTAINS(text, "), inlined into:\n  by inline_caller (");
    free(text);
}

int main(void)
{
    if (!strstr(gpumem__stack_backend(), "libdw")) {
        fprintf(stderr, "SKIP: built without libdw (%s)\n", gpumem__stack_backend());
        return 77;
    }
    RUN(test_inlined_helper);
    return harness_exit();
}

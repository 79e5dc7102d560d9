/* A tiny test harness: EXPECT_* reports and continues, ASSERT_* reports and stops the test.
 * Both print the two values. A test program returns harness_exit(): 0 when every check
 * passed, 1 otherwise, 77 (skipped) when it called SKIP(). */
#ifndef GPUMEM_TEST_HARNESS_H
#define GPUMEM_TEST_HARNESS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int harness_failures;
static int harness_checks;

#define HARNESS_FAIL_(fmt, ...)                                                                  \
    (fprintf(stderr, "%s:%d: FAIL: " fmt "\n", __FILE__, __LINE__, __VA_ARGS__),                \
     harness_failures++)

#define EXPECT_INT_(op, a, b)                                                              \
    do {                                                                                         \
        long long ea_ = (long long)(a), eb_ = (long long)(b);                                    \
        harness_checks++;                                                                        \
        if (!(ea_ op eb_)) {                                                                     \
            HARNESS_FAIL_("%s %s %s: %lld vs %lld", #a, #op, #b, ea_, eb_);                      \
        }                                                                                        \
    } while (0)
#define EXPECT_EQ(a, b) EXPECT_INT_(==, a, b)
#define EXPECT_NE(a, b) EXPECT_INT_(!=, a, b)
#define EXPECT_GE(a, b) EXPECT_INT_(>=, a, b)
#define EXPECT_LE(a, b) EXPECT_INT_(<=, a, b)
/* ASSERT_*: as EXPECT_*, then leave the (void) test function when it failed. */
#define ASSERT_(check)                                                                           \
    do {                                                                                         \
        int before_assert_ = harness_failures;                                                   \
        check;                                                                                   \
        if (harness_failures != before_assert_)                                                  \
            return;                                                                              \
    } while (0)
#define ASSERT_EQ(a, b) ASSERT_(EXPECT_EQ(a, b))
#define ASSERT_NE(a, b) ASSERT_(EXPECT_NE(a, b))

#define EXPECT_PTR_(op, a, b)                                                              \
    do {                                                                                         \
        const void *pa_ = (const void *)(a), *pb_ = (const void *)(b);                           \
        harness_checks++;                                                                        \
        if (!(pa_ op pb_)) {                                                                     \
            HARNESS_FAIL_("%s %s %s: %p vs %p", #a, #op, #b, pa_, pb_);                          \
        }                                                                                        \
    } while (0)
#define EXPECT_PTR_EQ(a, b) EXPECT_PTR_(==, a, b)
#define ASSERT_NOT_NULL(a) ASSERT_(EXPECT_PTR_(!=, a, NULL))
#define EXPECT_NULL(a) EXPECT_PTR_(==, a, NULL)

#define EXPECT_STR_CONTAINS_(hay, needle)                                                  \
    do {                                                                                         \
        const char *h_ = (hay), *n_ = (needle);                                                  \
        harness_checks++;                                                                        \
        if (!h_ || !strstr(h_, n_)) {                                                            \
            HARNESS_FAIL_("%s does not contain \"%s\":\n---\n%s\n---", #hay, n_,                 \
                          h_ ? h_ : "(null)");                                                   \
        }                                                                                        \
    } while (0)
#define EXPECT_CONTAINS(hay, needle) EXPECT_STR_CONTAINS_(hay, needle)
#define ASSERT_CONTAINS(hay, needle) ASSERT_(EXPECT_CONTAINS(hay, needle))
#define EXPECT_STR_EQ(a, b)                                                                      \
    do {                                                                                         \
        const char *sa_ = (a), *sb_ = (b);                                                       \
        harness_checks++;                                                                        \
        if (!sa_ || !sb_ || strcmp(sa_, sb_) != 0)                                               \
            HARNESS_FAIL_("%s == %s: \"%s\" vs \"%s\"", #a, #b, sa_ ? sa_ : "(null)",            \
                          sb_ ? sb_ : "(null)");                                                 \
    } while (0)
#define EXPECT_TRUE(c)                                                                           \
    do {                                                                                         \
        harness_checks++;                                                                        \
        if (!(c))                                                                                \
            HARNESS_FAIL_("%s is false", #c);                                                    \
    } while (0)

#define RUN(test)                                                                                \
    do {                                                                                         \
        int before_ = harness_failures;                                                          \
        test();                                                                                  \
        fprintf(stderr, "%s %s\n", harness_failures == before_ ? "ok  " : "FAIL", #test);         \
    } while (0)

static int harness_skipped;
#define SKIP(why)                                                                                \
    do {                                                                                         \
        fprintf(stderr, "SKIP: %s\n", why);                                                      \
        harness_skipped = 1;                                                                     \
    } while (0)

static inline int harness_exit(void)
{
    if (harness_skipped && harness_failures == 0)
        return 77;
    fprintf(stderr, "%d checks, %d failed\n", harness_checks, harness_failures);
    if (harness_checks == 0) {
        fprintf(stderr, "FAIL: no checks ran\n");
        return 1;
    }
    return harness_failures ? 1 : 0;
}

#endif

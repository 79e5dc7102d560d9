/* The registry against a reference model: random inserts and releases of many addresses
 * (enough to grow every shard's table several times and to wrap the quarantine), checking
 * after each phase that every address is found exactly when the model says it is live, that
 * released ones read as double frees while remembered, and that the per-kind counts agree. */
#include "harness.h"
#include "internal.h"

#define N 200000

static uint64_t rng = 88172645463325252ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uintptr_t addr[N];
static int small_quarantine; /* argv[1] == "small": GPUMEM_QUARANTINE is tiny in this run */
static unsigned char live[N];

static void check_model(size_t expect_live)
{
    gpumem__rec out;
    size_t found = 0, wrong = 0;
    for (size_t i = 0; i < N; i++) {
        int f = gpumem__reg_find((const void *)addr[i], &out);
        if (f != live[i] || (f && out.base != addr[i]))
            wrong++;
        found += (size_t)f;
    }
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(found, expect_live);
    gpumem_live l;
    gpumem_live_get(&l);
    EXPECT_EQ(l.count[0], expect_live);
    EXPECT_EQ(l.bytes[0], expect_live * 512);
}

static void test_against_model(void)
{
    gpumem_site here = {"test_registry.c", "test", 1};
    /* Distinct 512-byte-aligned addresses, scattered over a wide range. */
    for (size_t i = 0; i < N; i++)
        addr[i] = ((uintptr_t)1 << 40) + (uintptr_t)i * 4096 + (next_random() % 8) * 512;
    size_t n_live = 0;
    for (size_t i = 0; i < N; i++) {
        gpumem__rec r = {.base = addr[i], .bytes = 512, .kind = 1 + (unsigned char)(i % 5),
                         .site = here, .seq = i + 1};
        ASSERT_EQ(gpumem__reg_insert(&r), 0);
        live[i] = 1;
        n_live++;
    }
    check_model(n_live);
    /* Release a random 60 %, in random order. */
    for (size_t k = 0; k < N * 6 / 10; k++) {
        size_t i = next_random() % N;
        gpumem__rec out;
        int mismatch;
        gpumem__take_result t = gpumem__reg_take((const void *)addr[i], here, 0, &mismatch, &out);
        if (live[i]) {
            EXPECT_EQ(t, GPUMEM__TAKEN);
            EXPECT_EQ(out.seq, i + 1);
            live[i] = 0;
            n_live--;
        } else if (small_quarantine) {
            EXPECT_TRUE(t == GPUMEM__DOUBLE || t == GPUMEM__UNKNOWN); /* may be forgotten */
        } else {
            EXPECT_EQ(t, GPUMEM__DOUBLE); /* large quarantine: nothing forgotten */
        }
    }
    check_model(n_live);
    /* Interior addresses of live ones are found, of released ones not. */
    size_t wrong = 0;
    for (size_t i = 0; i < N; i += 97) {
        gpumem__rec out;
        int f = gpumem__reg_find((const void *)(addr[i] + 300), &out);
        wrong += (size_t)(f != live[i]);
    }
    EXPECT_EQ(wrong, 0);
    /* Put some back (an address CUDA hands out again), then release everything. */
    for (size_t i = 0; i < N; i += 3) {
        if (live[i])
            continue;
        gpumem__rec r = {.base = addr[i], .bytes = 512, .kind = 1, .site = here};
        ASSERT_EQ(gpumem__reg_insert(&r), 0);
        live[i] = 1;
        n_live++;
    }
    check_model(n_live);
    for (size_t i = 0; i < N; i++) {
        if (!live[i])
            continue;
        gpumem__rec out;
        int mismatch;
        EXPECT_EQ(gpumem__reg_take((const void *)addr[i], here, 0, &mismatch, &out),
                  GPUMEM__TAKEN);
        live[i] = 0;
    }
    check_model(0);
}

static void test_untake_restores(void)
{
    gpumem_site here = {"test_registry.c", "test", 2};
    uintptr_t a = (uintptr_t)3 << 40;
    gpumem__rec r = {.base = a, .bytes = 1 << 20, .kind = GPUMEM_KIND_DEVICE, .site = here};
    ASSERT_EQ(gpumem__reg_insert(&r), 0);
    gpumem__rec out;
    int mismatch;
    EXPECT_EQ(gpumem__reg_take((const void *)a, here, 0, &mismatch, &out), GPUMEM__TAKEN);
    EXPECT_EQ(gpumem__reg_find((const void *)(a + 4096), &out), 0);
    gpumem__reg_untake((const void *)a);
    EXPECT_EQ(gpumem__reg_find((const void *)(a + 4096), &out), 1); /* large index too */
    EXPECT_EQ(out.freed_site.line, 0);
    EXPECT_EQ(gpumem__reg_take((const void *)a, here, 0, &mismatch, &out), GPUMEM__TAKEN);
    /* A kind filter leaves a record of another kind in place. */
    ASSERT_EQ(gpumem__reg_insert(&r), 0);
    EXPECT_EQ(gpumem__reg_take((const void *)a, here, 1u << GPUMEM_KIND_PINNED, &mismatch, &out),
              GPUMEM__UNKNOWN);
    EXPECT_EQ(mismatch, 1);
    EXPECT_EQ(gpumem__reg_find((const void *)a, &out), 1);
    EXPECT_EQ(gpumem__reg_take((const void *)a, here, 0, &mismatch, &out), GPUMEM__TAKEN);
}

/* The walks below an address (the error and query paths): the nearest live allocation at or
 * below it, and the released allocation holding it, stopped by a live one. */
static void test_walks_below(void)
{
    gpumem_site here = {"test_registry.c", "test", 3};
    uintptr_t a = (uintptr_t)5 << 40, b = a + 8192;
    gpumem__rec ra = {.base = a, .bytes = 4096, .kind = GPUMEM_KIND_DEVICE, .site = here, .seq = 11};
    gpumem__rec rb = {.base = b, .bytes = 1000, .kind = GPUMEM_KIND_DEVICE, .site = here, .seq = 12};
    ASSERT_EQ(gpumem__reg_insert(&ra), 0);
    ASSERT_EQ(gpumem__reg_insert(&rb), 0);
    gpumem__rec out;
    EXPECT_EQ(gpumem__reg_find_below((const void *)(a + 5000), &out), 1); /* past a's end */
    EXPECT_EQ(out.seq, 11);
    EXPECT_EQ(gpumem__reg_find_below((const void *)(b + 3), &out), 1);
    EXPECT_EQ(out.seq, 12);
    EXPECT_EQ(gpumem__reg_find_below((const void *)(a - 256), &out), 0);
    EXPECT_EQ(gpumem__reg_find_below(NULL, &out), 0);
    EXPECT_EQ(gpumem__reg_find_released((const void *)(b + 3), &out), 0); /* b is live */
    int mismatch;
    EXPECT_EQ(gpumem__reg_take((const void *)b, here, 0, &mismatch, &out), GPUMEM__TAKEN);
    EXPECT_EQ(gpumem__reg_find_released((const void *)(b + 999), &out), 1);
    EXPECT_EQ(out.seq, 12);
    EXPECT_EQ(out.freed_site.line, 3);
    EXPECT_EQ(gpumem__reg_find_released((const void *)(b + 1000), &out), 0); /* past its end,
                                                                               and a is live */
    EXPECT_EQ(gpumem__reg_find_below((const void *)(b + 3), &out), 1); /* a, below the hole */
    EXPECT_EQ(out.seq, 11);
    EXPECT_EQ(gpumem__reg_find_released(NULL, &out), 0);
    EXPECT_EQ(gpumem__reg_take((const void *)a, here, 0, &mismatch, &out), GPUMEM__TAKEN);
    EXPECT_EQ(gpumem__reg_find_released((const void *)(a + 100), &out), 1);
    EXPECT_EQ(out.seq, 11);
}

int main(int argc, char **argv)
{
    small_quarantine = argc > 1 && strcmp(argv[1], "small") == 0;
    gpumem_backend_select("sim");
    if (gpumem_init() != GPUMEM_OK)
        return 1;
    RUN(test_against_model);
    RUN(test_untake_restores);
    RUN(test_walks_below);
    return harness_exit();
}

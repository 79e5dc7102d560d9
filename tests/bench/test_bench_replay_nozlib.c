/* `gpumem bench --replay` built without zlib (tools/bench/replay_load.c compiled here without
 * GPUMEM_HAVE_ZLIB): a gzipped file is named as such, with what to do, rather than read as
 * text; a plain log still reads. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "temp_file.h"
#include "replay.h"

static void test_gzipped_named(void)
{
    char path[256];
    ASSERT_NOT_NULL(temp_path(path, sizeof path, "nozlib.log.gz"));
    FILE *f = fopen(path, "wb");
    ASSERT_NOT_NULL(f);
    static const unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0x03};
    EXPECT_EQ(fwrite(gz, 1, sizeof gz, f), sizeof gz);
    EXPECT_EQ(fclose(f), 0);
    replay_trace t;
    char err[300] = "";
    EXPECT_EQ(replay_load(path, &t, err, sizeof err), -1);
    EXPECT_CONTAINS(err, path);
    EXPECT_CONTAINS(err, "is gzipped and this gpumem was built without zlib: zcat it to a file "
                         "and replay that");

    f = fopen(path, "w");
    ASSERT_NOT_NULL(f);
    fputs("gpumem-replay 1\na 1 4096 0 1 0\nf 1 1 1\n", f);
    EXPECT_EQ(fclose(f), 0);
    EXPECT_EQ(replay_load(path, &t, err, sizeof err), 0);
    EXPECT_EQ(t.n, 2);
    replay_free(&t);
    remove(path);
}

int main(void)
{
    RUN(test_gzipped_named);
    return harness_exit();
}

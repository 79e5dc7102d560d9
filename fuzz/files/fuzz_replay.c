/* libFuzzer harness of `gpumem bench --replay`'s reading (tools/bench/replay_load.c): the
 * input as a replay log or a gpumem trace, gzipped or not; what loads is written back as a
 * log, read again, and must give the same operations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "input_file.h"
#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = input_file("replay", data, size);
    replay_trace t, u;
    char err[512];
    if (!path || replay_load(path, &t, err, sizeof err) != 0)
        return 0;
    FILE *f = fopen(path, "w");
    if (!f || replay_write_log(f, &t) != 0 || fclose(f) != 0)
        abort();
    if (replay_load(path, &u, err, sizeof err) != 0) {
        fprintf(stderr, "a log written from a loaded file does not load: %s\n", err);
        abort();
    }
    if (u.n != t.n || u.peak_requested != t.peak_requested || u.nstreams != t.nstreams)
        abort();
    for (size_t i = 0; i < t.n; i++)
        if (u.ops[i].alloc != t.ops[i].alloc || u.ops[i].bytes != t.ops[i].bytes ||
            u.ops[i].stream != t.ops[i].stream || u.ops[i].slot != t.ops[i].slot)
            abort();
    replay_free(&u);
    replay_free(&t);
    return 0;
}

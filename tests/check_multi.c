/* Stands for a launcher of many processes (mpirun, torchrun) under `gpumem check`, without a
 * GPU: it forks and execs three workers of itself and waits for them. Each process drives its
 * own gpumem check engine (linked in, as the injected library would be loaded into each) with
 * synthetic allocations: worker K, on device K - 1 (one device per worker, as a launcher of
 * one rank per GPU), leaks K device blocks of 1 MiB from K call sites and exits with status
 * K; the launcher itself allocates nothing. Each writes its report and its status
 * file, from which `gpumem check` prints one line per process, the total, and the total by
 * device (check_multi.sh). With the argument "nocuda" the launcher is one that never uses CUDA
 * (a shell, a parent that forks its workers): it writes no report, and `gpumem check` says so. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "gpumem.h"

static const char *const calls[] = {"cudaMalloc", "cudaMallocAsync", "cudaMallocPitch"};

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "worker") == 0) {
        int k = atoi(argv[2]);
        for (int i = 0; i < k && i < 3; i++)
            check_alloc(calls[i], i == 1 ? GPUMEM_KIND_DEVICE_ASYNC : GPUMEM_KIND_DEVICE,
                        (uintptr_t)0x7f0000000000ull + (uintptr_t)(k * 16 + i) * (1u << 24),
                        1u << 20, k - 1, 0, 0);
        check_finish("exited", k);
        return k;
    }
    int nocuda = argc == 2 && strcmp(argv[1], "nocuda") == 0;
    if (!nocuda)
        check_setup();
    pid_t kids[3];
    for (int k = 0; k < 3; k++) {
        fflush(NULL);
        kids[k] = fork();
        if (kids[k] == 0) {
            char arg[8];
            snprintf(arg, sizeof arg, "%d", k + 1);
            execl("/proc/self/exe", argv[0], "worker", arg, (char *)NULL);
            _exit(127);
        }
    }
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        int st = 0;
        waitpid(kids[k], &st, 0);
        bad += !WIFEXITED(st) || WEXITSTATUS(st) != k + 1;
    }
    if (!nocuda)
        check_finish("exited", bad);
    return bad;
}

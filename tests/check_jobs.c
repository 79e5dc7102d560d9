/* Stands for the launchers of parallel jobs (torchrun, mpirun) under `gpumem check`, without a
 * GPU (check_jobs.sh). Each worker drives its own gpumem check engine (linked in, as the
 * injected library would be loaded into each) with synthetic allocations, and reads its rank
 * from the variables a real launcher sets, as the injected library does:
 *
 *   check_jobs torchrun N    starts N workers with RANK and LOCAL_RANK, as torchrun does;
 *   check_jobs mpirun N      the same with OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_LOCAL_RANK;
 *   check_jobs torchrun-cuda N   as torchrun, and the launcher itself initializes the engine
 *                            (a launcher that initialized CUDA) but allocates nothing;
 *   check_jobs outer N GPUMEM [OPTIONS...]   as `mpirun -np N gpumem check OPTIONS -- ./app`:
 *                            each worker runs under a `gpumem check` of its own.
 *
 * Worker 0 allocates 1 MiB and releases it (clean), worker 1 leaks 32 MiB, worker 2 leaks
 * 1 MiB and is then killed by SIGSEGV (its report written first, as the crash handler does),
 * worker 3 exits with status 3 and leaks nothing, worker 4 and above are killed by SIGKILL
 * before they can write a report. A launcher exits 1 when a worker
 * failed (as torchrun and mpirun do), else 0. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine.h"
#include "gpumem.h"

#define MiB ((size_t)1 << 20)

static int worker(int rank)
{
    uintptr_t base = (uintptr_t)0x7f0000000000ull + (uintptr_t)rank * (1ull << 28);
    check_started(); /* as the injected library does when CUDA starts */
    switch (rank) {
    case 0:
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, base, MiB, 0, 0, 0);
        if (check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, base, 0) == CHECK_GO)
            check_release_end(base, 1);
        break;
    case 1:
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, base, 32 * MiB, 0, 0, 0);
        break;
    case 2:
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, base, MiB, 0, 0, 0);
        check_finish("signaled", SIGSEGV);
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
        return 1;
    case 3:
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, base, MiB, 0, 0, 0);
        if (check_release_begin("cudaFree", 1u << GPUMEM_KIND_DEVICE, base, 0) == CHECK_GO)
            check_release_end(base, 1);
        check_finish("exited", 3);
        return 3;
    default:
        check_alloc("cudaMalloc", GPUMEM_KIND_DEVICE, base, MiB, 0, 0, 0);
        raise(SIGKILL);
        return 1;
    }
    check_finish("exited", 0);
    return 0;
}

/* The child of rank k: its rank's variables set, then exec'd as a worker (or as a `gpumem
 * check` of a worker, for "outer"). */
static void start_rank(const char *mode, int k, char **argv, int argc)
{
    char rank[16];
    snprintf(rank, sizeof rank, "%d", k);
    int mpi = strcmp(mode, "mpirun") == 0 || strcmp(mode, "outer") == 0;
    setenv(mpi ? "OMPI_COMM_WORLD_RANK" : "RANK", rank, 1);
    setenv(mpi ? "OMPI_COMM_WORLD_LOCAL_RANK" : "LOCAL_RANK", rank, 1);
    if (strcmp(mode, "outer") != 0) {
        execl("/proc/self/exe", argv[0], "worker", rank, (char *)NULL);
        _exit(127);
    }
    /* GPUMEM check OPTIONS... -- THIS_PROGRAM worker K */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    char **args = calloc((size_t)argc + 4, sizeof *args);
    if (len <= 0 || !args)
        _exit(127);
    self[len] = '\0';
    int n = 0;
    args[n++] = argv[3];
    args[n++] = "check";
    for (int i = 4; i < argc; i++)
        args[n++] = argv[i];
    args[n++] = "--";
    args[n++] = self;
    args[n++] = "worker";
    args[n++] = rank;
    execv(argv[3], args);
    _exit(127);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "worker") == 0)
        return worker(atoi(argv[2]));
    if (argc < 3 || (strcmp(argv[1], "outer") == 0 && argc < 4)) {
        fprintf(stderr, "usage: check_jobs torchrun|mpirun|torchrun-cuda|outer N [GPUMEM OPTIONS...]\n");
        return 2;
    }
    const char *mode = argv[1];
    int n = atoi(argv[2]), cuda = strcmp(mode, "torchrun-cuda") == 0;
    if (cuda)
        check_setup();
    pid_t kids[16];
    for (int k = 0; k < n && k < 16; k++) {
        fflush(NULL);
        kids[k] = fork();
        if (kids[k] == 0)
            start_rank(cuda ? "torchrun" : mode, k, argv, argc);
    }
    int failed = 0;
    for (int k = 0; k < n && k < 16; k++) {
        int st = 0;
        waitpid(kids[k], &st, 0);
        failed |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    if (cuda)
        check_finish("exited", failed);
    return failed;
}

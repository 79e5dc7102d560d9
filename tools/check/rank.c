/* Ranks of parallel jobs (rank.h). A launcher tells each process its rank in a variable of
 * its own; the first of these that holds a number is the rank. A process's own children
 * inherit it (a data loader's workers): they are told apart by their pid. */
#include "rank.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "sigsafe.h"

/* Global rank, then local rank (the rank among the processes of one node), by launcher:
 * torchrun, Open MPI, MPICH and Intel MPI (PMI), Slurm's srun. */
static const char *const rank_vars[][2] = {
    {"RANK", "LOCAL_RANK"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"PMI_RANK", "MPI_LOCALRANKID"},
    {"SLURM_PROCID", "SLURM_LOCALID"},
};

/* The variable's value as a rank, or -1 when it is not set or not a number from 0 up. */
static long rank_var(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return -1;
    char *end;
    errno = 0;
    long r = strtol(v, &end, 10);
    return *end || errno || r < 0 ? -1 : r;
}

void check_rank_read(check_rank *r)
{
    r->rank = r->local_rank = -1;
    r->from = NULL;
    for (size_t i = 0; i < sizeof rank_vars / sizeof *rank_vars; i++) {
        long rank = rank_var(rank_vars[i][0]);
        if (rank < 0)
            continue;
        r->rank = rank;
        r->local_rank = rank_var(rank_vars[i][1]);
        r->from = rank_vars[i][0];
        return;
    }
}

void check_path_expand(const char *pattern, long pid, long rank, int suffix, char *path,
                       size_t n)
{
    /* %r first (with a rank, its digits; without, "norank-%p"), then the library's own %p
     * expansion (format.c), which appends ".PID" when asked and the name has no %p. */
    char with_rank[4096], digits[21];
    size_t o = 0;
    int had_rank = 0;
    if (!n)
        return;
    gpumem__fmt_u64((uint64_t)(rank < 0 ? 0 : rank), digits);
    const char *rank_text = rank >= 0 ? digits : "norank-%p";
    for (const char *c = pattern; *c && o + 1 < sizeof with_rank; c++) {
        if (c[0] != '%' || c[1] != 'r') {
            with_rank[o++] = *c;
            continue;
        }
        for (const char *d = rank_text; *d && o + 1 < sizeof with_rank; d++)
            with_rank[o++] = *d;
        had_rank = 1;
        c++;
    }
    with_rank[o] = '\0';
    if (gpumem__path_expand(with_rank, pid, suffix && !had_rank, path, n) >= n)
        path[0] = '\0';
}

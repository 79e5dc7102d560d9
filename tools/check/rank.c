/* Ranks of parallel jobs (rank.h). A launcher tells each process its rank in a variable of
 * its own; the first of these that holds a number is the rank. A process's own children
 * inherit it (a data loader's workers): they are told apart by their pid. */
#include "rank.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int check_path_expand(const char *pattern, long pid, long rank, int suffix, int image,
                      char *path, size_t n)
{
    /* %r first (with a rank, its digits; without, "norank-%p"), then the library's own %p
     * expansion (format.c), which appends ".PID" when asked and the name has no %p. */
    char with_rank[4096], digits[21];
    size_t o = 0;
    int had_rank = 0;
    if (!n)
        return -1;
    path[0] = '\0';
    gpumem__fmt_u64((uint64_t)(rank < 0 ? 0 : rank), digits);
    const char *rank_text = rank >= 0 ? digits : "norank-%p";
    for (const char *c = pattern; *c; c++) {
        const char *piece = c[0] == '%' && c[1] == 'r' ? rank_text : NULL;
        size_t len = piece ? strlen(piece) : 1;
        if (o + len >= sizeof with_rank)
            return -1; /* never cut: a name that does not fit is no name */
        memcpy(with_rank + o, piece ? piece : c, len);
        o += len;
        had_rank |= piece != NULL;
        c += piece != NULL;
    }
    with_rank[o] = '\0';
    size_t need = gpumem__path_expand(with_rank, pid, suffix && !had_rank, path, n);
    if (need >= n)
        return -1;
    if (image > 0) { /* a later program of the same process (after exec): a file of its own */
        gpumem__fmt_u64((uint64_t)image, digits);
        size_t dn = strlen(digits);
        if (need + 5 + dn >= n) {
            path[0] = '\0';
            return -1;
        }
        memcpy(path + need, ".exec", 5);
        memcpy(path + need + 5, digits, dn + 1);
    }
    return 0;
}

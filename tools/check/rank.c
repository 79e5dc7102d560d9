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

/* Appends the decimal digits of v at path + *o, if they fit in n. */
static void put_num(char *path, size_t *o, size_t n, long v)
{
    char digits[21];
    gpumem__fmt_u64((uint64_t)v, digits);
    for (const char *d = digits; *d && *o + 1 < n; d++)
        path[(*o)++] = *d;
}

static void put_str(char *path, size_t *o, size_t n, const char *s)
{
    for (; *s && *o + 1 < n; s++)
        path[(*o)++] = *s;
}

void check_path_expand(const char *pattern, long pid, long rank, int suffix, char *path,
                       size_t n)
{
    size_t o = 0;
    int named = 0; /* %p or %r: the name is the process's own */
    if (!n)
        return;
    for (const char *c = pattern; *c && o + 1 < n; c++) {
        if (c[0] == '%' && c[1] == 'p') {
            put_num(path, &o, n, pid);
        } else if (c[0] == '%' && c[1] == 'r') {
            if (rank >= 0) {
                put_num(path, &o, n, rank);
            } else {
                put_str(path, &o, n, "norank-");
                put_num(path, &o, n, pid);
            }
        } else {
            path[o++] = *c;
            continue;
        }
        named = 1;
        c++;
    }
    if (!named && suffix) {
        put_str(path, &o, n, ".");
        put_num(path, &o, n, pid);
    }
    path[o] = '\0';
}

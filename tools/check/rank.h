/* The rank of a process in a parallel job (torchrun, mpirun, srun), from the variables its
 * launcher sets, and the file names of its reports (%p, %r). Shared by the engine in each
 * checked process and by `gpumem check` itself (launch.c). */
#ifndef GPUMEM_CHECK_RANK_H
#define GPUMEM_CHECK_RANK_H

#include <stddef.h>

/* A process's place in its job; rank and local_rank are -1 where the environment has none. */
typedef struct {
    long rank, local_rank;
    const char *from; /* the variable the rank came from, or NULL */
} check_rank;

/* Reads the launchers' variables (rank.c lists them, in the order they are tried). */
void check_rank_read(check_rank *r);

/* PATTERN with %p replaced by pid and %r by rank (a process without one: "norank-PID"), into
 * path (n bytes). suffix: a process whose files would otherwise clash with the program's own
 * (a child of it), so ".PID" is appended when PATTERN has neither %p nor %r. image > 0: the
 * image-th program the process runs after exec, ".execN" appended. Returns 0, or -1 when the
 * name does not fit (path is then "": a name is never cut). Async-signal-safe (the
 * crash-time report names its files with it). */
int check_path_expand(const char *pattern, long pid, long rank, int suffix, int image, char *path,
                      size_t n);

#endif

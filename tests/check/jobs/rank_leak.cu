// One rank of a parallel job, without an MPI library: it reads its rank from the variable
// its launcher sets (OMPI_COMM_WORLD_RANK from mpirun, RANK from torchrun). Every rank
// allocates and releases 1 MiB; rank 1 also leaks 32 MiB (its only pointer dropped in a
// helper that has returned), which gpumem check must report in rank 1's report and no other.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

static int rank_of(void)
{
    const char *v = getenv("OMPI_COMM_WORLD_RANK");
    if (!v)
        v = getenv("RANK");
    return v ? atoi(v) : -1;
}

static int check(cudaError_t e, const char *what)
{
    if (e != cudaSuccess)
        fprintf(stderr, "rank_leak: %s: %s\n", what, cudaGetErrorString(e));
    return e == cudaSuccess;
}

__attribute__((noinline)) static int leak_32mib(void)
{
    void *p = NULL;
    int ok = check(cudaMalloc(&p, (size_t)32 << 20), "cudaMalloc 32 MiB");
    p = NULL;
    return ok;
}

int main(void)
{
    int rank = rank_of();
    void *buf = NULL;
    if (!check(cudaMalloc(&buf, (size_t)1 << 20), "cudaMalloc 1 MiB") ||
        !check(cudaMemset(buf, 0, (size_t)1 << 20), "cudaMemset") ||
        !check(cudaFree(buf), "cudaFree"))
        return 1;
    if (rank == 1 && !leak_32mib())
        return 1;
    printf("rank_leak: rank %d done\n", rank);
    return 0;
}

// OpenMP host code in a CUDA file: clang 22 has no omp.h without libomp; gpumem lint takes
// GCC's.
#include <omp.h>
#include <cstdio>

int main(void)
{
    double t = omp_get_wtime();
#pragma omp parallel for
    for (int i = 0; i < 4; i++)
        printf("%d of %d\n", i, omp_get_num_threads());
    printf("%f s\n", omp_get_wtime() - t);
    return 0;
}

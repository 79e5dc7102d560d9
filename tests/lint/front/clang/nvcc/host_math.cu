// Host code nvcc compiles and clang's CUDA mode does not without gpumem lint's prelude: host
// min and max, isfinite and clock without <math.h> and <time.h>, and the cache-hinted stores.
#include <cstdio>

__global__ void scale(float *out, const float *in, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        __stcs(out + i, in[i] * 2.0f);
    __stcg(out, max(in[0], 1.0f));
}

int main(void)
{
    clock_t start = clock();
    int n = min(1 << 10, 4096);
    unsigned cap = max(16u, 8u);
    double ratio = min(2.0, 1.5f);
    if (!isfinite(ratio))
        return 1;
    printf("%d %u %f %ld\n", n, cap, ratio, (long)(clock() - start));
    return 0;
}

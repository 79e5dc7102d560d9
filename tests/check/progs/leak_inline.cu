// expect: leak cudaMalloc device bytes=131072 at=allocTable@alloc>makeTable@table>main@make
//
// A leak through helpers that are always inlined (__forceinline__, at every optimization
// level): allocTable is inlined into makeTable, which is inlined into main. No frame of either
// exists at run time; the stack must still name both, from the debug information, as inlined
// frames: allocTable at its allocation line, inlined into makeTable at its call of allocTable,
// inlined into main at the call of makeTable.
#include "check_prog.h"

__global__ void init(float *t, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        t[i] = 1.0f;
}

static __forceinline__ float *allocTable(int n)
{
    float *t = NULL;
    CHECK(cudaMalloc(&t, n * sizeof(float))); // @alloc
    return t;
}

static __forceinline__ float *makeTable(int n)
{
    float *t = allocTable(n); // @table
    init<<<(n + 255) / 256, 256>>>(t, n);
    CHECK(cudaGetLastError());
    return t;
}

int main(void)
{
    prog_init();
    float *table = makeTable(32768); // @make
    CHECK(cudaDeviceSynchronize());
    printf("table at %p\n", (void *)table);
    prog_done("leak_inline");
    return 0;
}

// No findings expected: a graph allocation freed outside the graph, between launches. The
// graph's allocation node has no free node; each launch allocates at the address the node got
// when it was added, the first launch's memory is released with cudaFree, the second's (at the
// same address) with cudaFreeAsync. A correct program: CUDA allows both.
#include "check_prog.h"

__global__ void fill(float *p, size_t n, float value)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = value;
}

int main(void)
{
    prog_init();
    const size_t n = 1 << 20, bytes = n * sizeof(float);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemAllocNode(&node, graph, NULL, 0, &params));
    float *p = (float *)params.dptr;
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph)); // the executable graph keeps its nodes

    CHECK(cudaGraphLaunch(exec, s));
    fill<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n, 1.0f);
    CHECK(cudaStreamSynchronize(s)); // cudaFree does not wait for the stream
    CHECK(cudaFree(p));

    CHECK(cudaGraphLaunch(exec, s)); // allocates again, at the same address
    fill<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(p, n, 2.0f);
    CHECK(cudaFreeAsync(p, s));
    CHECK(cudaStreamSynchronize(s));

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaStreamDestroy(s));
    prog_done("clean_graph_free_outside");
    return 0;
}

// expect: leak cudaGraphAddMemAllocNode graph bytes=8388608 count=1 at=add_buffer@node,main@graph
//
// A graph allocation never freed. The graph's allocation node has no free node: the first
// launch's memory is released with cudaFree, the second launch's (at the same address) never
// is. One leak, of one allocation, reported where the node was added, not where the graph was
// launched; the graph being destroyed does not release it.
#include "check_prog.h"

__attribute__((noinline)) static void *add_buffer(cudaGraph_t graph, size_t bytes)
{
    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemAllocNode(&node, graph, NULL, 0, &params)); // @node
    return params.dptr;
}

int main(void)
{
    prog_init();
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    void *p = add_buffer(graph, 8u << 20); // @graph
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));

    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaMemsetAsync(p, 0, 8u << 20, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(p));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaMemsetAsync(p, 1, 8u << 20, s));
    CHECK(cudaStreamSynchronize(s));

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    prog_done("leak_graph_never_freed");
    return 0;
}

// No findings expected: graphs whose allocation nodes never run. Graph A is instantiated and
// never launched; graph B is never instantiated. Neither allocates anything, so neither
// leaks, though no free node or cudaFree releases their nodes' addresses.
#include "check_prog.h"

static cudaGraph_t graph_with_allocation(size_t bytes, void **dptr)
{
    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemAllocNode(&node, graph, NULL, 0, &params));
    *dptr = params.dptr;
    return graph;
}

int main(void)
{
    prog_init();
    void *pa = NULL, *pb = NULL;
    cudaGraph_t a = graph_with_allocation(32u << 20, &pa);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, a, 0));
    cudaGraph_t b = graph_with_allocation(16u << 20, &pb);

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(a));
    CHECK(cudaGraphDestroy(b));
    printf("graph memory nodes at %p %p, never launched\n", pa, pb);
    prog_done("clean_graph_never_launched");
    return 0;
}

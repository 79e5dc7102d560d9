// expect: failed-call cudaGraphLaunch - error=cudaErrorInvalidValue at=main@relaunch
// expect: leak cudaGraphAddMemAllocNode graph at=main@node
//
// A failed CUDA call the program ignores: a graph with a memory allocation node is launched
// again while the memory its first launch allocated is still live (no free node, no cudaFree,
// no auto-free flag). CUDA refuses the second launch; the program does not look at the status.
// The first launch's memory is never released: a leak.
#include "check_prog.h"

int main(void)
{
    prog_init();
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = 1 << 20;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemAllocNode(&node, g, NULL, 0, &params)); // @node
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    cudaGraphLaunch(exec, s); // @relaunch
    CHECK(cudaStreamSynchronize(s));
    (void)cudaGetLastError();
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    prog_done("failed_graph_launch");
    return 0;
}

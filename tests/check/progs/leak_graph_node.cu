// expect: leak cudaGraphAddMemAllocNode graph bytes=67108864 at=add_alloc@node,main@graph_b
//
// Graph memory nodes. Graph A allocates 64 MiB in an allocation node and frees it in a free
// node of its own: no leak. Graph B allocates 64 MiB and has no free node; it is instantiated
// with cudaGraphInstantiateFlagAutoFreeOnLaunch and launched three times: each relaunch frees
// the previous launch's memory, and the last launch's stays allocated at exit: one leak (one
// allocation node, one allocation live at a time). Graph C's allocation is freed by cudaFree
// after its launch: no leak.
#include "check_prog.h"

__global__ void touch(char *p, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = 1;
}

__attribute__((noinline)) static cudaGraphNode_t add_alloc(cudaGraph_t g, size_t bytes,
                                                           void **dptr)
{
    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemAllocNode(&node, g, NULL, 0, &params)); // @node
    *dptr = params.dptr;
    return node;
}

int main(void)
{
    prog_init();
    const size_t bytes = 64u << 20;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    cudaGraph_t a;
    CHECK(cudaGraphCreate(&a, 0));
    void *pa = NULL;
    cudaGraphNode_t alloc_a = add_alloc(a, bytes, &pa);
    cudaGraphNode_t free_a;
    CHECK(cudaGraphAddMemFreeNode(&free_a, a, &alloc_a, 1, pa));
    cudaGraphExec_t ea;
    CHECK(cudaGraphInstantiate(&ea, a, 0));
    CHECK(cudaGraphLaunch(ea, s));

    cudaGraph_t b;
    CHECK(cudaGraphCreate(&b, 0));
    void *pb = NULL;
    add_alloc(b, bytes, &pb); // @graph_b
    cudaGraphExec_t eb;
    CHECK(cudaGraphInstantiate(&eb, b, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    for (int i = 0; i < 3; i++)
        CHECK(cudaGraphLaunch(eb, s));

    cudaGraph_t c;
    CHECK(cudaGraphCreate(&c, 0));
    void *pc = NULL;
    add_alloc(c, bytes, &pc);
    cudaGraphExec_t ec;
    CHECK(cudaGraphInstantiate(&ec, c, 0));
    CHECK(cudaGraphLaunch(ec, s));
    CHECK(cudaStreamSynchronize(s));
    touch<<<(unsigned)((bytes + 255) / 256), 256, 0, s>>>((char *)pc, bytes);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(pc));

    CHECK(cudaGraphExecDestroy(ea));
    CHECK(cudaGraphExecDestroy(eb));
    CHECK(cudaGraphExecDestroy(ec));
    CHECK(cudaGraphDestroy(a));
    CHECK(cudaGraphDestroy(b));
    CHECK(cudaGraphDestroy(c));
    CHECK(cudaStreamDestroy(s));
    printf("graph memory at %p %p %p\n", pa, pb, pc);
    prog_done("leak_graph_node");
    return 0;
}

// No findings expected: NVIDIA's graphMemoryNodes sample in small, a correct program
// (compute-sanitizer: 0 errors). A captured graph allocates and frees in stream order on two
// streams; an explicit graph allocates three buffers, frees two of them in the graph (CUDA may
// give the third the address of the first) and leaves the third to be freed outside: with
// cudaFree after one launch, with cudaFreeAsync after the next, and by a free node of another
// graph after the third.
#include "check_prog.h"

__global__ void square(const float *in, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = in[i] * in[i];
}

static const size_t n = 1 << 20, bytes = n * sizeof(float);
static unsigned blocks(void) { return (unsigned)((n + 255) / 256); }

// Stream-ordered allocations on two streams, captured: allocation and free nodes.
static cudaGraphExec_t captured_graph(cudaStream_t s1)
{
    cudaStream_t s2;
    cudaEvent_t squared, freed;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&squared, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&freed, cudaEventDisableTiming));
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    float *in = NULL, *sq = NULL;
    CHECK(cudaMallocAsync((void **)&in, bytes, s1));
    CHECK(cudaMallocAsync((void **)&sq, bytes, s1));
    CHECK(cudaMemsetAsync(in, 0, bytes, s1));
    square<<<blocks(), 256, 0, s1>>>(in, sq, n);
    CHECK(cudaEventRecord(squared, s1));
    CHECK(cudaFreeAsync(in, s1));
    CHECK(cudaStreamWaitEvent(s2, squared, 0));
    CHECK(cudaFreeAsync(sq, s2));
    CHECK(cudaEventRecord(freed, s2));
    CHECK(cudaStreamWaitEvent(s1, freed, 0));
    cudaGraph_t graph;
    CHECK(cudaStreamEndCapture(s1, &graph));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaEventDestroy(squared));
    CHECK(cudaEventDestroy(freed));
    CHECK(cudaStreamDestroy(s2));
    return exec;
}

static cudaGraphNode_t add_alloc(cudaGraph_t g, const cudaGraphNode_t *dep, float **p)
{
    cudaMemAllocNodeParams params = {};
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = bytes;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemAllocNode(&node, g, dep, dep ? 1 : 0, &params));
    *p = (float *)params.dptr;
    return node;
}

static cudaGraphNode_t add_memset(cudaGraph_t g, cudaGraphNode_t dep, float *p)
{
    cudaMemsetParams params = {};
    params.dst = p;
    params.value = 0;
    params.elementSize = sizeof(float);
    params.width = n;
    params.height = 1;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemsetNode(&node, g, &dep, 1, &params));
    return node;
}

// in and sq are freed in the graph; out is left to the caller.
static cudaGraphExec_t explicit_graph(float **out)
{
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    float *in, *sq;
    cudaGraphNode_t node = add_alloc(g, NULL, &in);
    node = add_alloc(g, &node, &sq);
    node = add_memset(g, node, in);
    node = add_memset(g, node, sq);
    cudaGraphNode_t freed;
    CHECK(cudaGraphAddMemFreeNode(&freed, g, &node, 1, in));
    node = add_alloc(g, &freed, out); // may reuse in's address
    node = add_memset(g, node, *out);
    CHECK(cudaGraphAddMemFreeNode(&freed, g, &node, 1, sq));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphDestroy(g));
    return exec;
}

static cudaGraphExec_t free_graph(void *p)
{
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t node;
    CHECK(cudaGraphAddMemFreeNode(&node, g, NULL, 0, p));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphDestroy(g));
    return exec;
}

int main(void)
{
    prog_init();
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    cudaGraphExec_t captured = captured_graph(s);
    CHECK(cudaGraphLaunch(captured, s));
    CHECK(cudaStreamSynchronize(s));

    float *out = NULL;
    cudaGraphExec_t g = explicit_graph(&out);
    CHECK(cudaGraphLaunch(g, s));
    CHECK(cudaStreamSynchronize(s)); // cudaFree does not wait for the stream
    CHECK(cudaFree(out));
    CHECK(cudaGraphLaunch(g, s));
    CHECK(cudaFreeAsync(out, s));
    cudaGraphExec_t frees_out = free_graph(out); // made while out is not allocated
    CHECK(cudaGraphLaunch(g, s));
    CHECK(cudaGraphLaunch(frees_out, s));
    CHECK(cudaStreamSynchronize(s));

    CHECK(cudaGraphExecDestroy(captured));
    CHECK(cudaGraphExecDestroy(g));
    CHECK(cudaGraphExecDestroy(frees_out));
    CHECK(cudaStreamDestroy(s));
    prog_done("clean_graph_memory_nodes");
    return 0;
}

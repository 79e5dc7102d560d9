// expect: leak cudaMallocAsync graph bytes=2097152 at=main@alloc
//
// Stream capture: cudaMallocAsync and cudaFreeAsync on a capturing stream add allocation and
// free nodes to the graph being captured; nothing is allocated until the graph is launched.
// The scratch buffer is freed in the capture (a free node): no leak. The output buffer is not,
// and the program never frees it after the launch: one leak of graph memory, at the
// cudaMallocAsync that made its node.
#include "check_prog.h"

__global__ void twice(const float *in, float *out, size_t n)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2 * in[i];
}

int main(void)
{
    prog_init();
    const size_t n = 1 << 19, bytes = n * sizeof(float);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    void *scratch = NULL, *out = NULL;
    CHECK(cudaMallocAsync(&scratch, bytes, s));
    CHECK(cudaMallocAsync(&out, bytes, s)); // @alloc
    CHECK(cudaMemsetAsync(scratch, 0, bytes, s));
    twice<<<(unsigned)((n + 255) / 256), 256, 0, s>>>((const float *)scratch, (float *)out, n);
    CHECK(cudaFreeAsync(scratch, s));
    cudaGraph_t graph;
    CHECK(cudaStreamEndCapture(s, &graph));

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    printf("graph output at %p\n", out);
    prog_done("leak_graph_captured");
    return 0;
}

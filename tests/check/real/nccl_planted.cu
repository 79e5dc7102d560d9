// Planted bugs in a program that uses NCCL (one communicator on GPU 0, all-reduces with NCCL's
// own VMM buffers): a send buffer of its own leaked (cudaMalloc, never released) and a receive
// buffer released twice. gpumem check must report exactly these two, and nothing of NCCL's
// (cuMem handles retained and released, handle-type probes). Built and run by run_nccl.sh.
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)
#define NCCLCHECK(call)                                                                          \
    do {                                                                                         \
        ncclResult_t r_ = (call);                                                                \
        if (r_ != ncclSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_)); \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

int main(void)
{
    int dev = 0;
    ncclComm_t comm;
    NCCLCHECK(ncclCommInitAll(&comm, 1, &dev));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    const size_t n = 1 << 20;
    float *send = NULL, *recv = NULL, *scratch = NULL;
    CHECK(cudaMalloc(&send, n * sizeof *send)); // @send
    CHECK(cudaMalloc(&recv, n * sizeof *recv)); // @recv
    void *nccl_buf = NULL;
    NCCLCHECK(ncclMemAlloc(&nccl_buf, n * sizeof(float))); /* NCCL's VMM allocator, released */
    for (int i = 0; i < 10; i++) {
        NCCLCHECK(ncclAllReduce(send, recv, n, ncclFloat, ncclSum, comm, s));
        NCCLCHECK(ncclAllReduce(recv, nccl_buf, n, ncclFloat, ncclSum, comm, s));
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMalloc(&scratch, 4096));
    CHECK(cudaFree(scratch));
    NCCLCHECK(ncclMemFree(nccl_buf));
    CHECK(cudaFree(recv));             // @first
    cudaError_t again = cudaFree(recv); // @again
    printf("planted: the second cudaFree returned %s\n", cudaGetErrorName(again));
    (void)cudaGetLastError();
    CHECK(cudaStreamDestroy(s));
    NCCLCHECK(ncclCommDestroy(comm));
    printf("nccl_planted: done\n");
    return 0; /* send is never released */
}

/* Included by `gpumem lint` before each CUDA unit it analyzes. nvcc defines __CUDACC__ as 1;
 * clang's CUDA wrapper defines it empty, so headers that test it with `#if __CUDACC__` (NCCL's
 * nccl_device/utility.h is one) stop clang with "expected value in expression". */
#undef __CUDACC__
#define __CUDACC__ 1

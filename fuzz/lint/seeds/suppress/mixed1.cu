#define CUDA_CHECK(x) x
__global__ void k(float *a, int n) { a[threadIdx.x] = 0; }
int run(int n) {
  float *d = nullptr, *h;
  cudaMalloc(&d, n * sizeof(float));
  CUDA_CHECK(cudaMallocHost((void**)&h, n));
  cudaError_t err = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
  if (err != cudaSuccess) { goto fail; }
  k<<<1, 32, 0, stream>>>(d, n);
  float4 *v = reinterpret_cast<float4*>(d + 1);
  float4 *w = (float4*)&d[2];
  for (int i = 0; i < 3; ++i) { cudaMalloc((void**)&tmp, 4); }
  MY_UNKNOWN_MACRO(x) 
  cudaFree(h);
fail:
  cudaFreeHost(d);
  delete[] p; free(q);
  return 0;
}

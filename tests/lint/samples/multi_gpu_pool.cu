// Samples-style C++: per-device buffers, a small caching pool class, a graph capture and
// thrust. No findings expected.
#include <cstdio>
#include <map>
#include <vector>
#include <cuda_runtime.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>

#define CHECK(call) check_cuda((call), __FILE__, __LINE__)
static inline void check_cuda(cudaError_t e, const char *file, int line) {
  if (e != cudaSuccess) std::fprintf(stderr, "%s:%d: %s\n", file, line, cudaGetErrorString(e));
}

class CachingPool {
 public:
  void *allocate(size_t bytes) {
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      void *p = it->second.back();
      it->second.pop_back();
      return p;
    }
    void *p = nullptr;
    CHECK(cudaMalloc(&p, bytes));
    return p;
  }
  void deallocate(void *p, size_t bytes) { free_[bytes].push_back(p); }
  ~CachingPool() {
    for (auto &kv : free_)
      for (void *p : kv.second) CHECK(cudaFree(p));
  }

 private:
  std::map<size_t, std::vector<void *>> free_;
};

__global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

int run_all_devices(int n) {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  std::vector<float *> xs(count), ys(count);
  for (int dev = 0; dev < count; ++dev) {
    CHECK(cudaSetDevice(dev));
    CHECK(cudaMalloc(&xs[dev], n * sizeof(float)));
    CHECK(cudaMalloc(&ys[dev], n * sizeof(float)));
  }
  for (int dev = 0; dev < count; ++dev) {
    CHECK(cudaSetDevice(dev));
    axpy<<<(n + 255) / 256, 256>>>(2.0f, xs[dev], ys[dev], n);
    CHECK(cudaGetLastError());
  }
  for (int dev = 0; dev < count; ++dev) {
    CHECK(cudaSetDevice(dev));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(xs[dev]));
    CHECK(cudaFree(ys[dev]));
  }
  return 0;
}

void graph_replay(float *x, float *y, int n, cudaStream_t s, int times) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  axpy<<<(n + 255) / 256, 256, 0, s>>>(1.0f, x, y, n);
  CHECK(cudaGetLastError());
  CHECK(cudaStreamEndCapture(s, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < times; ++i) CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
}

float thrust_sum(const std::vector<float> &h) {
  thrust::device_vector<float> d(h.begin(), h.end());
  return thrust::reduce(d.begin(), d.end(), 0.0f);
}

void pool_user(CachingPool &pool, int iters, size_t bytes) {
  for (int i = 0; i < iters; ++i) {
    float *tmp = static_cast<float *>(pool.allocate(bytes));
    CHECK(cudaMemsetAsync(tmp, 0, bytes));
    pool.deallocate(tmp, bytes);
  }
}

struct Mirror {
  float *host = nullptr, *dev = nullptr;
  size_t n = 0;
  bool init(size_t count) {
    n = count;
    if (cudaMallocHost(&host, n * sizeof(float)) != cudaSuccess) return false;
    if (cudaMalloc(&dev, n * sizeof(float)) != cudaSuccess) {
      CHECK(cudaFreeHost(host));
      host = nullptr;
      return false;
    }
    return true;
  }
  void sync_to_device(cudaStream_t s) {
    CHECK(cudaMemcpyAsync(dev, host, n * sizeof(float), cudaMemcpyHostToDevice, s));
  }
  ~Mirror() {
    if (dev) CHECK(cudaFree(dev));
    if (host) CHECK(cudaFreeHost(host));
  }
};

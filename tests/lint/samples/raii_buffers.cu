// Samples-style C++: RAII wrappers over device and pinned memory, as the seed chapter
// recommends. No findings expected.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_CHECK(x) check((x), #x, __FILE__, __LINE__)
void check(cudaError_t e, const char *what, const char *file, int line);

template <typename T>
struct DeviceDeleter {
  void operator()(T *p) const { if (p) CUDA_CHECK(cudaFree(p)); }
};
template <typename T>
struct HostDeleter {
  void operator()(T *p) const { if (p) CUDA_CHECK(cudaFreeHost(p)); }
};
template <typename T> using DevicePtr = std::unique_ptr<T, DeviceDeleter<T>>;
template <typename T> using HostPtr = std::unique_ptr<T, HostDeleter<T>>;

template <typename T>
DevicePtr<T> makeDevice(size_t n) {
  T *p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
  return DevicePtr<T>(p);
}

template <typename T>
HostPtr<T> makePinned(size_t n, unsigned int flags = cudaHostAllocDefault) {
  T *p = nullptr;
  CUDA_CHECK(cudaHostAlloc(&p, n * sizeof(T), flags));
  return HostPtr<T>(p);
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) : bytes_(bytes) {
    CUDA_CHECK(cudaMalloc(&data_, bytes_));
  }
  ~DeviceBuffer() { cudaFree(data_); }  // gpumem-lint: ignore[GM004] destructors cannot report
  DeviceBuffer(DeviceBuffer &&other) noexcept : data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  void *get() const { return data_; }
  size_t size() const { return bytes_; }
  void resize(size_t bytes) {
    void *fresh = nullptr;
    CUDA_CHECK(cudaMalloc(&fresh, bytes));
    CUDA_CHECK(cudaFree(data_));
    data_ = fresh;
    bytes_ = bytes;
  }

 private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
};

__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

void run(size_t n) {
  auto d_x = makeDevice<float>(n);
  auto d_y = makeDevice<float>(n);
  auto h_buf = makePinned<float>(n, cudaHostAllocWriteCombined);
  for (size_t i = 0; i < n; i++) h_buf.get()[i] = 1.0f;
  CUDA_CHECK(cudaMemcpy(d_x.get(), h_buf.get(), n * sizeof(float), cudaMemcpyHostToDevice));
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, d_x.get(), d_y.get());
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
}

std::vector<DeviceBuffer> make_pool(int count, size_t bytes) {
  std::vector<DeviceBuffer> pool;
  for (int i = 0; i < count; i++) pool.emplace_back(bytes);
  return pool;
}

float *alloc_or_throw(size_t n) {
  float *p = nullptr;
  if (cudaMalloc(&p, n * sizeof(float)) != cudaSuccess)
    throw std::bad_alloc();
  return p;
}

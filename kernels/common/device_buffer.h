// Device memory for the host wrappers and the harness: an owning buffer, and
// an upload of a host vector. CUDA errors throw (cuda_check.h).
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "kernels/common/cuda_check.h"

namespace v41sim::kernels {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) { CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T) + 16)); }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return ptr_; }
  std::vector<T> download(std::size_t count) const {
    std::vector<T> host(count);
    CUDA_CHECK(cudaMemcpy(host.data(), ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* ptr_ = nullptr;
};

}  // namespace v41sim::kernels

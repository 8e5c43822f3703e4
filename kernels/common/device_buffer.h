// Device memory for the host wrappers and the harness: an owning buffer, and
// an upload of a host vector. CUDA errors throw (cuda_check.h). A buffer made
// by size starts poisoned (all-ones bytes: NaN floats, -1 integers), so a
// kernel that skips part of its output cannot pass a check on leftovers.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "kernels/common/cuda_check.h"

namespace v41sim::kernels {

template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t count) {
    CUDA_CHECK(cudaMalloc(&ptr_, count * sizeof(T) + 16));
    CUDA_CHECK(cudaMemset(ptr_, 0xFF, count * sizeof(T) + 16));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    CUDA_CHECK(cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept : ptr_(other.ptr_) { other.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&&) = delete;

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

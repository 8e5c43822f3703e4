// Dynamic shared memory past the 48 KB a launch may ask for without opting
// in: what a kernel may have on the device at hand, and the opt-in itself.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/cuda_check.h"

namespace v41sim::kernels {

// A kernel's dynamic shared memory up to `bytes`, allowed once per process
// (the first call's size stands).
template <auto kKernel>
void allow_shared_memory(int bytes) {
  static const bool allowed = [bytes] {
    CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)allowed;
}

// The most dynamic shared memory `kernel` may ask for on the current device:
// a CTA's opt-in limit less the kernel's static shared memory.
template <typename Kernel>
int64_t dynamic_shared_memory_limit(Kernel kernel) {
  int device = 0, optin = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  cudaFuncAttributes attributes{};
  CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  return optin - static_cast<int64_t>(attributes.sharedSizeBytes);
}

}  // namespace v41sim::kernels

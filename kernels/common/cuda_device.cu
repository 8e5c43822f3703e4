#include <cuda_runtime.h>

#include "kernels/common/cuda_device.h"

namespace v41sim::kernels {

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (why != nullptr) *why = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace v41sim::kernels

#include <cuda_runtime.h>

#include <string>

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

bool sm90a_device(std::string* why) {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    if (why != nullptr) *why = "no CUDA device";
    return false;
  }
  if (major != 9 || minor != 0) {
    if (why != nullptr)
      *why = "sm_90a code (wgmma) runs on Hopper only; this device is sm_" + std::to_string(major) +
             std::to_string(minor);
    return false;
  }
  return true;
}

}  // namespace v41sim::kernels

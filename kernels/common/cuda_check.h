// CUDA_CHECK throws with the failing call and CUDA's message (no exit()).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#define CUDA_CHECK(call)                                                                           \
  do {                                                                                             \
    const cudaError_t cuda_check_status = (call);                                                  \
    if (cuda_check_status != cudaSuccess) {                                                        \
      throw std::runtime_error(std::string(#call) + ": " + cudaGetErrorString(cuda_check_status)); \
    }                                                                                              \
  } while (0)

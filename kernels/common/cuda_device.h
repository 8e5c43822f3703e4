// Whether a CUDA device can be used here (plain C++: tests ask it to skip
// visibly, the harness to refuse to start).
#pragma once

#include <string>

namespace v41sim::kernels {

// True when a CUDA device can be used; otherwise `why` says what is missing.
bool cuda_device_available(std::string* why);

// True when the current device runs sm_90a code (Hopper's wgmma kernels:
// compute capability 9.0); otherwise `why` says what the device is.
bool sm90a_device(std::string* why);

}  // namespace v41sim::kernels

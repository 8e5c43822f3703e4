// Whether a CUDA device can be used here (plain C++: tests ask it to skip
// visibly, the harness to refuse to start).
#pragma once

#include <string>

namespace v41sim::kernels {

// True when a CUDA device can be used; otherwise `why` says what is missing.
bool cuda_device_available(std::string* why);

}  // namespace v41sim::kernels

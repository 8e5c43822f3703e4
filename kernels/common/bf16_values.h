// BF16 copies of float values and back, on the host: the inputs the kernels
// take in BF16 (as an engine's projections write them) and the float values
// their CPU references compute on (widening is exact).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/fp_codec.h"

namespace v41sim::kernels {

// Rounded to nearest even.
inline std::vector<uint16_t> to_bf16_values(const std::vector<float>& values) {
  std::vector<uint16_t> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = bf16_bits(values[i]);
  return out;
}

inline std::vector<float> from_bf16_values(const std::vector<uint16_t>& values) {
  std::vector<float> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = bf16_value(values[i]);
  return out;
}

}  // namespace v41sim::kernels

// Seeded normal random values for kernel inputs: the same numbers for the
// tests, the harness's correctness gates and the reference input makers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/common/fp_codec.h"

namespace v41sim::kernels {

inline std::vector<float> normal_values(std::size_t count, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

// The same values as FP8 E4M3 codes (activations, FP8 queries).
inline std::vector<uint8_t> normal_e4m3_codes(std::size_t count, uint32_t seed) {
  std::vector<uint8_t> codes;
  codes.reserve(count);
  for (float v : normal_values(count, seed)) codes.push_back(encode_e4m3(v));
  return codes;
}

}  // namespace v41sim::kernels

// Seeded normal random values for kernel inputs: the same numbers for the
// tests, the harness's correctness gates and the reference input makers.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace v41sim::kernels {

inline std::vector<float> normal_values(std::size_t count, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, stddev);
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

}  // namespace v41sim::kernels

// Portable draws from a 64-bit generator: the transforms are ours, not the
// standard library's (whose distributions differ between implementations),
// so a seed gives the same numbers everywhere.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace v41sim {

inline double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

inline double exponential(std::mt19937_64& rng, double mean) { return -mean * std::log1p(-uniform01(rng)); }

inline double standard_normal(std::mt19937_64& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace v41sim

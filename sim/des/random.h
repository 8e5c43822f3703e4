// Portable draws from a 64-bit generator: the transforms are ours, not the
// standard library's (whose distributions differ between implementations),
// so a seed gives the same numbers everywhere.
#pragma once

#include <cmath>
#include <concepts>
#include <cstdint>
#include <numbers>
#include <random>

namespace v41sim {

// SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): a generator whose state is
// one word, for streams made by the hundred thousand (one per session turn),
// where seeding a Mersenne Twister would cost more than the few draws taken.
class SplitMix64 {
 public:
  using result_type = uint64_t;
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  // Two values hashed into a seed, so streams of neighbouring keys do not overlap.
  static uint64_t mix(uint64_t a, uint64_t b) { return finalize(a ^ finalize(b + 0x9e3779b97f4a7c15ULL)); }
  static constexpr uint64_t min() { return 0; }
  static constexpr uint64_t max() { return UINT64_MAX; }
  uint64_t operator()() { return finalize(state_ += 0x9e3779b97f4a7c15ULL); }

 private:
  static uint64_t finalize(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state_;
};

// Any generator of 64-bit words (std::mt19937_64, SplitMix64).
template <class Rng>
concept Rng64 = std::uniform_random_bit_generator<Rng> && Rng::max()
== UINT64_MAX&& Rng::min() == 0;

template <Rng64 Rng>
double uniform01(Rng& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

template <Rng64 Rng>
double exponential(Rng& rng, double mean) {
  return -mean * std::log1p(-uniform01(rng));
}

template <Rng64 Rng>
double standard_normal(Rng& rng) {
  const double u1 = 1.0 - uniform01(rng);  // (0, 1]
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace v41sim

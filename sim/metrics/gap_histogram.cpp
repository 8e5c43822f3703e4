#include "sim/metrics/gap_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

namespace v41sim {
namespace {

constexpr uint64_t kExact = uint64_t{1} << GapHistogram::kSubBits;  // values with a bin each
// Bins: kExact exact ones, then kExact a power of two from 2^kSubBits to 2^63.
constexpr std::size_t kBins = kExact + (64 - GapHistogram::kSubBits) * kExact;

}  // namespace

GapHistogram::GapHistogram() : counts_(kBins, 0) {}

std::size_t GapHistogram::bin_of(uint64_t ps) {
  if (ps < kExact) return ps;
  const int exponent = static_cast<int>(std::bit_width(ps)) - 1;  // >= kSubBits
  const int shift = exponent - kSubBits;
  const uint64_t within = (ps >> shift) - kExact;  // the bits below the leading one
  return kExact + static_cast<std::size_t>(shift) * kExact + within;
}

double GapHistogram::middle_of(std::size_t bin) {
  if (bin < kExact) return static_cast<double>(bin);
  const std::size_t shift = (bin - kExact) / kExact;
  const double low =
      std::ldexp(static_cast<double>(kExact + (bin - kExact) % kExact), static_cast<int>(shift));
  return low + (std::ldexp(1.0, static_cast<int>(shift)) - 1.0) / 2.0;
}

void GapHistogram::add(SimTime gap) {
  if (gap.ps() < 0) throw std::logic_error("GapHistogram::add: a negative gap");
  ++counts_[bin_of(static_cast<uint64_t>(gap.ps()))];
  ++count_;
  sum_ps_ += static_cast<double>(gap.ps());
  min_ps_ = std::min(min_ps_, gap.ps());
  max_ps_ = std::max(max_ps_, gap.ps());
}

double GapHistogram::percentile_ps(double p) const {
  const auto rank = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))), 1, count_);
  int64_t seen = 0;
  for (std::size_t bin = 0; bin < counts_.size(); ++bin) {
    seen += counts_[bin];
    // The middle of the end bins may lie past the gaps in them.
    if (seen >= rank)
      return std::clamp(middle_of(bin), static_cast<double>(min_ps_), static_cast<double>(max_ps_));
  }
  return static_cast<double>(max_ps_);
}

LatencySummary GapHistogram::summary_ms() const {
  LatencySummary s;
  if (count_ == 0) return s;
  constexpr double kMsPerPs = 1e-9;
  s.count = count_;
  s.mean = sum_ps_ / static_cast<double>(count_) * kMsPerPs;
  s.p50 = percentile_ps(50) * kMsPerPs;
  s.p90 = percentile_ps(90) * kMsPerPs;
  s.p99 = percentile_ps(99) * kMsPerPs;
  s.max = static_cast<double>(max_ps_) * kMsPerPs;
  return s;
}

}  // namespace v41sim

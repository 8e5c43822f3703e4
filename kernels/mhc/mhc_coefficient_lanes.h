// mHC's coefficients by 16 lanes a token (mhc_coefficients.h gives the
// function and its one-thread form): what the kernels run, so a tile's
// tokens wait on a lane's chain of sums and divisions, not one thread's.
// Host and device alike: on the host the lanes run as threads that meet at
// every shuffle (the Mhc tests), so the code a GPU runs is tested in CI.
#pragma once

#include "kernels/common/host_device.h"
#include "kernels/mhc/mhc_coefficients.h"

namespace v41sim::kernels {

// Element i of a site's biases, read at constant indices only: a kernel
// takes MhcScales by value, and a parameter indexed by a lane's number would
// be copied to local memory.
V41_HD float base_at(const MhcScales& p, int i) {
  float value = p.base[0];
  V41_UNROLL
  for (int j = 1; j < kMixes; ++j) value = j == i ? p.base[j] : value;
  return value;
}

// The same coefficients by 16 lanes a token, so the 20 Sinkhorn rounds take
// a lane's chain of two sums and two divisions each, not one thread's 32
// divisions (the single passes' CTAs wait on this chain once a tile). Lane
// `lane` carries comb entry (lane / 4, lane % 4) through the rounds, and
// lanes 0-7 finish the pre and post weights. `shuffle(value, from)` returns
// the value lane `from` of the token's 16 passed to the same call (a warp
// shuffle on the device): every lane must make every call. The same
// expressions in the same order as mhc_coefficients_of, so the same results
// bit for bit. Stores nothing where `c` is null (a lane that only keeps the
// shuffles company).
inline constexpr int kCoefficientLanes = kStreams * kStreams;
static_assert(32 % kCoefficientLanes == 0, "a warp holds whole tokens");
template <typename Shuffle>
V41_HD void mhc_coefficients_by_lane(const float* sums, float values, const MhcScales& p, int lane, float* c,
                                     Shuffle&& shuffle) {
  const int s = lane / kStreams, d = lane % kStreams;
  const auto gather = [&](float value, int first, int step, float(&v)[kStreams]) {
    V41_UNROLL
    for (int i = 0; i < kStreams; ++i) v[i] = shuffle(value, first + i * step);
  };
  const float inv_rms = mhc_inv_rms(sums, values);
  float v[kStreams];
  const int j = kCombOffset + lane;
  const float logit = mhc_comb_logit(sums[j], inv_rms, p.scale[2], base_at(p, j));
  gather(logit, s * kStreams, 1, v);
  const float e = expf(logit - max_in_order(v));
  gather(e, s * kStreams, 1, v);
  float x = e / sum_in_order(v) + kMhcEps;
  for (int it = 0; it < kSinkhornIters; ++it) {
    if (it > 0) {
      gather(x, s * kStreams, 1, v);
      x /= sum_in_order(v) + kMhcEps;
    }
    gather(x, d, kStreams, v);
    x /= sum_in_order(v) + kMhcEps;
  }
  if (c == nullptr) return;
  c[kCombOffset + lane] = x;
  if (lane < kStreams) {
    c[kPreOffset + lane] =
        mhc_pre_weight(sums[kPreOffset + lane], inv_rms, p.scale[0], base_at(p, kPreOffset + lane));
  } else if (lane < 2 * kStreams) {
    c[kPostOffset + d] =
        mhc_post_weight(sums[kPostOffset + d], inv_rms, p.scale[1], base_at(p, kPostOffset + d));
  }
}

// Which token thread `thread` of a CTA finishes, for a tile of `rows`
// tokens, 16 lanes a token: the first whole warps that cover the rows take
// part (the shuffles need every lane of a warp); a half-warp past the last
// row repeats its sums and stores nothing.
struct CoefficientLane {
  bool takes_part;
  int row;      // whose sums it reads
  bool stores;  // whether that row is its own
  int lane;     // of the token's 16
};
V41_HD CoefficientLane coefficient_lane(int thread, int rows) {
  constexpr int kTokensAWarp = 32 / kCoefficientLanes;
  const int row = thread / kCoefficientLanes;
  return {thread / 32 < (rows + kTokensAWarp - 1) / kTokensAWarp, row < rows ? row : rows - 1, row < rows,
          thread % kCoefficientLanes};
}

}  // namespace v41sim::kernels

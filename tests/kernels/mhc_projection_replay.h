// The mHC kernels' tensor-core projection replayed on the CPU: every lane's
// token and fn fragments through the kernels' own load functions
// (mhc_projection_tiles.h) on an emulated m16n8k16, each warp's sums left as
// store_sums leaves them (a row's squares added over its 4 lanes in the
// shuffles' order), and the warps' sums added in warp order as sum_over_warps
// adds them; and the FP64 sums over whole rows they are checked against.
// Shared by the projection tests and the mHC kernels' replays.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/mhc/mhc_projection_tiles.h"
#include "tests/kernels/mma_bf16_emulation.h"

namespace v41sim::kernels::testing {

// A token tile and fn as a kernel's projection reads them: rows of values
// `stride` and `fn_stride` apart (the whole flattened streams, or a cluster
// CTA's slice).
struct ProjectionOperands {
  const uint16_t* tile;
  const uint16_t* fn;
  int64_t stride;
  int64_t fn_stride;
  int rows;
  int64_t columns;  // a row's values that take part (a multiple of 16)
};

// Per row: the 24 dot products, then the sum of squares, as a warp or a CTA holds them.
using ProjectionSums = std::vector<std::array<float, kProjectionSums>>;

// One warp's k16 steps `range`; rows past `rows` read the last row and are dropped.
template <int kMTiles>
ProjectionSums replay_warp_projection(const ProjectionOperands& in, StepRange range) {
  float acc[kMTiles][kMixTiles][kLanes][4] = {};
  float squares[kMTiles][kLanes][2] = {};
  for (int64_t step = range.begin; step < range.end; ++step) {
    const int64_t k0 = step * mma::kK;
    for (int mt = 0; mt < kMTiles; ++mt) {
      uint32_t a[kLanes][4];
      for (int lane = 0; lane < kLanes; ++lane) {
        for (int reg = 0; reg < 4; ++reg) {
          a[lane][reg] =
              token_fragment(in.tile, in.stride, in.rows, mt * mma::kM, k0, mma::lane_of(lane), reg);
          squares[mt][lane][reg & 1] += pair_squares(a[lane][reg]);
        }
      }
      for (int nt = 0; nt < kMixTiles; ++nt) {
        uint32_t b[kLanes][2];
        for (int lane = 0; lane < kLanes; ++lane) {
          for (int reg = 0; reg < 2; ++reg)
            b[lane][reg] = fn_fragment(in.fn, in.fn_stride, nt, k0, mma::lane_of(lane), reg);
        }
        emulate_mma_bf16(acc[mt][nt], a, b);
      }
    }
  }
  std::array<float, kProjectionSums> unset;
  unset.fill(std::numeric_limits<float>::quiet_NaN());  // a sum no lane stores stays NaN
  ProjectionSums sums(static_cast<std::size_t>(in.rows), unset);
  for (int mt = 0; mt < kMTiles; ++mt) {
    for (int lane = 0; lane < kLanes; ++lane) {
      const mma::Lane l = mma::lane_of(lane);
      for (int nt = 0; nt < kMixTiles; ++nt) {
        for (int i = 0; i < 4; ++i) {
          const int row = mt * mma::kM + mma::c_row(l, i);
          if (row < in.rows) sums[row][nt * mma::kN + mma::c_col(l, i)] = acc[mt][nt][lane][i];
        }
      }
      if (l.pair != 0) continue;
      for (int half = 0; half < 2; ++half) {  // the shuffles: lanes xor 1, then xor 2
        const auto& s = squares[mt];
        const int row = mt * mma::kM + l.group + half * 8;
        if (row < in.rows)
          sums[row][kMixes] = (s[lane][half] + s[lane + 1][half]) + (s[lane + 2][half] + s[lane + 3][half]);
      }
    }
  }
  return sums;
}

// A CTA of `warps` warps, warp w taking the steps steps_of(w), its warps' sums added in order.
template <int kMTiles, typename StepsOf>
ProjectionSums replay_cta_projection(const ProjectionOperands& in, int warps, StepsOf&& steps_of) {
  ProjectionSums total(static_cast<std::size_t>(in.rows), std::array<float, kProjectionSums>{});
  for (int warp = 0; warp < warps; ++warp) {
    const ProjectionSums part = replay_warp_projection<kMTiles>(in, steps_of(warp));
    for (int row = 0; row < in.rows; ++row) {
      for (int i = 0; i < kProjectionSums; ++i) total[row][i] += part[row][i];
    }
  }
  return total;
}

// The single passes' CTAs: each warp an equal share of the columns' steps.
template <int kMTiles>
ProjectionSums replay_cta_projection(const ProjectionOperands& in, int warps) {
  return replay_cta_projection<kMTiles>(
      in, warps, [&](int warp) { return step_range(in.columns / mma::kK, warp, warps); });
}

// Per row: the 24 dot products, then the sum of squares, in FP64 over a
// token's whole flattened streams (`rows` rows of k values), as the
// projections' sums are checked against.
using WholeSums = std::vector<std::array<double, kProjectionSums>>;
inline WholeSums whole_sums(const std::vector<uint16_t>& tokens, const std::vector<uint16_t>& fn,
                            int64_t rows, int64_t k) {
  WholeSums sums(static_cast<std::size_t>(rows), std::array<double, kProjectionSums>{});
  for (int64_t row = 0; row < rows; ++row) {
    auto& s = sums[static_cast<std::size_t>(row)];
    for (int64_t j = 0; j < k; ++j) {
      const double v = mma::from_bf16(tokens[static_cast<std::size_t>(row * k + j)]);
      for (int mix = 0; mix < kMixes; ++mix)
        s[mix] += v * mma::from_bf16(fn[static_cast<std::size_t>(mix * k + j)]);
      s[kMixes] += v * v;
    }
  }
  return sums;
}

// FP32 sums against FP64 ones, to FP32's reach over a few thousand terms.
inline void expect_sums_near(const ProjectionSums& got, const WholeSums& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t row = 0; row < got.size(); ++row) {
    for (int i = 0; i < kProjectionSums; ++i)
      EXPECT_NEAR(got[row][i], want[row][i], 1e-4 * (1.0 + std::fabs(want[row][i])))
          << "row " << row << ", sum " << i;
  }
}

}  // namespace v41sim::kernels::testing

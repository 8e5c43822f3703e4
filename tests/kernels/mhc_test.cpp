// mHC mixing: the coefficient function against a plain transcription of the
// released one, its ranges and invariances, the merge's orientation, the
// single step composed of the three kernels' references, the tensor-core
// projection's loads replayed lane by lane (the single passes, slices and
// all, in mhc_replay_test.cpp), the launch choices, and the CUDA forms against the reference
// where a GPU exists.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/random_values.h"
#include "kernels/mhc/mhc_cluster_slices.h"
#include "kernels/mhc/mhc_coefficient_lanes.h"
#include "kernels/mhc/mhc_mixing.h"
#include "kernels/mhc/mhc_projection_tiles.h"
#include "tests/kernels/device_check_support.h"
#include "tests/kernels/lockstep_lanes.h"
#include "tests/kernels/mhc_projection_replay.h"

namespace v41sim::kernels {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The released hc_split_sinkhorn, line by line in FP64, on RMS-scaled mixes.
std::vector<double> released_coefficients(const std::vector<double>& mixes, const MhcScales& p) {
  std::vector<double> c(kCoefficients);
  for (int s = 0; s < 4; ++s) {
    c[s] = sigmoid(mixes[s] * p.scale[0] + p.base[s]) + 1e-6;
    c[4 + s] = 2.0 * sigmoid(mixes[4 + s] * p.scale[1] + p.base[4 + s]);
  }
  double comb[4][4];
  for (int i = 0; i < 4; ++i) {
    double mx = -1e300, sum = 0;
    for (int j = 0; j < 4; ++j) mx = std::max(mx, mixes[8 + 4 * i + j] * p.scale[2] + p.base[8 + 4 * i + j]);
    for (int j = 0; j < 4; ++j)
      sum += std::exp(mixes[8 + 4 * i + j] * p.scale[2] + p.base[8 + 4 * i + j] - mx);
    for (int j = 0; j < 4; ++j)
      comb[i][j] = std::exp(mixes[8 + 4 * i + j] * p.scale[2] + p.base[8 + 4 * i + j] - mx) / sum + 1e-6;
  }
  const auto normalise_columns = [&] {
    for (int j = 0; j < 4; ++j) {
      const double col = comb[0][j] + comb[1][j] + comb[2][j] + comb[3][j] + 1e-6;
      for (int i = 0; i < 4; ++i) comb[i][j] /= col;
    }
  };
  normalise_columns();
  for (int it = 0; it < 19; ++it) {
    for (int i = 0; i < 4; ++i) {
      const double row = comb[i][0] + comb[i][1] + comb[i][2] + comb[i][3] + 1e-6;
      for (int j = 0; j < 4; ++j) comb[i][j] /= row;
    }
    normalise_columns();
  }
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) c[8 + 4 * i + j] = comb[i][j];
  }
  return c;
}

TEST(Mhc, CoefficientsFollowTheReleasedFunction) {
  const MhcWeights w = random_mhc_weights(8, 11);
  const auto dots = normal_values(kMixes * 5, 12, 3.0f);
  for (int t = 0; t < 5; ++t) {
    const float values = 32.0f, squares = 40.0f;  // an RMS of sqrt(1.25)
    float sums[kProjectionSums];
    std::vector<double> mixes(kMixes);
    for (int j = 0; j < kMixes; ++j) {
      sums[j] = dots[static_cast<std::size_t>(t * kMixes + j)];
      mixes[static_cast<std::size_t>(j)] = sums[j] / std::sqrt(squares / values + 1e-6);
    }
    sums[kMixes] = squares;
    float c[kCoefficients];
    mhc_coefficients_of(sums, values, w.scales, c);
    const std::vector<double> want = released_coefficients(mixes, w.scales);
    for (int j = 0; j < kCoefficients; ++j) EXPECT_NEAR(c[j], want[static_cast<std::size_t>(j)], 1e-5) << j;
  }
}

// The 16 lanes of a token as threads meeting at every shuffle.
std::vector<float> coefficients_by_lanes(const float* sums, float values, const MhcScales& p) {
  std::vector<float> c(kCoefficients, std::numeric_limits<float>::quiet_NaN());
  testing::LockstepLanes<float> lanes(kCoefficientLanes);
  lanes.run([&](int lane) {
    mhc_coefficients_by_lane(sums, values, p, lane, c.data(),
                             [&](float value, int from) { return lanes.exchange(lane, value, from); });
  });
  return c;
}

// The kernels' 16-lane form gives the one-thread form's coefficients bit for
// bit, comb logits from mild to ones that saturate the softmax.
TEST(Mhc, CoefficientsByLanesAreTheOneThreadFormsBitForBit) {
  const MhcWeights w = random_mhc_weights(8, 13);
  for (const float spread : {0.5f, 3.0f, 40.0f}) {
    const auto dots = normal_values(kMixes * 6, 14, spread);
    for (int t = 0; t < 6; ++t) {
      float sums[kProjectionSums];
      for (int j = 0; j < kMixes; ++j) sums[j] = dots[static_cast<std::size_t>(t * kMixes + j)];
      sums[kMixes] = 40.0f + static_cast<float>(t);
      float want[kCoefficients];
      mhc_coefficients_of(sums, 32.0f, w.scales, want);
      const std::vector<float> got = coefficients_by_lanes(sums, 32.0f, w.scales);
      for (int j = 0; j < kCoefficients; ++j)
        EXPECT_EQ(float_bits(got[static_cast<std::size_t>(j)]), float_bits(want[j]))
            << "spread " << spread << ", " << j;
    }
  }
}

// The threads that finish a tile's coefficients: whole warps, 16 lanes for
// each row storing once, the rest of a warp repeating the last row unseen.
TEST(Mhc, CoefficientLanesCoverEachRowOnceInWholeWarps) {
  for (int rows = 1; rows <= 8; ++rows) {
    std::vector<int> stores(static_cast<std::size_t>(rows * kCoefficientLanes), 0);
    int taking_part = 0;
    for (int thread = 0; thread < 512; ++thread) {
      const CoefficientLane at = coefficient_lane(thread, rows);
      if (!at.takes_part) continue;
      ++taking_part;
      ASSERT_GE(at.row, 0);
      ASSERT_LT(at.row, rows);
      if (at.stores) ++stores[static_cast<std::size_t>(at.row * kCoefficientLanes + at.lane)];
    }
    EXPECT_EQ(taking_part % 32, 0) << rows << " rows";
    EXPECT_EQ(taking_part, (rows + 1) / 2 * 32) << rows << " rows";
    for (std::size_t i = 0; i < stores.size(); ++i) EXPECT_EQ(stores[i], 1) << rows << " rows, lane " << i;
  }
}

TEST(Mhc, CoefficientsStayInTheirRangesAndCombIsDoublyStochastic) {
  const int64_t tokens = 6, hidden = 64;
  const auto X = to_bf16_values(normal_values(tokens * kStreams * hidden, 1));
  const auto c = mhc_coefficients_reference(X, random_mhc_weights(hidden, 2), tokens, hidden);
  for (int64_t t = 0; t < tokens; ++t) {
    const float* k = c.data() + t * kCoefficients;
    for (int s = 0; s < kStreams; ++s) {
      EXPECT_GT(k[kPreOffset + s], 0.0f);
      EXPECT_LE(k[kPreOffset + s], 1.0f + kMhcEps);
      EXPECT_GT(k[kPostOffset + s], 0.0f);
      EXPECT_LT(k[kPostOffset + s], 2.0f);
      float row = 0, col = 0;
      for (int u = 0; u < kStreams; ++u) {
        EXPECT_GT(k[kCombOffset + s * kStreams + u], 0.0f);
        row += k[kCombOffset + s * kStreams + u];
        col += k[kCombOffset + u * kStreams + s];
      }
      EXPECT_NEAR(col, 1.0f, 1e-5f);  // the last step normalises columns
      EXPECT_NEAR(row, 1.0f, 1e-3f);
    }
  }
}

TEST(Mhc, CoefficientsIgnoreTheStreamsScale) {
  const int64_t tokens = 3, hidden = 32;
  const auto values = normal_values(tokens * kStreams * hidden, 3);
  std::vector<float> doubled(values);
  for (float& v : doubled) v *= 2.0f;  // exact in BF16
  const MhcWeights w = random_mhc_weights(hidden, 4);
  const auto c = mhc_coefficients_reference(to_bf16_values(values), w, tokens, hidden);
  const auto c2 = mhc_coefficients_reference(to_bf16_values(doubled), w, tokens, hidden);
  for (std::size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], c2[i], 1e-5f) << i;
}

// comb[s][d] sends stream s to stream d: one stream of ones, no block output.
TEST(Mhc, MergeReadsCombAsSourceByDestination) {
  const int64_t hidden = 8;
  std::vector<float> coeffs(kCoefficients, 0.0f);
  const float from_stream_1[kStreams] = {0.5f, 0.25f, 0.125f, 0.125f};
  for (int d = 0; d < kStreams; ++d) coeffs[kCombOffset + 1 * kStreams + d] = from_stream_1[d];
  std::vector<float> X(kStreams * hidden, 0.0f);
  for (int64_t i = 0; i < hidden; ++i) X[static_cast<std::size_t>(1 * hidden + i)] = 1.0f;
  const auto merged = from_bf16_values(mhc_post_merge_reference(
      to_bf16_values(X), to_bf16_values(std::vector<float>(hidden, 3.0f)), coeffs, 1, hidden));
  for (int d = 0; d < kStreams; ++d) {
    for (int64_t i = 0; i < hidden; ++i)
      EXPECT_EQ(merged[static_cast<std::size_t>(d * hidden + i)], from_stream_1[d]);
  }
}

TEST(Mhc, StepReferenceComposesTheThreeKernels) {
  const int64_t tokens = 5, hidden = 96;
  const auto X = to_bf16_values(normal_values(tokens * kStreams * hidden, 2));
  const auto y = to_bf16_values(normal_values(tokens * hidden, 3));
  const auto c = mhc_coefficients_reference(X, random_mhc_weights(hidden, 5), tokens, hidden);
  const MhcWeights next = random_mhc_weights(hidden, 6);
  const MhcStepResult step = mhc_step_reference(X, y, c, next, tokens, hidden);
  const auto merged = mhc_post_merge_reference(X, y, c, tokens, hidden);
  const auto next_c = mhc_coefficients_reference(merged, next, tokens, hidden);
  EXPECT_EQ(step.streams, merged);
  EXPECT_EQ(step.next_coeffs, next_c);
  EXPECT_EQ(step.next_input, mhc_pre_mix_reference(merged, next_c, tokens, hidden));
}

template <int kMTiles>
void expect_lane_replay_matches(int rows, int64_t hidden, int warps) {
  const int64_t k = kStreams * hidden;
  const auto tile = to_bf16_values(normal_values(static_cast<std::size_t>(rows * k), 21));
  const MhcWeights w = random_mhc_weights(hidden, 22);
  testing::expect_sums_near(
      testing::replay_cta_projection<kMTiles>({tile.data(), w.fn.data(), k, k, rows, k}, warps),
      testing::whole_sums(tile, w.fn, rows, k));
}

TEST(MhcProjection, LaneReplayReproducesDotProductsAndSquares) {
  expect_lane_replay_matches<1>(3, 40, 3);   // the single pass: a few tokens, rows clamped
  expect_lane_replay_matches<2>(21, 24, 2);  // the three-kernel form's 32-token tile, partly filled
}

// Every value of a token's flattened streams lies in exactly one cluster
// CTA's slice, for both cluster sizes; slices are whole k16 steps and fit
// their padded rows, whose starts spread over the banks.
TEST(MhcClusterPass, SlicesCoverTheStreamsOnce) {
  for (const int ctas : kClusterSizes) {
    for (const int64_t hidden : {5120, 1000, 64, 8}) {
      std::vector<int> seen(static_cast<std::size_t>(kStreams * hidden), 0);
      const int64_t stride = cluster_slice_stride(hidden, ctas);
      EXPECT_EQ(stride % kStreamVector, 0);
      // A fragment load reads 4 consecutive banks from each of 8 rows: the rows
      // must start in 8 different groups of 4 banks.
      std::vector<bool> group_taken(8, false);
      for (int64_t row = 0; row < 8; ++row) {
        const int64_t bank = row * stride / 2 % 32;  // 4-byte banks; a row's values are 2 bytes
        EXPECT_EQ(bank % 4, 0);
        EXPECT_FALSE(group_taken[static_cast<std::size_t>(bank / 4)])
            << "hidden " << hidden << " row " << row;
        group_taken[static_cast<std::size_t>(bank / 4)] = true;
      }
      for (int rank = 0; rank < ctas; ++rank) {
        const int64_t columns = cluster_slice_columns(hidden, ctas, rank);
        EXPECT_EQ(columns % mma::kK, 0);
        EXPECT_LE(columns + kClusterRowPad, stride);
        for (int64_t column = 0; column < columns; ++column)
          ++seen[static_cast<std::size_t>(cluster_flat_index(hidden, ctas, rank, column))];
      }
      for (std::size_t i = 0; i < seen.size(); ++i)
        ASSERT_EQ(seen[i], 1) << ctas << " CTAs, hidden " << hidden << ", value " << i;
    }
  }
  EXPECT_EQ(cluster_slice_columns(5120, 8, 3), 2560);   // an eighth of each stream
  EXPECT_EQ(cluster_slice_columns(5120, 16, 3), 1280);  // a sixteenth
  // Hopper's 227 KB a CTA, less room for the static arrays: one CTA an SM at
  // 8 a cluster; at 16, two of them in its 228 KB.
  EXPECT_LE(cluster_pass_shared_bytes(5120, 8), 227 * 1024 - 16 * 1024);
  EXPECT_LE(2 * (cluster_pass_shared_bytes(5120, 16) + 12 * 1024), 228 * 1024);
}

// Tiles as large as still give every cluster one; a decode batch takes small ones.
TEST(MhcClusterPass, TileRowsSpreadTokensOverTheClusters) {
  EXPECT_EQ(mhc_cluster_tile_rows(8448, 16), 8);
  EXPECT_EQ(mhc_cluster_tile_rows(128, 16), 8);
  EXPECT_EQ(mhc_cluster_tile_rows(64, 16), 4);
  EXPECT_EQ(mhc_cluster_tile_rows(37, 16), 2);
  EXPECT_EQ(mhc_cluster_tile_rows(5, 16), 1);
}

TEST(MhcProjection, LaunchChoicesFillTheGpuWithinSharedMemory) {
  // 37 tokens are 2 tiles: as many splits as give 264 CTAs, to 20 (1280 steps, 8 warps of 8 or more each).
  EXPECT_EQ(mhc_projection_splits(37, 5120, 132), 20);
  EXPECT_EQ(mhc_projection_splits(37, 1000, 132), 3);
  EXPECT_EQ(mhc_projection_splits(8448, 1000, 132), 1);
  const int64_t h100_tile_bytes = 227 * 1024 - 8 * 1024;
  EXPECT_EQ(mhc_fused_tokens_per_cta(8192, 5120, 132, h100_tile_bytes), 4);
  EXPECT_EQ(mhc_fused_tokens_per_cta(1024, 5120, 132, h100_tile_bytes), 2);  // 256 CTAs of 4 leave SMs idle
  EXPECT_EQ(mhc_fused_tokens_per_cta(64, 5120, 132, h100_tile_bytes), 1);
  EXPECT_EQ(mhc_fused_tokens_per_cta(8192, 5120, 132, 100000), 2);  // 4 rows of 40,976 B do not fit
  EXPECT_EQ(mhc_fused_tokens_per_cta(8192, 30000, 132, h100_tile_bytes), 0);
}

TEST(MhcCuda, BothFormsMatchTheReference) { expect_device_checks({"mhc"}); }

TEST(MhcClusterPassCuda, MatchesTheReference) { expect_device_checks({"mhc_cluster"}); }

}  // namespace
}  // namespace v41sim::kernels

// The mHC kernels replayed on the CPU as their CTAs run them, by the
// kernels' own index functions. The single passes: fn's slices staged as the
// cluster CTAs copy them (mhc_cluster_slices.h), the merge written to memory
// and into the shared tile where the kernels keep it (mhc_tile_layout.h),
// each CTA's projection lane by lane (mhc_projection_replay.h), a cluster's
// sums added in rank order, the coefficients, and the next block's input
// made from the tile; the tiles walked as persistent clusters walk them (the
// token-tile pass: a CTA a tile). The three-kernel form's projection: its
// CTAs' splits of the reduction through the workspace, added in split order
// as the block input adds them. Against the three kernels' CPU references.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/common/random_values.h"
#include "kernels/mhc/mhc_cluster_slices.h"
#include "kernels/mhc/mhc_mixing.h"
#include "kernels/mhc/mhc_projection_tiles.h"
#include "kernels/mhc/mhc_tile_layout.h"
#include "tests/kernels/mhc_projection_replay.h"

namespace v41sim::kernels {
namespace {

using testing::ProjectionSums;

using testing::kPoisonBf16;

// How a single pass divides the work: the cluster pass (8 or 16 CTAs share a
// tile, fn's slices staged in shared memory) or the token-tile pass (ctas 1,
// the whole streams a CTA, fn read from memory).
struct SinglePass {
  int ctas;
  int warps;
  int tile_rows;
  int64_t clusters;  // persistent groups of `ctas` CTAs walking the tiles
  bool fn_staged;
};

SinglePass cluster_pass(int ctas, int tile_rows, int64_t clusters) {
  return {ctas, cluster_warps(ctas), tile_rows, clusters, true};
}
SinglePass token_tile_pass(int tokens_per_cta, int64_t tokens) {
  return {1, kFusedWarps, tokens_per_cta, (tokens + tokens_per_cta - 1) / tokens_per_cta, false};
}

struct StepInputs {
  std::vector<uint16_t> X, y;
  std::vector<float> coeffs;
  MhcWeights next;
  int64_t tokens;
  int64_t hidden;
};

StepInputs random_step(int64_t tokens, int64_t hidden, uint32_t seed) {
  StepInputs in{to_bf16_values(normal_values(static_cast<std::size_t>(tokens * kStreams * hidden), seed)),
                to_bf16_values(normal_values(static_cast<std::size_t>(tokens * hidden), seed + 1)),
                {},
                random_mhc_weights(hidden, seed + 2),
                tokens,
                hidden};
  in.coeffs = mhc_coefficients_reference(in.X, random_mhc_weights(hidden, seed + 3), tokens, hidden);
  return in;
}

// One CTA of the pass: its rank's vectors of each stream and its shared memory's image.
struct CtaImage {
  int rank;
  VectorRange owned;
  int64_t stride;
  std::vector<uint16_t> fn;  // the staged slice (the cluster pass)
  std::vector<uint16_t> tile;
};

CtaImage stage_cta(const StepInputs& in, const SinglePass& pass, int rank) {
  CtaImage cta{rank,
               cluster_vectors(in.hidden, pass.ctas, rank),
               pass.fn_staged ? cluster_slice_stride(in.hidden, pass.ctas) : fused_tile_stride(in.hidden),
               {},
               {}};
  cta.tile.assign(static_cast<std::size_t>(pass.tile_rows * cta.stride), kPoisonBf16);
  if (!pass.fn_staged) return cta;
  cta.fn.assign(static_cast<std::size_t>(kMixes * cta.stride), kPoisonBf16);
  for (int64_t i = 0; i < fn_slice_copies(in.hidden, pass.ctas, rank); ++i) {
    const FnSliceCopy copy = fn_slice_copy(in.hidden, pass.ctas, rank, i);
    for (int e = 0; e < kStreamVector; ++e)
      cta.fn[static_cast<std::size_t>(copy.shared_value + e)] =
          in.next.fn[static_cast<std::size_t>(copy.fn_value + e)];
  }
  return cta;
}

// Value e of tile row r's vector v of `stream`, as the CTA keeps it.
uint16_t& tile_value(CtaImage& cta, int r, int stream, int64_t v, int e) {
  const int64_t vectors = cta.owned.end - cta.owned.begin;
  return cta.tile[static_cast<std::size_t>(
      (tile_row_vector(cta.stride, r) + stream_vector(vectors, stream, v)) * kStreamVector + e)];
}

// (1) Block i's merge of the tile's rows, this CTA's vectors of them.
void merge(const StepInputs& in, TileSpan span, CtaImage& cta, std::vector<uint16_t>& streams_out) {
  const int64_t vectors = in.hidden / kStreamVector;
  for (int r = 0; r < span.rows; ++r) {
    const int64_t token = span.token0 + r;
    const float* c = in.coeffs.data() + token * kCoefficients;
    for (int64_t v = 0; v < cta.owned.end - cta.owned.begin; ++v) {
      const int64_t at = cta.owned.begin + v;
      for (int e = 0; e < kStreamVector; ++e) {
        float x[kStreams];
        for (int s = 0; s < kStreams; ++s)
          x[s] = mma::from_bf16(in.X[static_cast<std::size_t>(
              token * kStreams * in.hidden + stream_vector(vectors, s, at) * kStreamVector + e)]);
        const float out =
            mma::from_bf16(in.y[static_cast<std::size_t>(token * in.hidden + at * kStreamVector + e)]);
        for (int d = 0; d < kStreams; ++d) {
          const uint16_t merged = bf16_bits(mhc_merged(c, d, out, x));
          streams_out[static_cast<std::size_t>(token * kStreams * in.hidden +
                                               stream_vector(vectors, d, at) * kStreamVector + e)] = merged;
          tile_value(cta, r, d, v, e) = merged;
        }
      }
    }
  }
}

// (4) This CTA's vectors of block i+1's input, from the tile.
void block_input(const StepInputs& in, TileSpan span, CtaImage& cta, const float (*c)[kCoefficients],
                 std::vector<uint16_t>& next_input) {
  for (int r = 0; r < span.rows; ++r) {
    for (int64_t v = 0; v < cta.owned.end - cta.owned.begin; ++v) {
      for (int e = 0; e < kStreamVector; ++e) {
        float x[kStreams];
        for (int s = 0; s < kStreams; ++s) x[s] = mma::from_bf16(tile_value(cta, r, s, v, e));
        next_input[static_cast<std::size_t>((span.token0 + r) * in.hidden +
                                            (cta.owned.begin + v) * kStreamVector + e)] =
            bf16_bits(mhc_block_input(c[r], x));
      }
    }
  }
}

// The pass's results, and each token's projection sums as the cluster added them.
struct Replayed {
  MhcStepResult step;
  ProjectionSums sums;
};

Replayed replay_single_pass(const StepInputs& in, const SinglePass& pass) {
  const int64_t k = kStreams * in.hidden;
  Replayed out{
      {std::vector<uint16_t>(in.X.size(), kPoisonBf16), std::vector<uint16_t>(in.y.size(), kPoisonBf16),
       std::vector<float>(in.coeffs.size(), std::numeric_limits<float>::quiet_NaN())},
      ProjectionSums(static_cast<std::size_t>(in.tokens))};
  const int64_t tiles = (in.tokens + pass.tile_rows - 1) / pass.tile_rows;
  for (int64_t cluster = 0; cluster < pass.clusters; ++cluster) {
    std::vector<CtaImage> ctas;
    for (int rank = 0; rank < pass.ctas; ++rank) ctas.push_back(stage_cta(in, pass, rank));
    for (int64_t tile = cluster; tile < tiles; tile += pass.clusters) {
      const TileSpan span = tile_span(in.tokens, pass.tile_rows, tile);
      std::vector<ProjectionSums> posted;
      for (CtaImage& cta : ctas) {
        merge(in, span, cta, out.step.streams);
        const testing::ProjectionOperands operands{
            cta.tile.data(), pass.fn_staged ? cta.fn.data() : in.next.fn.data(),
            cta.stride,      pass.fn_staged ? cta.stride : k,
            span.rows,       cluster_slice_columns(in.hidden, pass.ctas, cta.rank)};
        posted.push_back(testing::replay_cta_projection<1>(operands, pass.warps));
      }
      float c[kClusterMaxTileRows][kCoefficients];
      for (int r = 0; r < span.rows; ++r) {
        auto& sums = out.sums[static_cast<std::size_t>(span.token0 + r)];
        sums.fill(0.0f);
        for (const ProjectionSums& part : posted) {  // in rank order, as every CTA adds them
          for (int i = 0; i < kProjectionSums; ++i) sums[i] += part[r][i];
        }
        // The one-thread form: the kernels' 16-lane form gives its bits (Mhc tests).
        mhc_coefficients_of(sums.data(), static_cast<float>(k), in.next.scales, c[r]);
        for (int j = 0; j < kCoefficients; ++j)
          out.step.next_coeffs[static_cast<std::size_t>((span.token0 + r) * kCoefficients + j)] = c[r][j];
      }
      for (CtaImage& cta : ctas) block_input(in, span, cta, c, out.step.next_input);
    }
  }
  return out;
}

// The merge bit for bit, the sums and coefficients to FP32's reach, and the
// input from the replay's own coefficients bit for bit; nothing left poisoned.
void expect_replay_matches_reference(const StepInputs& in, const Replayed& got) {
  const MhcStepResult want = mhc_step_reference(in.X, in.y, in.coeffs, in.next, in.tokens, in.hidden);
  ASSERT_EQ(got.step.streams, want.streams);
  testing::expect_sums_near(got.sums,
                            testing::whole_sums(want.streams, in.next.fn, in.tokens, kStreams * in.hidden));
  for (std::size_t i = 0; i < want.next_coeffs.size(); ++i)
    ASSERT_NEAR(got.step.next_coeffs[i], want.next_coeffs[i], 1e-4) << "coefficient " << i;
  EXPECT_EQ(got.step.next_input,
            mhc_pre_mix_reference(want.streams, got.step.next_coeffs, in.tokens, in.hidden));
}

// The three-kernel form's projection of the merged streams: a CTA a tile of
// 32 tokens and a split, its warps' steps and its place in the workspace as
// the kernel takes them, the splits added in order; then the coefficients.
Replayed replay_three_kernel_projection(const StepInputs& in, const std::vector<uint16_t>& streams,
                                        int splits) {
  const int64_t k = kStreams * in.hidden;
  std::vector<float> workspace(static_cast<std::size_t>(mhc_projection_workspace_floats(in.tokens, splits)),
                               std::numeric_limits<float>::quiet_NaN());
  for (int64_t tile = 0; tile * kProjectionTokens < in.tokens; ++tile) {
    const TileSpan span = tile_span(in.tokens, kProjectionTokens, tile);
    const testing::ProjectionOperands operands{
        streams.data() + span.token0 * k, in.next.fn.data(), k, k, span.rows, k};
    for (int split = 0; split < splits; ++split) {
      const ProjectionSums cta = testing::replay_cta_projection<kProjectionMTiles>(
          operands, kProjectionWarps,
          [&](int warp) { return projection_warp_steps(k, split, splits, warp); });
      for (int r = 0; r < span.rows; ++r) {
        for (int i = 0; i < kProjectionSums; ++i)
          workspace[static_cast<std::size_t>(projection_workspace_offset(split, in.tokens, span.token0) +
                                             r * kProjectionSums + i)] = cta[r][i];
      }
    }
  }
  Replayed out{{streams, {}, std::vector<float>(in.coeffs.size())},
               ProjectionSums(static_cast<std::size_t>(in.tokens))};
  for (int64_t t = 0; t < in.tokens; ++t) {
    auto& sums = out.sums[static_cast<std::size_t>(t)];
    sums.fill(0.0f);
    for (int split = 0; split < splits; ++split) {
      for (int i = 0; i < kProjectionSums; ++i)
        sums[i] += workspace[static_cast<std::size_t>(projection_workspace_offset(split, in.tokens, t) + i)];
    }
    mhc_coefficients_of(sums.data(), static_cast<float>(k), in.next.scales,
                        out.step.next_coeffs.data() + t * kCoefficients);
  }
  out.step.next_input = mhc_pre_mix_reference(streams, out.step.next_coeffs, in.tokens, in.hidden);
  return out;
}

void expect_pass_matches_reference(const StepInputs& in, const SinglePass& pass) {
  expect_replay_matches_reference(in, replay_single_pass(in, pass));
}

// Hidden sizes that do not divide evenly over the ranks (1000: 125 vectors a
// stream), a 16-CTA cluster with one or two vectors a rank (136), the last
// tile short, and fewer clusters than tiles, so a cluster walks several and
// its shared tile holds the previous tile's rows past a short one.
TEST(MhcSinglePassReplay, ClusterPassReproducesTheReference) {
  for (const int ctas : kClusterSizes) {
    for (const int64_t hidden : {1000, 136}) {
      SCOPED_TRACE(::testing::Message() << ctas << " CTAs, hidden " << hidden);
      expect_pass_matches_reference(random_step(13, hidden, 41), cluster_pass(ctas, 4, 3));
      expect_pass_matches_reference(random_step(3, hidden, 47),
                                    cluster_pass(ctas, 8, 2));  // a tile partly filled
    }
  }
}

TEST(MhcSinglePassReplay, TokenTilePassReproducesTheReference) {
  for (const int per_cta : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << per_cta << " tokens a CTA");
    expect_pass_matches_reference(random_step(7, 136, 53), token_tile_pass(per_cta, 7));
  }
}

// 37 tokens: a full tile of 32 and one of 5; 8, 24 or 40 warps a tile
// splitting 34 or 250 k16 steps (34 over 40 warps: some take none).
TEST(MhcThreeKernelReplay, SplitProjectionReproducesTheReference) {
  for (const int64_t hidden : {136, 1000}) {
    for (const int splits : {1, 3, 5}) {
      SCOPED_TRACE(::testing::Message() << "hidden " << hidden << ", " << splits << " splits");
      const StepInputs in = random_step(37, hidden, 61);
      const auto streams = mhc_post_merge_reference(in.X, in.y, in.coeffs, in.tokens, in.hidden);
      expect_replay_matches_reference(in, replay_three_kernel_projection(in, streams, splits));
    }
  }
}

// A cluster CTA's staged fn holds, at each slice column, fn's value at the
// column's place in the flattened streams; a tile row holds its slice of
// stream 0, then of stream 1 (the order the slice's columns count in).
TEST(MhcSinglePassReplay, StagedSlicesLieWhereTheProjectionReadsThem) {
  const StepInputs in = random_step(4, 136, 59);
  const SinglePass pass = cluster_pass(8, 4, 1);
  CtaImage cta = stage_cta(in, pass, 3);
  const VectorRange owned = cluster_vectors(in.hidden, 8, 3);
  for (int64_t column = 0; column < cluster_slice_columns(in.hidden, 8, 3); ++column) {
    for (int mix = 0; mix < kMixes; ++mix)
      ASSERT_EQ(cta.fn[static_cast<std::size_t>(mix * cta.stride + column)],
                in.next.fn[static_cast<std::size_t>(mix * kStreams * in.hidden +
                                                    cluster_flat_index(in.hidden, 8, 3, column))]);
  }
  // Row 2's stream 1, vector 0 of the slice: where column (stream 1, first value) of row 2 lies.
  const int64_t per_stream = (owned.end - owned.begin) * kStreamVector;
  EXPECT_EQ(&tile_value(cta, 2, 1, 0, 0), &cta.tile[static_cast<std::size_t>(2 * cta.stride + per_stream)]);
}

}  // namespace
}  // namespace v41sim::kernels

// The warpgroup-MMA W4A8 expert GEMM's logic on the CPU, CTA by CTA: every
// copy chunk placed in a stage image by the kernel's own index functions
// (expert_gemm_w4a8_wgmma_tiling.h; the rest poisoned), every weight chunk
// widened into the swizzled tile with its scale folded in, each wgmma step
// read through its descriptors as the hardware addresses them
// (wgmma_layout.h's read_address: atoms by the stride, bits 4-6 XORed with
// bits 7-9), the partial sums promoted by each thread's accumulator columns
// and written by its rows. It must reproduce the CPU reference, with partial
// m-tiles and group scales spanning 2^20 over rows and k-blocks. What this
// cannot show: the hardware's own reading of the descriptor, the cp.async
// and wgmma ordering and the barriers (the device check does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common/compare.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/common/wgmma_layout.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_wgmma_tiling.h"
#include "tests/kernels/device_check_support.h"
#include "tests/kernels/expert_operands.h"

namespace v41sim::kernels {
namespace {

using namespace w4a8;
using namespace w4a8::wgmma_tiles;

using Operands = testing::ExpertOperands;

// Group scales 2^-10..2^10 by row and k-block, and within a block's four
// groups up to 2^3 apart (the folding is exact up to 2^8).
Operands make_operands(const Problem& p) {
  return testing::make_expert_operands(p, 60, 70, [](int64_t row, int64_t col, int64_t e) {
    return static_cast<int>((row * 5 + (col / kBlockK) * 7 + e) % 21) - 10 +
           static_cast<int>((row + col / kWeightScaleGroup) % 4);
  });
}

std::vector<uint8_t> load_stage(const Operands& in, const Problem& p, const CtaOrigin& o, int64_t kb) {
  std::vector<uint8_t> stage(kStageBytes, 0xEE);  // poisoned: a read of what no copy wrote shows
  for (int c = 0; c < kActivationChunks; ++c) {
    const Copy copy = activation_copy(c, p, o, kb);
    for (int b = 0; b < kChunkBytes; ++b)
      stage[static_cast<std::size_t>(copy.smem + b)] =
          copy.valid ? in.activations[static_cast<std::size_t>(copy.global + b)] : 0;
  }
  for (int c = 0; c < kWeightChunks; ++c) {
    const Copy copy = weight_copy(c, p, o, kb);
    std::memcpy(&stage[static_cast<std::size_t>(copy.smem)],
                &in.packed[static_cast<std::size_t>(copy.global)], kChunkBytes);
  }
  for (int r = 0; r < kTileN; ++r) {
    const Copy copy = scale_copy(r, p, o, kb);
    std::memcpy(&stage[static_cast<std::size_t>(copy.smem)],
                &in.scales[static_cast<std::size_t>(copy.global)], kGroupsPerBlock);
  }
  return stage;
}

std::vector<uint8_t> widen_stage(const std::vector<uint8_t>& stage) {
  E2m1ToE4m3Table tables[kFoldingTables];
  for (int s = 0; s < kFoldingTables; ++s) tables[s] = e2m1_to_e4m3_table(s);
  std::vector<uint8_t> tile(kWeightTileBytes, 0xEE);
  std::vector<bool> written(kWeightTileBytes, false);
  for (int q = 0; q < kWidenedChunks; ++q) {
    const WidenedChunk chunk = widen_chunk(stage.data(), q, tables);
    for (int b = 0; b < kChunkBytes; ++b) {
      EXPECT_FALSE(written[static_cast<std::size_t>(chunk.tile_offset + b)]) << "chunk " << q << " overlaps";
      written[static_cast<std::size_t>(chunk.tile_offset + b)] = true;
      tile[static_cast<std::size_t>(chunk.tile_offset + b)] =
          static_cast<uint8_t>(chunk.words[b / 4] >> (8 * (b % 4)));
    }
  }
  return tile;
}

// One wgmma m64n128k32 as the hardware reads its operands: a and b images
// that start 1,024-aligned (address 0), descriptors at the given offsets.
void emulate_wgmma(float (&d)[wgmma::kM][kTileN], const std::vector<uint8_t>& a, uint32_t a_offset,
                   const std::vector<uint8_t>& b, uint32_t b_offset) {
  const uint64_t desc_a = wgmma::descriptor(a_offset), desc_b = wgmma::descriptor(b_offset);
  for (int row = 0; row < wgmma::kM; ++row) {
    for (int col = 0; col < kTileN; ++col) {
      float sum = 0;
      for (int byte = 0; byte < wgmma::kK; ++byte)
        sum += decode_e4m3(a[wgmma::read_address(desc_a, row, byte)]) *
               decode_e4m3(b[wgmma::read_address(desc_b, col, byte)]);
      d[row][col] += sum;
    }
  }
}

// One CTA as the kernel runs it, minus the pipelining.
void run_cta(const Operands& in, const Problem& p, const CtaOrigin& o, float scale, std::vector<float>& out) {
  static float acc[kWarpgroups][wgmma::kThreads][64];
  std::memset(acc, 0, sizeof acc);
  for (int64_t kb = 0; kb < p.k / kBlockK; ++kb) {
    const std::vector<uint8_t> stage = load_stage(in, p, o, kb);
    const std::vector<uint8_t> tile = widen_stage(stage);
    for (int wg = 0; wg < kWarpgroups; ++wg) {
      static float partial[wgmma::kM][kTileN];
      std::memset(partial, 0, sizeof partial);
      for (int step = 0; step < kStepsPerBlock; ++step) {
        emulate_wgmma(partial, stage,
                      static_cast<uint32_t>(wg * wgmma::kM * wgmma::kRowBytes + step * wgmma::kK), tile,
                      static_cast<uint32_t>(step * wgmma::kK));
      }
      for (int t = 0; t < wgmma::kThreads; ++t) {
        for (int i = 0; i < 64; ++i) {
          const int col = wgmma::accumulator_col(t, i);
          acc[wg][t][i] += partial[wgmma::accumulator_row(t, i)][col] * row_scale(stage.data(), col);
        }
      }
    }
  }
  for (int wg = 0; wg < kWarpgroups; ++wg) {
    for (int t = 0; t < wgmma::kThreads; ++t) {
      for (int i = 0; i < 64; ++i) {
        const int64_t row = o.row0 + wg * wgmma::kM + wgmma::accumulator_row(t, i);
        const int64_t col = o.n0 + wgmma::accumulator_col(t, i);
        if (row < p.m)
          out[static_cast<std::size_t>((o.expert * p.m + row) * p.n + col)] = acc[wg][t][i] * scale;
      }
    }
  }
}

TEST(ExpertGemmW4a8Wgmma, CtasReproduceTheReference) {
  const Problem p{2, 130, 2 * kTileN, 3 * kBlockK};  // a partial second m-tile, two n-tiles, three k-blocks
  const Operands in = make_operands(p);
  std::vector<float> out(static_cast<std::size_t>(p.experts * p.m * p.n), NAN);
  for (int64_t e = 0; e < p.experts; ++e) {
    for (int64_t row0 = 0; row0 < p.m; row0 += kTileM) {
      for (int64_t n0 = 0; n0 < p.n; n0 += kTileN) run_cta(in, p, {e, row0, n0}, 0.5f, out);
    }
  }
  EXPECT_LT(relative_norm_error(out, experts_gemm_reference(in.activations, 0.5f, p.m, in.weights)), 1e-5);
}

// The descriptors read what the copies and the widening wrote: byte b of row
// r at every k32 step, for both warpgroups' rows.
TEST(ExpertGemmW4a8Wgmma, DescriptorsReadTheSwizzledTiles) {
  for (int wg = 0; wg < kWarpgroups; ++wg) {
    for (int step = 0; step < kStepsPerBlock; ++step) {
      const uint32_t start = static_cast<uint32_t>(wg * wgmma::kM * wgmma::kRowBytes + step * wgmma::kK);
      const uint64_t desc = wgmma::descriptor(start);
      for (int row = 0; row < wgmma::kM; ++row) {
        for (int byte = 0; byte < wgmma::kK; ++byte) {
          ASSERT_EQ(wgmma::read_address(desc, row, byte), static_cast<uint32_t>(wgmma::swizzled_offset(
                                                              wg * wgmma::kM + row, step * wgmma::kK + byte)))
              << "warpgroup " << wg << " step " << step << " row " << row << " byte " << byte;
        }
      }
    }
  }
  EXPECT_EQ(kStageBytes % wgmma::kAtomBytes, 0);
  EXPECT_EQ(kWeightTilesOffset % wgmma::kAtomBytes, 0);
  EXPECT_EQ(kWeightTileBytes % wgmma::kAtomBytes, 0);
}

// A warpgroup's threads hold each of the 64 x 128 accumulators once, the
// pairs the epilogue stores together adjacent.
TEST(ExpertGemmW4a8Wgmma, AccumulatorsCoverTheTileOnce) {
  std::set<std::pair<int, int>> seen;
  for (int t = 0; t < wgmma::kThreads; ++t) {
    for (int i = 0; i < 64; ++i) {
      EXPECT_TRUE(seen.insert({wgmma::accumulator_row(t, i), wgmma::accumulator_col(t, i)}).second);
      if (i % 2 == 1) {
        EXPECT_EQ(wgmma::accumulator_col(t, i), wgmma::accumulator_col(t, i - 1) + 1);
        EXPECT_EQ(wgmma::accumulator_row(t, i), wgmma::accumulator_row(t, i - 1));
      }
    }
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(wgmma::kM * kTileN));
}

// Folding a group's scale into its FP8 values is exact up to 2^-8 and not
// beyond (0.5 x 2^-9 is under E4M3's smallest subnormal); shift 0 is the
// unscaled widening.
TEST(ExpertGemmW4a8Wgmma, FoldedScalesAreExactUpTo2ToThe8) {
  const E2m1ToE4m3Table plain = e2m1_to_e4m3_table(0);
  EXPECT_EQ(plain.low, kE2m1AsE4m3.low);
  EXPECT_EQ(plain.high, kE2m1AsE4m3.high);
  const auto exact = [](int shift) {
    const E2m1ToE4m3Table table = e2m1_to_e4m3_table(shift);
    for (int code = 0; code < 8; ++code) {
      const uint32_t word = code < 4 ? table.low : table.high;
      const auto byte = static_cast<uint8_t>(word >> (8 * (code % 4)));
      if (decode_e4m3(byte) != std::ldexp(e2m1_magnitude(static_cast<uint8_t>(code)), -shift)) return false;
    }
    return true;
  };
  for (int shift = 0; shift <= 8; ++shift) EXPECT_TRUE(exact(shift)) << "shift " << shift;
  EXPECT_FALSE(exact(9));
}

// The warp-specialized schedule's stage: every region 16-byte aligned, the
// operand tiles 1,024-aligned, none overlapping, all inside the stage.
TEST(ExpertGemmW4a8Wgmma, WarpSpecializedStagesHoldTheirTiles) {
  namespace ws = warp_specialized;
  const std::vector<std::pair<int, int>> regions{{0, kActivationBytes},
                                                 {kPackedOffset, kTileN * kPackedRowBytes},
                                                 {kScaleOffset, kTileN * kGroupsPerBlock},
                                                 {ws::kWeightTileOffset, kWeightTileBytes},
                                                 {ws::kRowScalesOffset, kTileN * 4}};
  for (std::size_t i = 0; i < regions.size(); ++i) {
    EXPECT_EQ(regions[i].first % 16, 0);
    EXPECT_LE(regions[i].first + regions[i].second, ws::kStageBytes);
    if (i > 0) {
      EXPECT_GE(regions[i].first, regions[i - 1].first + regions[i - 1].second);
    }
  }
  EXPECT_EQ(ws::kWeightTileOffset % wgmma::kAtomBytes, 0);
  EXPECT_EQ(ws::kStageBytes % wgmma::kAtomBytes, 0);
  EXPECT_EQ(ws::kBarriersOffset % 8, 0);
}

// On a GPU: the kernel itself against the reference (kernels/checks).
TEST(ExpertGemmW4a8WgmmaCuda, MatchesTheReference) {
  expect_sm90a_device_checks({"expert_gemm_w4a8_wgmma", "expert_gemm_w4a8_wgmma_ws"});
}

}  // namespace
}  // namespace v41sim::kernels

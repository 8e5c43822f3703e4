// The W4A8 expert GEMM's index arithmetic, replayed on the CPU: FP4 codes
// widened four at a time to E4M3 exactly, every lane's fragment loads (the
// functions the kernel calls, on the kernel's padded shared-memory strides)
// fed to an emulated mma.m16n8k32, and each k32 step promoted with its
// columns' group scales, reproduce the expert GEMM's CPU reference.
#include "kernels/common/mma_fragments_e4m3.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <utility>
#include <vector>

#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/gemm/expert_gemm.h"
#include "tests/kernels/mma_e4m3_emulation.h"

namespace v41sim::kernels {
namespace {

using mma::Lane;
using mma::lane_of;
using testing::byte_value;
using testing::emulate_mma_e4m3;

TEST(MmaFragmentsE4m3, WideningFourFp4CodesIsExact) {
  for (uint32_t nibbles = 0; nibbles < 0x10000; ++nibbles) {
    const uint32_t widened = widen_e2m1x4_to_e4m3x4(static_cast<uint16_t>(nibbles));
    for (int i = 0; i < 4; ++i) {
      const float want = decode_e2m1(static_cast<uint8_t>((nibbles >> (4 * i)) & 0xF));
      ASSERT_EQ(byte_value(widened, i), want) << "nibbles " << nibbles << " element " << i;
      ASSERT_EQ(std::signbit(byte_value(widened, i)), std::signbit(want)) << "nibbles " << nibbles;
    }
  }
}

TEST(MmaFragmentsE4m3, ByteSelectPicksBytesByNibble) {
  EXPECT_EQ(byte_select(0x33221100u, 0x77665544u, 0x7654u), 0x77665544u);
  EXPECT_EQ(byte_select(0x33221100u, 0x77665544u, 0x0123u), 0x00112233u);
  EXPECT_EQ(byte_select(0x33221100u, 0x77665544u, 0x4040u), 0x44004400u);
}

// PTX prmt's default mode: bit 3 of a selector nibble replicates the picked
// byte's sign bit; without it the byte is copied as byte_select does.
TEST(MmaFragmentsE4m3, BytePermuteReplicatesSignsWhereAsked) {
  EXPECT_EQ(byte_permute(0x33221100u, 0x77665544u, 0x7654u), 0x77665544u);
  EXPECT_EQ(byte_permute(0x80FF7F01u, 0x00000000u, 0xBA98u), 0xFFFF0000u);
  EXPECT_EQ(byte_permute(0x80FF7F01u, 0x00000000u, 0x3210u), 0x80FF7F01u);
  EXPECT_EQ(byte_permute(0x00000000u, 0x000080FFu, 0x4C5Du), 0xFFFF80FFu);
}

TEST(MmaFragmentsE4m3, E8m0ValueMatchesTheCodec) {
  for (int code = 0; code < 255; ++code) {
    EXPECT_EQ(e8m0_value(static_cast<uint8_t>(code)), decode_e8m0(static_cast<uint8_t>(code))) << code;
  }
  EXPECT_TRUE(std::isnan(e8m0_value(0xFF)));
}

TEST(MmaFragmentsE4m3, EachLaneOwnsDistinctElementsCoveringTheTiles) {
  std::set<std::pair<int, int>> a, b;
  for (int lane = 0; lane < 32; ++lane) {
    const Lane l = lane_of(lane);
    for (int r = 0; r < 4; ++r) {
      for (int i = 0; i < 4; ++i) a.insert({mma::e4m3::a_row(l, r), mma::e4m3::a_k(l, r) + i});
    }
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < 4; ++i) b.insert({mma::e4m3::b_k(l, r) + i, mma::e4m3::b_n(l)});
    }
  }
  EXPECT_EQ(a.size(), 512u);  // 16 x 32, each once
  EXPECT_EQ(b.size(), 256u);  // 32 x 8
  EXPECT_EQ(a.rbegin()->first, 15);
  EXPECT_EQ(b.rbegin()->first, 31);
}

// A warp's 16 x 8 block at (row0, n0) over k = 128 (four scale groups), from
// tiles laid out as the kernel's shared memory is: activation rows of 144
// bytes, packed weight rows of 80, four scale codes per weight row; padding
// bytes poisoned. Group scales span 2^20 across rows and groups.
TEST(MmaFragmentsE4m3, PromotedStepsReproduceTheExpertGemm) {
  constexpr int kRows = 32, kWeightRows = 16, kK = 128, kAStride = kK + 16, kWStride = kK / 2 + 16;
  constexpr int kGroups = kK / kWeightScaleGroup;
  std::vector<float> values = normal_values(kWeightRows * kK, 7);
  for (int i = 0; i < kWeightRows * kK; ++i)
    values[i] *= std::ldexp(1.0f, ((i / kK) * 5 + (i % kK) / kWeightScaleGroup * 7) % 21 - 10);
  const ExpertWeights w = quantize_expert_weights(values, kWeightRows, kK);
  std::vector<uint8_t> a;
  for (float v : normal_values(kRows * kK, 8)) a.push_back(encode_e4m3(v));
  const std::vector<float> want = expert_gemm_reference(a, 1.0f, kRows, w);

  std::vector<uint8_t> a_tile(kRows * kAStride, 0xFF), w_tile(kWeightRows * kWStride, 0xFF);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kK; ++c) a_tile[r * kAStride + c] = a[r * kK + c];
  }
  for (int r = 0; r < kWeightRows; ++r) {
    for (int c = 0; c < kK / 2; ++c) w_tile[r * kWStride + c] = w.packed[r * kK / 2 + c];
  }
  for (const auto& [row0, n0] : {std::pair{0, 0}, std::pair{16, 8}}) {
    float acc[32][4] = {};
    for (int group = 0; group < kGroups; ++group) {
      const int k0 = group * mma::e4m3::kK;
      uint32_t fa[32][4], fb[32][2];
      for (int lane = 0; lane < 32; ++lane) {
        for (int r = 0; r < 4; ++r)
          fa[lane][r] = mma::e4m3::load_a(a_tile.data(), kAStride, row0, k0, lane_of(lane), r);
        for (int r = 0; r < 2; ++r)
          fb[lane][r] = mma::e4m3::load_b_e2m1(w_tile.data(), kWStride, n0, k0, lane_of(lane), r);
      }
      float partial[32][4];
      emulate_mma_e4m3(partial, fa, fb);
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 4; ++i)
          acc[lane][i] +=
              partial[lane][i] * mma::e4m3::c_scale(w.scales.data(), kGroups, n0, group, lane_of(lane), i);
      }
    }
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 4; ++i) {
        const int row = row0 + mma::c_row(lane_of(lane), i), col = n0 + mma::c_col(lane_of(lane), i);
        const float expected = want[row * kWeightRows + col];
        EXPECT_NEAR(acc[lane][i], expected, 1e-5f * std::fmax(1.0f, std::fabs(expected)))
            << "row " << row << " column " << col;
      }
    }
  }
}

}  // namespace
}  // namespace v41sim::kernels

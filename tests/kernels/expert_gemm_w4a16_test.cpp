// The W4A16 expert GEMM kernel's logic run on the CPU, CTA by CTA: every copy
// chunk of every stage placed in a shared-memory image by the kernel's own
// index functions (expert_gemm_w4a8_tiling.h, two bytes an activation;
// padding poisoned), every warp's fragments loaded by expert_gemm_w4a16_tiling.h
// (A in k order 4p..4p+3, B widened to BF16 with its group scale) and fed to
// an emulated mma.m16n8k16, and written out by the kernel's epilogue
// arithmetic. Each tiling must reproduce the W4A16 reference, with partial
// m-tiles and group scales spanning 2^20. What this cannot show: the cp.async
// ordering and barriers (the device check does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/bf16_values.h"
#include "kernels/common/compare.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a16_tiling.h"
#include "tests/kernels/expert_cta_replay.h"
#include "tests/kernels/mma_bf16_emulation.h"

namespace v41sim::kernels {
namespace {

using namespace w4a16;

struct Operands {
  std::vector<uint16_t> activations;
  std::vector<uint8_t> packed, scales;
  std::vector<ExpertWeights> weights;
};

Operands make_operands(const Problem& p) {
  Operands o;
  o.weights = scaled_expert_weights(p.experts, p.n, p.k, 30, [](int64_t row, int64_t col, int64_t e) {
    return static_cast<int>((row * 5 + (col / kWeightScaleGroup) * 7 + e) % 21) - 10;
  });
  for (const ExpertWeights& w : o.weights) {
    o.packed.insert(o.packed.end(), w.packed.begin(), w.packed.end());
    o.scales.insert(o.scales.end(), w.scales.begin(), w.scales.end());
  }
  o.activations = to_bf16_values(normal_values(static_cast<std::size_t>(p.experts * p.m * p.k), 40));
  return o;
}

// One CTA of tiling T, as the kernel runs it, minus the pipelining.
template <class T>
void run_cta(const Operands& in, const Problem& p, const CtaOrigin& o, std::vector<float>& out) {
  static testing::CtaAccumulators<T> acc;
  std::memset(acc, 0, sizeof acc);
  const auto* activations = reinterpret_cast<const uint8_t*>(in.activations.data());
  for (int64_t kb = 0; kb < p.k / kBlockK; ++kb) {
    // Padding poisoned with BF16 NaNs: a fragment that reads it shows.
    const std::vector<uint8_t> stage =
        testing::stage_image<T>(activations, in.packed.data(), in.scales.data(), p, o, kb, 0xFF);
    const uint8_t* w_s = stage.data() + T::a_bytes;
    const uint8_t* s_s = w_s + T::w_bytes;
    for (int warp = 0; warp < T::warps; ++warp) {
      for (int step = 0; step < kStepsPerBlock; ++step) {
        const int k0 = step * mma::kK;
        for (int mt = 0; mt < T::tiles_m; ++mt) {
          for (int nt = 0; nt < T::tiles_n; ++nt) {
            uint32_t a[32][4], b[32][2];
            for (int lane = 0; lane < 32; ++lane) {
              load_a(stage.data(), T::a_stride, tile_row<T>(warp, mt), k0, mma::lane_of(lane), a[lane]);
              load_b(w_s, T::w_stride, s_s, tile_col<T>(warp, nt), k0, mma::lane_of(lane), b[lane]);
            }
            testing::emulate_mma_bf16(acc[warp][mt][nt], a, b);
          }
        }
      }
    }
  }
  testing::write_outputs<T>(acc, p, o, 1.0f, out);
}

// The kernel's grid: m-tiles x weight-row tiles x experts.
template <class T>
void expect_tiling_reproduces_the_reference(int64_t m) {
  const Problem p{2, m, 128, 384};
  const Operands in = make_operands(p);
  std::vector<float> out(static_cast<std::size_t>(p.experts * p.m * p.n), NAN);
  testing::replay_grid<T>(p, [&](const CtaOrigin& o) { run_cta<T>(in, p, o, out); });
  EXPECT_LT(relative_norm_error(out, experts_gemm_w4a16_reference(in.activations, p.m, in.weights)), 1e-5)
      << "m " << m;
}

TEST(ExpertGemmW4a16, SixteenRowTilingReproducesTheReference) {
  expect_tiling_reproduces_the_reference<Rows16>(5);
}
TEST(ExpertGemmW4a16, SixtyFourRowTilingReproducesTheReference) {
  expect_tiling_reproduces_the_reference<Rows64>(20);
}
TEST(ExpertGemmW4a16, SixtyFourRowTilesCoverMoreRows) {
  expect_tiling_reproduces_the_reference<Rows64>(130);  // three m-tiles, the last nearly empty
}

// The launch's tile: 16 rows up to 16, else 64 (more rows take several m-tiles).
TEST(ExpertGemmW4a16, BlockRowsFollowTheExpertsRows) {
  EXPECT_EQ(block_rows(1), 16);
  EXPECT_EQ(block_rows(16), 16);
  EXPECT_EQ(block_rows(17), 64);
  EXPECT_EQ(block_rows(4096), 64);
}

// Every byte of a stage is written by exactly one copy, except the padding:
// two bytes an activation.
TEST(ExpertGemmW4a16, CopiesCoverEachStageOnce) {
  testing::expect_copies_cover_each_stage_once<Rows64>({1, 64, 128, 256});
  testing::expect_copies_cover_each_stage_once<Rows16>({1, 16, 128, 256});
}

// The scale as BF16 is the E8M0 value itself, 2^-127 (a subnormal) included.
TEST(ExpertGemmW4a16, E8m0AsBf16KeepsTheValue) {
  for (int code = 0; code < 255; ++code)
    EXPECT_EQ(bf16_value(static_cast<uint16_t>(e8m0_as_bf16(static_cast<uint8_t>(code)))),
              decode_e8m0(static_cast<uint8_t>(code)))
        << code;
  EXPECT_TRUE(std::isnan(bf16_value(static_cast<uint16_t>(e8m0_as_bf16(0xFF)))));
}

// The W4A16 reference is BF16 activations times the decoded FP4 weights.
TEST(ExpertGemmW4a16, ReferenceMultipliesTheDecodedWeights) {
  const std::vector<ExpertWeights> w =
      scaled_expert_weights(1, 2, 32, 7, [](int64_t, int64_t, int64_t) { return 0; });
  std::vector<uint16_t> a(32, bf16_bits(0.0f));
  a[3] = bf16_bits(2.0f);
  a[31] = bf16_bits(-0.5f);
  const std::vector<float> d = experts_gemm_w4a16_reference(a, 1, w);
  ASSERT_EQ(d.size(), 2u);
  for (int64_t j = 0; j < 2; ++j) {
    EXPECT_FLOAT_EQ(d[static_cast<std::size_t>(j)],
                    2.0f * expert_weight_value(w[0], j, 3) - 0.5f * expert_weight_value(w[0], j, 31));
  }
}

}  // namespace
}  // namespace v41sim::kernels

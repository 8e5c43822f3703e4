// The W4A8 expert GEMM kernel's logic run on the CPU, CTA by CTA: every copy
// chunk of every stage placed in a shared-memory image by the kernel's own
// index functions (expert_gemm_w4a8_tiling.h; padding poisoned), every
// warp's fragments loaded, widened and fed to an emulated mma.m16n8k32,
// promoted with the group scales, and written out by the kernel's epilogue
// arithmetic. Each tiling must reproduce the expert GEMM's CPU reference,
// with partial m-tiles and group scales spanning 2^20. What this cannot show:
// the cp.async ordering and barriers (the device check does).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/compare.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"
#include "tests/kernels/expert_cta_replay.h"
#include "tests/kernels/expert_operands.h"
#include "tests/kernels/mma_e4m3_emulation.h"

namespace v41sim::kernels {
namespace {

using namespace w4a8;

using Operands = testing::ExpertOperands;

Operands make_operands(const Problem& p) {
  return testing::make_expert_operands(p, 30, 40, [](int64_t row, int64_t col, int64_t e) {
    return static_cast<int>((row * 5 + (col / kWeightScaleGroup) * 7 + e) % 21) - 10;
  });
}

// One CTA of tiling T, as the kernel runs it, minus the pipelining.
template <class T>
void run_cta(const Operands& in, const Problem& p, const CtaOrigin& o, float scale, std::vector<float>& out) {
  static testing::CtaAccumulators<T> acc;
  std::memset(acc, 0, sizeof acc);
  for (int64_t kb = 0; kb < p.k / kBlockK; ++kb) {
    // Padding poisoned: a fragment that reads it shows.
    const std::vector<uint8_t> stage =
        testing::stage_image<T>(in.activations.data(), in.packed.data(), in.scales.data(), p, o, kb, 0xEE);
    const uint8_t* w_s = stage.data() + T::a_bytes;
    const uint8_t* s_s = w_s + T::w_bytes;
    for (int warp = 0; warp < T::warps; ++warp) {
      for (int group = 0; group < kGroupsPerBlock; ++group) {
        const int k0 = group * mma::e4m3::kK;
        for (int mt = 0; mt < T::tiles_m; ++mt) {
          for (int nt = 0; nt < T::tiles_n; ++nt) {
            uint32_t a[32][4], b[32][2];
            for (int lane = 0; lane < 32; ++lane) {
              for (int r = 0; r < 4; ++r)
                a[lane][r] = mma::e4m3::load_a(stage.data(), T::a_stride, tile_row<T>(warp, mt), k0,
                                               mma::lane_of(lane), r);
              for (int r = 0; r < 2; ++r)
                b[lane][r] = mma::e4m3::load_b_e2m1(w_s, T::w_stride, tile_col<T>(warp, nt), k0,
                                                    mma::lane_of(lane), r);
            }
            float partial[32][4];
            testing::emulate_mma_e4m3(partial, a, b);
            for (int lane = 0; lane < 32; ++lane) {
              for (int i = 0; i < 4; ++i) {
                acc[warp][mt][nt][lane][i] +=
                    partial[lane][i] * mma::e4m3::c_scale(s_s, kGroupsPerBlock, tile_col<T>(warp, nt), group,
                                                          mma::lane_of(lane), i);
              }
            }
          }
        }
      }
    }
  }
  testing::write_outputs<T>(acc, p, o, scale, out);
}

// The kernel's grid: m-tiles x weight-row tiles x experts.
template <class T>
void expect_tiling_reproduces_the_reference(int64_t m) {
  const Problem p{2, m, 128, 384};
  const Operands in = make_operands(p);
  std::vector<float> out(static_cast<std::size_t>(p.experts * p.m * p.n), NAN);
  testing::replay_grid<T>(p, [&](const CtaOrigin& o) { run_cta<T>(in, p, o, 0.5f, out); });
  EXPECT_LT(relative_norm_error(out, experts_gemm_reference(in.activations, 0.5f, p.m, in.weights)), 1e-5)
      << "m " << m;
}

TEST(ExpertGemmW4a8, SixteenRowTilingReproducesTheReference) {
  expect_tiling_reproduces_the_reference<Rows16>(5);
}
TEST(ExpertGemmW4a8, SixtyFourRowTilingReproducesTheReference) {
  expect_tiling_reproduces_the_reference<Rows64>(20);
}
TEST(ExpertGemmW4a8, HundredTwentyEightRowTilingReproducesTheReference) {
  expect_tiling_reproduces_the_reference<Rows128>(130);  // two m-tiles, the second nearly empty
}

// Every byte of a stage is written by exactly one copy, except the padding.
TEST(ExpertGemmW4a8, CopiesCoverEachStageOnce) {
  testing::expect_copies_cover_each_stage_once<Rows128>({1, 128, 128, 256});
}

}  // namespace
}  // namespace v41sim::kernels

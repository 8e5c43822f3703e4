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
  static float acc[T::warps][T::tiles_m][T::tiles_n][32][4];
  std::memset(acc, 0, sizeof acc);
  std::vector<uint8_t> stage(T::stage_bytes);
  for (int64_t kb = 0; kb < p.k / kBlockK; ++kb) {
    std::fill(stage.begin(), stage.end(), 0xEE);  // padding poisoned: a fragment that reads it shows
    for (int c = 0; c < T::a_chunks; ++c) {
      const Copy copy = activation_copy<T>(c, p, o, kb);
      for (int b = 0; b < kChunkBytes; ++b)
        stage[copy.smem + b] = copy.valid ? in.activations[static_cast<std::size_t>(copy.global + b)] : 0;
    }
    for (int c = 0; c < T::w_chunks; ++c) {
      const Copy copy = weight_copy<T>(c, p, o, kb);
      std::memcpy(&stage[copy.smem], &in.packed[static_cast<std::size_t>(copy.global)], kChunkBytes);
    }
    for (int c = 0; c < T::s_chunks; ++c) {
      const Copy copy = scale_copy<T>(c, p, o, kb);
      std::memcpy(&stage[copy.smem], &in.scales[static_cast<std::size_t>(copy.global)], 4);
    }
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
  for (int warp = 0; warp < T::warps; ++warp) {
    for (int mt = 0; mt < T::tiles_m; ++mt) {
      for (int nt = 0; nt < T::tiles_n; ++nt) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < 4; ++i) {
            const int64_t row = o.row0 + tile_row<T>(warp, mt) + mma::c_row(mma::lane_of(lane), i);
            const int64_t col = o.n0 + tile_col<T>(warp, nt) + mma::c_col(mma::lane_of(lane), i);
            if (row < p.m)
              out[static_cast<std::size_t>((o.expert * p.m + row) * p.n + col)] =
                  acc[warp][mt][nt][lane][i] * scale;
          }
        }
      }
    }
  }
}

// The kernel's grid: m-tiles x weight-row tiles x experts.
template <class T>
void expect_tiling_reproduces_the_reference(int64_t m) {
  const Problem p{2, m, 128, 384};
  const Operands in = make_operands(p);
  std::vector<float> out(static_cast<std::size_t>(p.experts * p.m * p.n), NAN);
  for (int64_t e = 0; e < p.experts; ++e) {
    for (int64_t row0 = 0; row0 < p.m; row0 += T::block_m) {
      for (int64_t n0 = 0; n0 < p.n; n0 += kBlockN) run_cta<T>(in, p, {e, row0, n0}, 0.5f, out);
    }
  }
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
  const Problem p{1, 128, 128, 256};
  std::vector<int> writes(Rows128::stage_bytes, 0);
  for (int c = 0; c < Rows128::a_chunks; ++c) {
    const Copy copy = activation_copy<Rows128>(c, p, {0, 0, 0}, 1);
    for (int b = 0; b < kChunkBytes; ++b) ++writes[static_cast<std::size_t>(copy.smem + b)];
  }
  for (int c = 0; c < Rows128::w_chunks; ++c) {
    const Copy copy = weight_copy<Rows128>(c, p, {0, 0, 0}, 1);
    for (int b = 0; b < kChunkBytes; ++b) ++writes[static_cast<std::size_t>(copy.smem + b)];
  }
  for (int c = 0; c < Rows128::s_chunks; ++c) {
    const Copy copy = scale_copy<Rows128>(c, p, {0, 0, 0}, 1);
    for (int b = 0; b < 4; ++b) ++writes[static_cast<std::size_t>(copy.smem + b)];
  }
  int once = 0;
  for (int w : writes) {
    EXPECT_LE(w, 1);
    once += w;
  }
  EXPECT_EQ(once, Rows128::block_m * kBlockK + kBlockN * kBlockK / 2 + kBlockN * kGroupsPerBlock);
}

}  // namespace
}  // namespace v41sim::kernels

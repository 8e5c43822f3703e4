// What the CPU replays of the mma.sync expert GEMMs (W4A8, W4A16) share: a
// stage as a CTA's copies fill it (every chunk placed in a shared-memory image
// by the tiling's own index functions, expert_gemm_w4a8_tiling.h, the padding
// poisoned), the check that the copies write every byte of a stage once, the
// launch's grid, and the epilogue's writes of a CTA's accumulators.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/mma_fragments.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"

namespace v41sim::kernels::testing {

// Every lane's four accumulators of every mma tile of every warp of a CTA.
template <class T>
using CtaAccumulators = float[T::warps][T::tiles_m][T::tiles_n][32][4];

// The kernel's grid: cta(origin) for every m-tile, weight-row tile and expert.
template <class T, class Cta>
void replay_grid(const w4a8::Problem& p, Cta cta) {
  for (int64_t e = 0; e < p.experts; ++e) {
    for (int64_t row0 = 0; row0 < p.m; row0 += T::block_m) {
      for (int64_t n0 = 0; n0 < p.n; n0 += w4a8::kBlockN) cta(w4a8::CtaOrigin{e, row0, n0});
    }
  }
}

// The epilogue: each accumulator of a row below m, times scale, to its output.
template <class T>
void write_outputs(const CtaAccumulators<T>& acc, const w4a8::Problem& p, const w4a8::CtaOrigin& o,
                   float scale, std::vector<float>& out) {
  for (int warp = 0; warp < T::warps; ++warp) {
    for (int mt = 0; mt < T::tiles_m; ++mt) {
      for (int nt = 0; nt < T::tiles_n; ++nt) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int i = 0; i < 4; ++i) {
            const int64_t row = o.row0 + w4a8::tile_row<T>(warp, mt) + mma::c_row(mma::lane_of(lane), i);
            const int64_t col = o.n0 + w4a8::tile_col<T>(warp, nt) + mma::c_col(mma::lane_of(lane), i);
            if (row < p.m)
              out[static_cast<std::size_t>((o.expert * p.m + row) * p.n + col)] =
                  acc[warp][mt][nt][lane][i] * scale;
          }
        }
      }
    }
  }
}

// Stage kb of the CTA at o: activations as bytes (T::activation_bytes a
// value; rows past m zero-filled), packed weights and scales as the kernels
// read them; `poison` everywhere no copy writes.
template <class T>
std::vector<uint8_t> stage_image(const uint8_t* activations, const uint8_t* packed, const uint8_t* scales,
                                 const w4a8::Problem& p, const w4a8::CtaOrigin& o, int64_t kb,
                                 uint8_t poison) {
  std::vector<uint8_t> stage(T::stage_bytes, poison);
  for (int c = 0; c < T::a_chunks; ++c) {
    const w4a8::Copy copy = w4a8::activation_copy<T>(c, p, o, kb);
    for (int b = 0; b < w4a8::kChunkBytes; ++b)
      stage[static_cast<std::size_t>(copy.smem + b)] = copy.valid ? activations[copy.global + b] : 0;
  }
  for (int c = 0; c < T::w_chunks; ++c) {
    const w4a8::Copy copy = w4a8::weight_copy<T>(c, p, o, kb);
    std::memcpy(&stage[static_cast<std::size_t>(copy.smem)], packed + copy.global, w4a8::kChunkBytes);
  }
  for (int c = 0; c < T::s_chunks; ++c) {
    const w4a8::Copy copy = w4a8::scale_copy<T>(c, p, o, kb);
    std::memcpy(&stage[static_cast<std::size_t>(copy.smem)], scales + copy.global, 4);
  }
  return stage;
}

// Every byte of a stage is written by exactly one copy, except the padding:
// the activations' bytes, the packed weights' and the scales'.
template <class T>
void expect_copies_cover_each_stage_once(const w4a8::Problem& p) {
  std::vector<int> writes(T::stage_bytes, 0);
  for (int c = 0; c < T::a_chunks; ++c) {
    const w4a8::Copy copy = w4a8::activation_copy<T>(c, p, {0, 0, 0}, 1);
    EXPECT_EQ(copy.global % T::activation_bytes, 0);
    for (int b = 0; b < w4a8::kChunkBytes; ++b) ++writes[static_cast<std::size_t>(copy.smem + b)];
  }
  for (int c = 0; c < T::w_chunks; ++c) {
    const w4a8::Copy copy = w4a8::weight_copy<T>(c, p, {0, 0, 0}, 1);
    for (int b = 0; b < w4a8::kChunkBytes; ++b) ++writes[static_cast<std::size_t>(copy.smem + b)];
  }
  for (int c = 0; c < T::s_chunks; ++c) {
    const w4a8::Copy copy = w4a8::scale_copy<T>(c, p, {0, 0, 0}, 1);
    for (int b = 0; b < 4; ++b) ++writes[static_cast<std::size_t>(copy.smem + b)];
  }
  int once = 0;
  for (int w : writes) {
    EXPECT_LE(w, 1);
    once += w;
  }
  EXPECT_EQ(once, T::block_m * T::a_row_bytes + w4a8::kBlockN * w4a8::kBlockK / 2 +
                      w4a8::kBlockN * w4a8::kGroupsPerBlock);
}

}  // namespace v41sim::kernels::testing

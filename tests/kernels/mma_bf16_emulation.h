// A warp's mma.sync.m16n8k16 with BF16 operands, emulated on the CPU from
// the 32 lanes' registers (fragment layout: mma_fragments.h), for the tests
// that replay the kernels' loads.
#pragma once

#include <cstdint>

#include "kernels/common/mma_fragments.h"

namespace v41sim::kernels::testing {

inline constexpr int kLanes = 32;                // a warp's
inline constexpr uint16_t kPoisonBf16 = 0xFFFF;  // a BF16 NaN: what a replay's images start as

// Accumulates d += A x B from every lane's A (4 registers) and B (2).
inline void emulate_mma_bf16(float (&d)[kLanes][4], const uint32_t (&a)[kLanes][4],
                             const uint32_t (&b)[kLanes][2]) {
  float A[16][16] = {}, B[16][8] = {};
  for (int lane = 0; lane < kLanes; ++lane) {
    const mma::Lane l = mma::lane_of(lane);
    for (int r = 0; r < 4; ++r) {
      A[mma::a_row(l, r)][mma::a_col(l, r)] = mma::from_bf16(static_cast<uint16_t>(a[lane][r] & 0xFFFF));
      A[mma::a_row(l, r)][mma::a_col(l, r) + 1] = mma::from_bf16(static_cast<uint16_t>(a[lane][r] >> 16));
    }
    for (int r = 0; r < 2; ++r) {
      B[mma::b_k(l, r)][mma::b_n(l)] = mma::from_bf16(static_cast<uint16_t>(b[lane][r] & 0xFFFF));
      B[mma::b_k(l, r) + 1][mma::b_n(l)] = mma::from_bf16(static_cast<uint16_t>(b[lane][r] >> 16));
    }
  }
  for (int lane = 0; lane < kLanes; ++lane) {
    const mma::Lane l = mma::lane_of(lane);
    for (int i = 0; i < 4; ++i) {
      for (int k = 0; k < 16; ++k) d[lane][i] += A[mma::c_row(l, i)][k] * B[k][mma::c_col(l, i)];
    }
  }
}

// A warp's d += A x B with every lane's registers loaded as the kernel loads
// them: load_a(lane, reg) for A's 4 registers, load_b(lane, reg) for B's 2.
template <typename LoadA, typename LoadB>
void emulate_warp_mma(float (&d)[kLanes][4], LoadA load_a, LoadB load_b) {
  uint32_t a[kLanes][4], b[kLanes][2];
  for (int lane = 0; lane < kLanes; ++lane) {
    for (int r = 0; r < 4; ++r) a[lane][r] = load_a(mma::lane_of(lane), r);
    for (int r = 0; r < 2; ++r) b[lane][r] = load_b(mma::lane_of(lane), r);
  }
  emulate_mma_bf16(d, a, b);
}

}  // namespace v41sim::kernels::testing

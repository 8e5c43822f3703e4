// A warp's mma.sync.m16n8k32 with E4M3 operands, emulated on the CPU from
// the 32 lanes' registers (fragment layout: mma_fragments_e4m3.h), for the
// tests that replay the kernels' loads.
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"
#include "kernels/common/mma_fragments_e4m3.h"

namespace v41sim::kernels::testing {

inline float byte_value(uint32_t reg, int i) {
  return decode_e4m3(static_cast<uint8_t>((reg >> (8 * i)) & 0xFF));
}

// Fresh accumulators d = A x B from every lane's A (4 registers) and B (2).
inline void emulate_mma_e4m3(float (&d)[32][4], const uint32_t (&a)[32][4], const uint32_t (&b)[32][2]) {
  float A[16][32] = {}, B[32][8] = {};
  for (int lane = 0; lane < 32; ++lane) {
    const mma::Lane l = mma::lane_of(lane);
    for (int r = 0; r < 4; ++r) {
      for (int i = 0; i < 4; ++i)
        A[mma::e4m3::a_row(l, r)][mma::e4m3::a_k(l, r) + i] = byte_value(a[lane][r], i);
    }
    for (int r = 0; r < 2; ++r) {
      for (int i = 0; i < 4; ++i) B[mma::e4m3::b_k(l, r) + i][mma::e4m3::b_n(l)] = byte_value(b[lane][r], i);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const mma::Lane l = mma::lane_of(lane);
    for (int i = 0; i < 4; ++i) {
      d[lane][i] = 0;
      for (int k = 0; k < 32; ++k) d[lane][i] += A[mma::c_row(l, i)][k] * B[k][mma::c_col(l, i)];
    }
  }
}

}  // namespace v41sim::kernels::testing

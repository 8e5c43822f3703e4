// Warp-level tiles for mma.sync.m16n8k32 with FP8 E4M3 operands and FP32
// accumulators (sm_89 and later), as plain index arithmetic shared by the
// expert GEMM kernel and the CPU test that replays every lane's loads.
//
// Fragment ownership (PTX ISA, "Matrix fragments for mma.m16n8k32", 8-bit
// types): a lane's group = lane / 4 picks a row of A and C or a column of B;
// its quad = lane % 4 picks four adjacent k of A and B.
//   A (16 x 32, row-major), registers 0..3: rows g, g+8, g, g+8; k 4q, 4q, 4q+16, 4q+16 (and +1, +2, +3)
//   B (32 x 8, k x n),      registers 0..1: k 4q and 4q+16 (and +1, +2, +3); n g
//   C (16 x 8): as for m16n8k16 (mma::c_row, mma::c_col)
// Byte i of a register holds the element at k + i. (Calls inside name the
// namespace: Lane lives in mma, so lookup also finds the BF16 functions.)
//
// A dot product does not depend on the order of its k terms, so the result is
// right under any k assignment shared by A and B; the rows of A and C and the
// columns of B and C are what must match the hardware.
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"
#include "kernels/common/host_device.h"
#include "kernels/common/mma_fragments.h"

namespace v41sim::kernels::mma::e4m3 {

inline constexpr int kK = 32;

V41_HD int a_row(Lane l, int reg) { return l.group + (reg & 1) * 8; }
V41_HD int a_k(Lane l, int reg) { return l.pair * 4 + (reg >> 1) * 16; }
V41_HD int b_k(Lane l, int reg) { return l.pair * 4 + reg * 16; }
V41_HD int b_n(Lane l) { return l.group; }

// Two bytes adjacent in memory (2-byte aligned).
V41_HD uint16_t load_pair_bytes(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
#endif
}

// A from a row-major (rows x k) E4M3 tile, the 16 x 32 block at (row0, k0)
// (4-byte aligned: k0 and a_k are multiples of 4, the stride too).
V41_HD uint32_t load_a(const uint8_t* tile, int stride, int row0, int k0, Lane l, int reg) {
  return load_word(tile + (row0 + e4m3::a_row(l, reg)) * stride + k0 + e4m3::a_k(l, reg));
}

// B (k x n) from packed E2M1 weights stored n-major (n rows of k/2 bytes, low
// nibble first): the four codes at k, k+1, k+2, k+3 are two bytes, widened
// to E4M3 in registers. k0 and b_k are multiples of 4, so the bytes are 2-aligned.
V41_HD uint32_t load_b_e2m1(const uint8_t* packed_tile, int stride, int n0, int k0, Lane l, int reg) {
  return widen_e2m1x4_to_e4m3x4(
      load_pair_bytes(packed_tile + (n0 + e4m3::b_n(l)) * stride + (k0 + e4m3::b_k(l, reg)) / 2));
}

// The E8M0 scale of accumulator i's column (weight row n0 + c_col) for the
// scale group of the k32 step: scale_tile holds stride codes per weight row.
V41_HD float c_scale(const uint8_t* scale_tile, int stride, int n0, int group, Lane l, int i) {
  return e8m0_value(scale_tile[(n0 + c_col(l, i)) * stride + group]);
}

}  // namespace v41sim::kernels::mma::e4m3

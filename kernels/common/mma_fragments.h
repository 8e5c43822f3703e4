// Warp-level tensor-core tiles for mma.sync.m16n8k16 (BF16 operands, FP32
// accumulators) written as plain index arithmetic, so the CUDA kernel and a
// CPU test that replays every lane's loads use one definition.
//
// Fragment ownership (PTX ISA, "Matrix fragments for mma.m16n8k16" with
// .bf16): a lane's group = lane / 4 picks a row of A and C or a column of B;
// its pair = lane % 4 picks two adjacent columns of A and C or rows of B.
//   A (16 x 16, row-major), registers 0..3: rows g, g+8, g, g+8; cols 2p, 2p, 2p+8, 2p+8 (and +1)
//   B (16 x 8, k x n),      registers 0..1: k 2p and 2p+8 (and +1); n g
//   C (16 x 8),             values 0..3:   rows g, g, g+8, g+8; cols 2p, 2p+1, 2p, 2p+1
// The lower element of a register sits in its low 16 bits.
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"
#include "kernels/common/host_device.h"

namespace v41sim::kernels::mma {

inline constexpr int kM = 16;
inline constexpr int kN = 8;
inline constexpr int kK = 16;

// BF16 as raw bits: round to nearest even from float (fp_codec.h), and back.
V41_HD uint16_t to_bf16(float x) { return bf16_bits(x); }

V41_HD float from_bf16(uint16_t b) { return bf16_value(b); }

struct Lane {
  int group;  // lane / 4
  int pair;   // lane % 4
};
V41_HD Lane lane_of(int lane) { return {lane >> 2, lane & 3}; }

V41_HD int a_row(Lane l, int reg) { return l.group + (reg & 1) * 8; }
V41_HD int a_col(Lane l, int reg) { return l.pair * 2 + (reg >> 1) * 8; }
V41_HD int b_k(Lane l, int reg) { return l.pair * 2 + reg * 8; }
V41_HD int b_n(Lane l) { return l.group; }
V41_HD int c_row(Lane l, int i) { return l.group + (i >> 1) * 8; }
V41_HD int c_col(Lane l, int i) { return l.pair * 2 + (i & 1); }

V41_HD uint32_t pack(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// Two BF16 values adjacent in memory (4-byte aligned: even column, even stride).
V41_HD uint32_t load_pair(const uint16_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(p);
#else
  return pack(p[0], p[1]);
#endif
}

// A from a row-major (rows x k) BF16 tile, the 16 x 16 block at (row0, k0).
V41_HD uint32_t load_a(const uint16_t* tile, int stride, int row0, int k0, Lane l, int reg) {
  return load_pair(tile + (row0 + a_row(l, reg)) * stride + k0 + a_col(l, reg));
}

// B (k x n) from a tile stored n-major: n rows of k values (keys x dims, for Q.K^T).
V41_HD uint32_t load_b_n_major(const uint16_t* tile, int stride, int n0, int k0, Lane l, int reg) {
  return load_pair(tile + (n0 + b_n(l)) * stride + k0 + b_k(l, reg));
}

// B (k x n) from a tile stored k-major: k rows of n values (keys x dims, for P.V).
V41_HD uint32_t load_b_k_major(const uint16_t* tile, int stride, int k0, int n0, Lane l, int reg) {
  const uint16_t* p = tile + (k0 + b_k(l, reg)) * stride + n0 + b_n(l);
  return pack(p[0], p[stride]);
}

}  // namespace v41sim::kernels::mma

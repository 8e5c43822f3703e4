// Hopper's warpgroup MMA (wgmma, sm_90a) as plain index arithmetic, shared by
// the kernels that issue it and the CPU tests that replay what it reads.
//
// Operands in shared memory, K-major, in the 128-byte swizzle (PTX ISA,
// "Shared memory matrix layout", the canonical K-major layout with 128B
// swizzling; also what the bulk tensor copy's SWIZZLE_128B writes): a row of
// an operand tile is 128 bytes of K (128 FP8 values), 8 rows make a
// 1,024-byte atom, and inside an atom the 16-byte chunk c of row r is stored
// at chunk c ^ r. The tile starts 1,024-byte aligned, so the hardware, which
// swizzles by address bits (bits 4-6 XOR bits 7-9), sees the same layout.
// Stepping along K by 32 bytes (one k32 step of FP8) adds 32 to the
// descriptor's start address, as CUTLASS and DeepGEMM advance theirs.
//
// Accumulators (m64nNk32, FP32): warp w of the warpgroup holds rows
// 16w..16w+15; per 8 columns j a lane holds four values, as mma.sync's C
// fragment: rows lane/4 and lane/4 + 8, columns 8j + 2 (lane % 4) and + 1.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace v41sim::kernels::wgmma {

inline constexpr int kRowBytes = 128;  // one swizzled row: 128 FP8 values of K
inline constexpr int kAtomRows = 8;
inline constexpr int kAtomBytes = kRowBytes * kAtomRows;  // 1,024: the tile alignment
inline constexpr int kChunk = 16;
inline constexpr int kM = 64;         // rows of one wgmma
inline constexpr int kK = 32;         // K of one FP8 wgmma (32 bytes)
inline constexpr int kThreads = 128;  // a warpgroup

// Where byte `byte` (0-127) of row `row` of a swizzled tile lies.
V41_HD int swizzled_offset(int row, int byte) {
  return row * kRowBytes + (((byte / kChunk) ^ (row % kAtomRows)) * kChunk) + byte % kChunk;
}

// A shared-memory matrix descriptor: start address, leading-dimension byte
// offset (unused by swizzled K-major layouts; 16 by convention), the stride
// between 8-row atoms (1,024 here), and swizzle mode 1 (128 bytes). Address
// fields hold bytes / 16 in 14 bits.
V41_HD uint64_t descriptor(uint32_t shared_address) {
  const uint64_t start = (shared_address & 0x3FFFFu) >> 4;
  const uint64_t leading = 16 >> 4, stride = kAtomBytes >> 4, swizzle_128b = 1;
  return start | (leading << 16) | (stride << 32) | (swizzle_128b << 62);
}

// The shared address a wgmma reads for byte `byte` (0-31) of row `row` of
// its operand, given the descriptor: as the hardware computes it, the atom
// and row within it from the stride, then the address's bits 4-6 XORed with
// bits 7-9. (For the CPU tests; the kernels only build descriptors.)
V41_HD uint32_t read_address(uint64_t desc, int row, int byte) {
  const uint32_t start = static_cast<uint32_t>(desc & 0x3FFFu) << 4;
  const uint32_t stride = static_cast<uint32_t>((desc >> 32) & 0x3FFFu) << 4;
  const uint32_t linear = start + static_cast<uint32_t>(row / kAtomRows) * stride +
                          static_cast<uint32_t>(row % kAtomRows) * kRowBytes + static_cast<uint32_t>(byte);
  return linear ^ (((linear >> 7) & 0x7u) << 4);
}

// Accumulator i of a warpgroup's thread t: its row (0-63) and column.
V41_HD int accumulator_row(int t, int i) { return (t / 32) * 16 + (t % 32) / 4 + ((i % 4) / 2) * 8; }
V41_HD int accumulator_col(int t, int i) { return (i / 4) * 8 + (t % 4) * 2 + i % 2; }

}  // namespace v41sim::kernels::wgmma

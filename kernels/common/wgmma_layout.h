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
inline constexpr int kM = 64;           // rows of one wgmma
inline constexpr int kK = 32;           // K of one FP8 wgmma (32 bytes)
inline constexpr int kK16Bit = kK / 2;  // K of one BF16 wgmma: the same 32 bytes
inline constexpr int kThreads = 128;    // a warpgroup

// Where byte `byte` (0-127) of row `row` of a swizzled tile lies.
V41_HD int swizzled_offset(int row, int byte) {
  return row * kRowBytes + (((byte / kChunk) ^ (row % kAtomRows)) * kChunk) + byte % kChunk;
}

// A shared-memory matrix descriptor: start address, leading-dimension byte
// offset, stride-dimension byte offset and swizzle mode 1 (128 bytes).
// Address fields hold bytes / 16 in 14 bits. K-major (the default): the
// leading offset is unused by swizzled layouts (16 by convention) and the
// stride is between 8-row atoms (1,024 here).
V41_HD uint64_t descriptor(uint32_t shared_address, uint32_t leading_bytes = 16,
                           uint32_t stride_bytes = kAtomBytes) {
  const uint64_t start = (shared_address & 0x3FFFFu) >> 4;
  const uint64_t leading = leading_bytes >> 4, stride = stride_bytes >> 4, swizzle_128b = 1;
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

// MN-major (transposed, imm-trans-b 1) operands of 16-bit values in the
// 128-byte swizzle (CUTLASS's Layout_MN_SW128_Atom; PTX ISA, the canonical
// MN-major layouts): a 128-byte row holds 64 consecutive values of N for one
// k, 8 rows (k) make an atom, atoms follow along N at the leading byte offset
// and along K at the stride byte offset. So a tile stored K-major for one
// product (rows of 64 values of K, 8 rows an atom) is read N-major by
// another with its roles swapped, as attention reads its key tile as V.
// The shared address a wgmma reads for value (n, k) of such an operand:
V41_HD uint32_t read_address_mn_major(uint64_t desc, int n, int k) {
  constexpr int kValues = kRowBytes / 2;  // 16-bit values a row
  const uint32_t start = static_cast<uint32_t>(desc & 0x3FFFu) << 4;
  const uint32_t leading = static_cast<uint32_t>((desc >> 16) & 0x3FFFu) << 4;
  const uint32_t stride = static_cast<uint32_t>((desc >> 32) & 0x3FFFu) << 4;
  const uint32_t linear =
      start + static_cast<uint32_t>(n / kValues) * leading + static_cast<uint32_t>(k / kAtomRows) * stride +
      static_cast<uint32_t>(k % kAtomRows) * kRowBytes + static_cast<uint32_t>(n % kValues) * 2;
  return linear ^ (((linear >> 7) & 0x7u) << 4);
}

// A 16-bit A operand from registers (m64nNk16): which thread, register
// (0-3) and half (0 low, 1 high) hold value (row, k), k 0-15. Per warp its 16
// rows, as mma.sync's m16n8k16 A fragment: registers 0 and 1 hold k 0-7
// (rows lane / 4 and + 8), 2 and 3 k 8-15; a lane's pair is k 2 (lane % 4), + 1.
struct FragmentSlot {
  int thread, reg, half;
};
V41_HD FragmentSlot a_fragment_slot(int row, int k) {
  const int lane = (row % 8) * 4 + (k % 8) / 2;
  return {(row / 16) * 32 + lane, (row % 16) / 8 + 2 * (k / 8), k % 2};
}
// And back: the row and the k (0-15) of half `half` of register `reg` of thread t.
V41_HD int a_fragment_row(int t, int reg) { return (t / 32) * 16 + (t % 32) / 4 + 8 * (reg % 2); }
V41_HD int a_fragment_k(int t, int reg, int half) { return 2 * (t % 4) + 8 * (reg / 2) + half; }

// Accumulator i of a warpgroup's thread t: its row (0-63) and column.
V41_HD int accumulator_row(int t, int i) { return (t / 32) * 16 + (t % 32) / 4 + ((i % 4) / 2) * 8; }
V41_HD int accumulator_col(int t, int i) { return (i / 4) * 8 + (t % 4) * 2 + i % 2; }

}  // namespace v41sim::kernels::wgmma

// The W4A8 expert GEMM's tiling and index arithmetic (expert_gemm_w4a8_cuda.cu)
// as plain host-and-device functions: which bytes each copy chunk moves into a
// stage of shared memory, where each warp's mma tiles sit, and where each
// accumulator lands in the output. The CUDA kernel issues them as cp.async
// copies and mma.sync steps; a CPU test runs the same functions CTA by CTA
// with an emulated mma and checks the result against the reference. The
// W4A16 kernel (expert_gemm_w4a16_tiling.h) shares the CTA layout and the
// copies, its activations two bytes a value.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/mma_fragments_e4m3.h"
#include "kernels/gemm/expert_gemm.h"

namespace v41sim::kernels::w4a8 {

inline constexpr int kBlockK = 128;  // K per pipeline stage: four scale groups of 32
inline constexpr int kBlockN = 64;   // weight rows per CTA
inline constexpr int kGroupsPerBlock = kBlockK / kWeightScaleGroup;
inline constexpr int kChunkBytes = 16;  // one cp.async of activations or packed weights
static_assert(kGroupsPerBlock * mma::e4m3::kK == kBlockK, "one mma k-step per scale group");

// Warp grid, mma tiles per warp and pipeline depth, and the activations'
// bytes a value (1: E4M3; 2: BF16, the W4A16 kernel); strides padded so the
// fragment loads of a warp hit distinct banks (A rows 144 B, or 288 B for
// BF16's 8-byte loads; packed weight rows 80 B) and stay 16-byte aligned for cp.async.
template <int kWarpsM, int kWarpsN, int kTilesM, int kTilesN, int kStages, int kMinBlocksPerSm,
          int kActivationBytes = 1>
struct Tiling {
  static constexpr int warps_n = kWarpsN, tiles_m = kTilesM, tiles_n = kTilesN, stages = kStages,
                       min_blocks_per_sm = kMinBlocksPerSm, activation_bytes = kActivationBytes;
  static constexpr int warps = kWarpsM * kWarpsN;
  static constexpr int threads = 32 * warps;
  static constexpr int block_m = kWarpsM * kTilesM * mma::kM;
  static constexpr int a_row_bytes = kBlockK * kActivationBytes;  // one row's values in a k-block
  static constexpr int a_stride = a_row_bytes + 16 * kActivationBytes;
  static constexpr int w_stride = kBlockK / 2 + 16;
  static constexpr int a_bytes = block_m * a_stride;
  static constexpr int w_bytes = kBlockN * w_stride;
  static constexpr int s_bytes = kBlockN * kGroupsPerBlock;
  static constexpr int stage_bytes = a_bytes + w_bytes + s_bytes;
  static constexpr int a_chunks = block_m * (a_row_bytes / kChunkBytes);
  static constexpr int w_chunks = kBlockN * (kBlockK / 2 / kChunkBytes);
  static constexpr int s_chunks = kBlockN;  // 4 scale codes of a weight row, one 4-byte copy
  static_assert(kWarpsN * kTilesN * mma::kN == kBlockN, "warps tile the CTA's weight rows");
  static_assert(a_bytes % 16 == 0 && w_bytes % 16 == 0 && stage_bytes % 16 == 0, "16-byte aligned arrays");
  static_assert(stage_bytes * kStages <= 48 * 1024, "static shared memory");
};
// Decode: a few rows per expert, deep pipelines and several CTAs per SM to
// keep weight bytes in flight; prefill: fuller tiles, fewer stages.
using Rows16 = Tiling<1, 4, 1, 2, 4, 4>;
using Rows64 = Tiling<2, 2, 2, 4, 3, 2>;
using Rows128 = Tiling<2, 2, 4, 4, 2, 1>;

// The CTA's activation rows for an expert of m rows: the smallest tiling that
// holds them, up to 128 (the launch picks the tiling by this).
inline int block_rows(int64_t m) {
  return m <= Rows16::block_m ? Rows16::block_m : m <= Rows64::block_m ? Rows64::block_m : Rows128::block_m;
}

struct Problem {
  int64_t experts, m, n, k;
};

// Where a CTA works: its expert, first activation row and first weight row.
struct CtaOrigin {
  int64_t expert, row0, n0;
};

// One copy: bytes at `global` (an offset into the activations, packed weights
// or scales) to `smem` (an offset into the stage); zeros where !valid.
struct Copy {
  int smem;
  int64_t global;
  bool valid;
};

// Activation chunk c of k-block kb: 16 bytes of a row; rows past m are zero-filled.
template <class T>
V41_HD Copy activation_copy(int c, const Problem& p, const CtaOrigin& o, int64_t kb) {
  constexpr int kRowChunks = T::a_row_bytes / kChunkBytes;
  const int r = c / kRowChunks, col = (c % kRowChunks) * kChunkBytes;
  const bool valid = o.row0 + r < p.m;
  const int64_t row = o.expert * p.m + (valid ? o.row0 + r : 0);
  return {r * T::a_stride + col, (row * p.k + kb * kBlockK) * T::activation_bytes + col, valid};
}

// Packed-weight chunk c: 16 bytes (32 codes) of one of the CTA's weight rows.
template <class T>
V41_HD Copy weight_copy(int c, const Problem& p, const CtaOrigin& o, int64_t kb) {
  const int r = c / (kBlockK / 2 / kChunkBytes), col = (c % (kBlockK / 2 / kChunkBytes)) * kChunkBytes;
  return {T::a_bytes + r * T::w_stride + col,
          (o.expert * p.n + o.n0 + r) * (p.k / 2) + kb * (kBlockK / 2) + col, true};
}

// Scale chunk r: the 4 E8M0 codes of weight row r for this k-block (4-byte aligned: k/32 is a multiple of 4).
template <class T>
V41_HD Copy scale_copy(int r, const Problem& p, const CtaOrigin& o, int64_t kb) {
  const int64_t per_row = p.k / kWeightScaleGroup;
  return {T::a_bytes + T::w_bytes + r * kGroupsPerBlock,
          (o.expert * p.n + o.n0 + r) * per_row + kb * kGroupsPerBlock, true};
}

// A warp's mma tiles within the CTA: first activation row of m-tile mt, first weight row of n-tile nt.
template <class T>
V41_HD int tile_row(int warp, int mt) {
  return ((warp / T::warps_n) * T::tiles_m + mt) * mma::kM;
}
template <class T>
V41_HD int tile_col(int warp, int nt) {
  return ((warp % T::warps_n) * T::tiles_n + nt) * mma::kN;
}

}  // namespace v41sim::kernels::w4a8

// The warpgroup-MMA W4A8 expert GEMM's tiling (expert_gemm_w4a8_wgmma_cuda.cu)
// as plain host-and-device functions: where each copy chunk lands in a stage,
// how a 16-value chunk of FP4 weights is widened to FP8 into the swizzled
// operand tile, with its group's scale folded in, and which scale each
// accumulator column is promoted with. The CUDA kernel issues them as cp.async
// copies, shared-memory stores and wgmma steps; a CPU test runs the same
// functions CTA by CTA, reads the tiles through the wgmma descriptors' address
// arithmetic (kernels/common/wgmma_layout.h) and checks the result against
// the reference.
//
// Scales: wgmma takes one FP8 operand pair a step, with no per-32 scale, so a
// weight row's four group scales in a k-block of 128 are folded into its FP8
// values relative to the largest of the four (E2M1 x 2^-shift, rounded to
// E4M3: exact for a shift up to 8), and the block's partial sums are promoted
// into the FP32 accumulators with that largest scale, as DeepGEMM promotes
// per 128 on Hopper. Exact while a row's group scales within each k-block lie
// within 2^8 of each other (the mma.sync kernel is exact for any spread).
#pragma once

#include <cstdint>

#include "kernels/common/fp4_folding.h"
#include "kernels/common/fp_codec.h"
#include "kernels/common/host_device.h"
#include "kernels/common/stage_handover.h"
#include "kernels/common/wgmma_layout.h"
#include "kernels/gemm/expert_gemm_w4a8_tiling.h"

namespace v41sim::kernels::w4a8::wgmma_tiles {

inline constexpr int kTileM = 128;  // two warpgroups of 64 activation rows
inline constexpr int kTileN = 128;  // weight rows: one m64n128 wgmma's N
inline constexpr int kStages = 4;
inline constexpr int kWarpgroups = kTileM / wgmma::kM;
inline constexpr int kThreads = kWarpgroups * wgmma::kThreads;
inline constexpr int kStepsPerBlock = kBlockK / wgmma::kK;
static_assert(kBlockK == wgmma::kRowBytes, "a k-block is one swizzled row of FP8 values");

// One stage: activations (swizzled), packed weights (64 bytes a row), the
// rows' four group scale codes; padded so every stage's activations start
// 1,024-byte aligned.
inline constexpr int kActivationBytes = kTileM * kBlockK;
inline constexpr int kPackedRowBytes = kBlockK / 2;
inline constexpr int kPackedOffset = kActivationBytes;
inline constexpr int kScaleOffset = kPackedOffset + kTileN * kPackedRowBytes;
inline constexpr int kStageBytes =
    (kScaleOffset + kTileN * kGroupsPerBlock + wgmma::kAtomBytes - 1) / wgmma::kAtomBytes * wgmma::kAtomBytes;
// After the stages: two widened weight tiles (swizzled), their rows' scales
// (float), the 16 folding tables.
inline constexpr int kWeightTileBytes = kTileN * kBlockK;
inline constexpr int kWeightTilesOffset = kStages * kStageBytes;
inline constexpr int kRowScalesOffset = kWeightTilesOffset + 2 * kWeightTileBytes;
inline constexpr int kTablesOffset = kRowScalesOffset + 2 * kTileN * static_cast<int>(sizeof(float));
inline constexpr int kSharedBytes =
    kTablesOffset + kFoldingTables * static_cast<int>(sizeof(E2m1ToE4m3Table));
inline constexpr int kSharedBytesAllocated = kSharedBytes + wgmma::kAtomBytes;  // room to align the base
static_assert(kSharedBytesAllocated <= 227 * 1024, "one CTA within Hopper's shared memory");

inline constexpr int kActivationChunks = kTileM * (kBlockK / kChunkBytes);
inline constexpr int kWeightChunks = kTileN * (kPackedRowBytes / kChunkBytes);
inline constexpr int kWidenedChunks = kTileN * (kBlockK / kChunkBytes);  // 16 values each

// Activation chunk c of k-block kb: 16 bytes of a row, into its swizzled
// place; rows past m are zero-filled.
V41_HD Copy activation_copy(int c, const Problem& p, const CtaOrigin& o, int64_t kb) {
  const int r = c / (kBlockK / kChunkBytes), byte = (c % (kBlockK / kChunkBytes)) * kChunkBytes;
  const bool valid = o.row0 + r < p.m;
  return {wgmma::swizzled_offset(r, byte),
          (o.expert * p.m + (valid ? o.row0 + r : 0)) * p.k + kb * kBlockK + byte, valid};
}

// Packed-weight chunk c: 16 bytes (32 codes) of one of the CTA's weight rows.
V41_HD Copy weight_copy(int c, const Problem& p, const CtaOrigin& o, int64_t kb) {
  const int r = c / (kPackedRowBytes / kChunkBytes),
            byte = (c % (kPackedRowBytes / kChunkBytes)) * kChunkBytes;
  return {kPackedOffset + r * kPackedRowBytes + byte,
          (o.expert * p.n + o.n0 + r) * (p.k / 2) + kb * kPackedRowBytes + byte, true};
}

// Weight row r's four scale codes for this k-block (4 bytes).
V41_HD Copy scale_copy(int r, const Problem& p, const CtaOrigin& o, int64_t kb) {
  return {kScaleOffset + r * kGroupsPerBlock,
          (o.expert * p.n + o.n0 + r) * (p.k / kWeightScaleGroup) + kb * kGroupsPerBlock, true};
}

// Widened chunk q (0-1,023) of a stage's weights: weight row q / 8, values
// 16 (q % 8) to +15 of the k-block (one half of a scale group), as E4M3 with
// the group's scale over the row's largest folded in; `words` go to
// `tile_offset` in the widened tile (16 bytes, swizzled).
struct WidenedChunk {
  int tile_offset;
  uint32_t words[4];
};
V41_HD WidenedChunk widen_chunk(const uint8_t* stage, int q, const E2m1ToE4m3Table* tables) {
  const int row = q / (kBlockK / kChunkBytes), part = q % (kBlockK / kChunkBytes);
  const auto [low, high] =
      load_word_pair(stage + kPackedOffset + row * kPackedRowBytes + part * (kChunkBytes / 2));
  WidenedChunk out{wgmma::swizzled_offset(row, part * kChunkBytes), {}};
  fold_and_widen_sixteen(low, high, load_word(stage + kScaleOffset + row * kGroupsPerBlock), part / 2, tables,
                         out.words);
  return out;
}

// Weight row r's promotion scale for the k-block: its largest group scale.
V41_HD float row_scale(const uint8_t* stage, int r) {
  return row_scale_of(load_word(stage + kScaleOffset + r * kGroupsPerBlock));
}

// The warp-specialized schedule: a third warpgroup only loads and widens,
// the two others only compute, each stage handed over through a "full" and
// an "empty" barrier, so the computing warpgroups fall out of step and one
// promotes while the other's wgmma steps run. Each stage holds its own
// widened tile and row scales after the loaded bytes (same offsets as above).
namespace warp_specialized {

inline constexpr int kComputeThreads = kThreads;  // the two computing warpgroups
inline constexpr int kProducerThreads = wgmma::kThreads;
inline constexpr int kThreads = kComputeThreads + kProducerThreads;
inline constexpr int kStages = 4;
inline constexpr int kLoadAhead = 2;  // blocks whose copies fly while the producer widens an earlier one
static_assert(kLoadAhead < kStages, "a stage is loaded only once the computing warpgroups released it");
inline constexpr int kWeightTileOffset = wgmma_tiles::kStageBytes;
inline constexpr int kRowScalesOffset = kWeightTileOffset + kWeightTileBytes;
inline constexpr int kStageBytes =
    (kRowScalesOffset + kTileN * static_cast<int>(sizeof(float)) + wgmma::kAtomBytes - 1) /
    wgmma::kAtomBytes * wgmma::kAtomBytes;
inline constexpr int kBarriersOffset = kStages * kStageBytes;  // full[kStages], then empty[kStages]
inline constexpr int kTablesOffset = kBarriersOffset + 2 * kStages * static_cast<int>(sizeof(uint64_t));
inline constexpr int kSharedBytes =
    kTablesOffset + kFoldingTables * static_cast<int>(sizeof(E2m1ToE4m3Table));
inline constexpr int kSharedBytesAllocated = kSharedBytes + wgmma::kAtomBytes;
static_assert(kSharedBytesAllocated <= 227 * 1024, "one CTA within Hopper's shared memory");

// The handover's phases (kernels/common/stage_handover.h).
using Handover = StageHandover<kStages>;

}  // namespace warp_specialized

}  // namespace v41sim::kernels::w4a8::wgmma_tiles

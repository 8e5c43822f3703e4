// The lightning indexer's logits on Hopper's warpgroup MMA
// (indexer_wgmma_cuda.cu), as plain host-and-device functions a CPU test
// replays: FP8 E4M3 queries x FP4 index keys widened to FP8 in shared memory
// (their four group scales folded in relative to the largest,
// kernels/common/fp4_folding.h), DeepGEMM's mqa_logits kind.
//
// The product is taken transposed, keys x (query, head): a tile's 64 keys
// are the wgmma's M rows, a group of 4 queries x 32 heads its 128 N columns,
// the 128 dimensions one k-block of four k32 steps; the CTA's two computing
// warpgroups take a group each, so a key tile serves 8 queries. Then a thread's
// accumulators for one key row hold 8 heads of each query (columns 8j + 2
// (t % 4) + {0, 1}, j = 0-15: query j / 4), so the head sum
// sum_h w[h] ReLU(S[h]) is 8 multiply-adds in the thread and two shuffles
// across the lanes of its quad, and the key's largest group scale multiplies
// the sum (ReLU commutes with a positive scale).
//
// Warp-specialized: one warpgroup loads each tile of 64 keys as stored
// (68 bytes a key, the tile's 4,352 bytes contiguous) and widens it; two
// compute, each for its 4 queries; stages handed over through mbarriers
// (kernels/common/stage_handover.h).
#pragma once

#include <cstdint>

#include "kernels/common/fp4_folding.h"
#include "kernels/common/host_device.h"
#include "kernels/common/stage_handover.h"
#include "kernels/common/wgmma_layout.h"
#include "kernels/indexer/index_key_block.h"

namespace v41sim::kernels::indexer_wgmma {

inline constexpr int kHeads = 32;                        // V4.1's indexer heads
inline constexpr int kGroupQueries = 4;                  // a computing warpgroup's queries
inline constexpr int kColumns = kGroupQueries * kHeads;  // their (query, head) pairs: an m64n128 wgmma's N
inline constexpr int kQueries = 2 * kGroupQueries;       // a CTA's, over its two computing warpgroups
inline constexpr int kKeys = wgmma::kM;                  // keys a tile: the wgmma's M
inline constexpr int kTilesPerCta = 16;                  // 1,024 positions a CTA
inline constexpr int kChunk = 16;
static_assert(kIndexDim == wgmma::kRowBytes, "a key's or a query head's 128 values are one swizzled row");

inline constexpr int kComputeThreads = 2 * wgmma::kThreads;
inline constexpr int kProducerThreads = wgmma::kThreads;
inline constexpr int kThreads = kComputeThreads + kProducerThreads;
inline constexpr int kStages = 4;
inline constexpr int kLoadAhead = 2;  // tiles whose copies fly while the producer widens an earlier one
using Handover = StageHandover<kStages>;

// Shared memory: the queries (swizzled, 16 KB a group), then the stages: the
// widened keys (swizzled), the keys as stored, the keys' scales (float).
inline constexpr int kGroupTileBytes = kColumns * kIndexDim;
inline constexpr int kQueryTileBytes = kQueries * kHeads * kIndexDim;
inline constexpr int kWidenedBytes = kKeys * kIndexDim;
inline constexpr int kRawOffset = kWidenedBytes;
inline constexpr int kRawBytes = kKeys * kIndexKeyBytes;  // 4,352
inline constexpr int kKeyScalesOffset = kRawOffset + kRawBytes;
inline constexpr int kStageBytes =
    (kKeyScalesOffset + kKeys * static_cast<int>(sizeof(float)) + wgmma::kAtomBytes - 1) / wgmma::kAtomBytes *
    wgmma::kAtomBytes;

// Where a kernel of this pipeline (prefill's, decode's) keeps what, after
// its query tile of `query_tile_bytes`: the stages, their barriers
// (full[kStages], empty[kStages]), the folding tables; `allocated` leaves
// room to align the base.
struct PipelineLayout {
  int stages, barriers, tables, bytes, allocated;
};
constexpr PipelineLayout pipeline_layout(int query_tile_bytes) {
  const int barriers = query_tile_bytes + kStages * kStageBytes;
  const int tables = barriers + 2 * kStages * static_cast<int>(sizeof(uint64_t));
  const int bytes = tables + kFoldingTables * static_cast<int>(sizeof(E2m1ToE4m3Table));
  return {query_tile_bytes, barriers, tables, bytes, bytes + wgmma::kAtomBytes};
}
inline constexpr PipelineLayout kLayout = pipeline_layout(kQueryTileBytes);
inline constexpr int kStagesOffset = kLayout.stages;
inline constexpr int kSharedBytesAllocated = kLayout.allocated;
static_assert(kRawBytes % kChunk == 0 && kGroupTileBytes % wgmma::kAtomBytes == 0,
              "whole chunks, aligned tiles");
static_assert(kSharedBytesAllocated <= 227 * 1024, "one CTA within Hopper's shared memory");

inline constexpr int kQueryChunks = kQueries * kHeads * (kIndexDim / kChunk);
inline constexpr int kRawChunks = kRawBytes / kChunk;
inline constexpr int kWidenedChunks = kKeys * (kIndexDim / kChunk);

// The tiles of a CTA whose keys start at first_key: up to `per_cta`, fewer at the end.
V41_HD int64_t cta_tiles(int64_t first_key, int64_t positions, int per_cta) {
  const int64_t left = (positions - first_key + kKeys - 1) / kKeys;
  return left < per_cta ? left : per_cta;
}

// A 16-byte copy of which only `bytes` (0-16) are read, the rest zero-filled.
struct PartialCopy {
  int smem;
  int64_t global;
  int bytes;
};

// Query chunk c: 16 bytes of (query, head) row c / 8 of the CTA's into its
// swizzled place (group g's rows from g x 16 KB on); queries past the last
// are zero-filled.
V41_HD PartialCopy query_copy(int c, int64_t first_query, int64_t queries) {
  const int column = c / (kIndexDim / kChunk), byte = (c % (kIndexDim / kChunk)) * kChunk;
  const int64_t query = first_query + column / kHeads;
  const bool valid = query < queries;
  return {wgmma::swizzled_offset(column, byte),
          valid ? (query * kHeads + column % kHeads) * kIndexDim + byte : 0, valid ? kChunk : 0};
}

// Chunk c of a tile's keys as stored, from position first_key on: the bytes
// of positions past the last are zero-filled (a chunk may hold both).
V41_HD PartialCopy key_copy(int c, int64_t first_key, int64_t positions) {
  const int64_t global = first_key * kIndexKeyBytes + static_cast<int64_t>(c) * kChunk;
  const int64_t left = positions * kIndexKeyBytes - global;
  const int bytes = left <= 0 ? 0 : (left >= kChunk ? kChunk : static_cast<int>(left));
  return {kRawOffset + c * kChunk, bytes > 0 ? global : 0, bytes};
}

// Widened chunk q of a stage's keys: key q / 8, values 16 (q % 8) to +15,
// as E4M3 with its group's scale folded in; the words go to `tile_offset`.
struct WidenedChunk {
  int tile_offset;
  uint32_t words[4];
};
V41_HD WidenedChunk widen_key_chunk(const uint8_t* stage, int q, const E2m1ToE4m3Table* tables) {
  const int key = q / (kIndexDim / kChunk), part = q % (kIndexDim / kChunk);
  const uint8_t* entry = stage + kRawOffset + key * kIndexKeyBytes;  // 4-byte aligned: 68 = 4 x 17
  WidenedChunk out{wgmma::swizzled_offset(key, part * kChunk), {}};
  fold_and_widen_sixteen(load_word(entry + part * (kChunk / 2)), load_word(entry + part * (kChunk / 2) + 4),
                         load_word(entry + kIndexDim / 2), part * kChunk / kIndexScaleGroup, tables,
                         out.words);
  return out;
}

// Key r's scale, applied to its logits: its largest group scale.
V41_HD float key_scale(const uint8_t* stage, int r) {
  return row_scale_of(load_word(stage + kRawOffset + r * kIndexKeyBytes + kIndexDim / 2));
}

// Accumulator i's (query, head) column: query j / 4 of the warpgroup's
// group, head 8 (j % 4) + 2 (t % 4) + i % 2, for j = i / 4.
V41_HD int query_of(int t, int i) { return wgmma::accumulator_col(t, i) / kHeads; }
V41_HD int head_of(int t, int i) { return wgmma::accumulator_col(t, i) % kHeads; }

}  // namespace v41sim::kernels::indexer_wgmma

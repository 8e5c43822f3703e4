// How the top-k splits a long row (topk_cuda.cu): tiles of 8,192 positions,
// each held by one CTA in shared memory (32 KB), which keeps its own top-k as
// candidates in index order; a second pass takes the row's top-k from the
// candidates. The row is read from memory once, and a batch of one still
// spreads over the SMs (a 1M-token context is 524,288 positions in V4.1's
// ratio-2 layers, 64 tiles, and 1,048,576 in its ratio-1 layer 20). A row
// of one tile, or a k too close to the tile to shrink it, runs the second
// pass alone; candidates too many for the second pass's shared memory are
// cut into tiles again. Plain C++: the CPU tests check the sizes.
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim::kernels {

inline constexpr int64_t kTopkTilePositions = 8192;

inline bool topk_in_tiles(int64_t positions, int64_t topk) {
  return positions > kTopkTilePositions && 2 * topk <= kTopkTilePositions;
}

inline int64_t topk_tiles(int64_t positions) {
  return (positions + kTopkTilePositions - 1) / kTopkTilePositions;
}

// The candidates a row leaves: k from every tile, all of the last where it
// holds fewer; tile t's start at t x k, so they lie contiguous in index order.
inline int64_t topk_candidates(int64_t positions, int64_t topk) {
  const int64_t tiles = topk_tiles(positions);
  const int64_t last = positions - (tiles - 1) * kTopkTilePositions;
  return (tiles - 1) * topk + (last < topk ? last : topk);
}

// The most values the row pass holds in shared memory, 128 KB: the
// candidates of V4.1's top-512 over a 1M-token context at ratio 2 (524,288
// positions, 64 tiles). Its six walks over the row (four radix passes, the
// counts, the writes) then read memory once, not six times, each step of a
// walk waiting on an L2 load.
inline constexpr int64_t kTopkStagedValues = 32768;

// The rows the tile passes cut, in order: a long row; then, while the
// candidates a pass leaves are more than the row pass holds, those
// candidates, cut again (a ratio-1 layer's top-512 over a 1M-token context
// leaves 65,536, then 4,096). Empty where the row pass takes the row at once.
inline std::vector<int64_t> topk_tile_levels(int64_t positions, int64_t topk) {
  std::vector<int64_t> levels;
  for (int64_t length = positions;
       topk_in_tiles(length, topk) && (levels.empty() || length > kTopkStagedValues);
       length = topk_candidates(length, topk)) {
    levels.push_back(length);
  }
  return levels;
}

// The values the row pass selects from: the last tile pass's candidates, or
// the row. It holds them in shared memory where they fit (a row too long for
// tiles with its k, or a device with less shared memory, is walked in memory).
inline int64_t topk_row_pass_values(int64_t positions, int64_t topk) {
  const std::vector<int64_t> levels = topk_tile_levels(positions, topk);
  return levels.empty() ? positions : topk_candidates(levels.back(), topk);
}

// Workspace entries (a value and a slot each) the tile passes need, level
// after level; 0 where the row pass runs alone.
inline int64_t topk_workspace_entries(int64_t queries, int64_t positions, int64_t topk) {
  int64_t entries = 0;
  for (const int64_t length : topk_tile_levels(positions, topk))
    entries += queries * topk_tiles(length) * topk;
  return entries;
}

}  // namespace v41sim::kernels

// How the top-k splits a long row (topk_cuda.cu): tiles of 8,192 positions,
// each held by one CTA in shared memory (32 KB), which keeps its own top-k as
// candidates in index order; a second pass takes the row's top-k from the
// candidates. The row is read from memory once, and a batch of one still
// spreads over the SMs (a 1M-token context is 262,144 compressed positions,
// 32 tiles). A row of one tile, or a k too close to the tile to shrink it,
// runs the second pass alone. Plain C++: the CPU tests check the sizes.
#pragma once

#include <cstdint>

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

// Workspace entries (a value and a slot each) the tiled top-k needs; 0 where it runs in one pass.
inline int64_t topk_workspace_entries(int64_t queries, int64_t positions, int64_t topk) {
  return topk_in_tiles(positions, topk) ? queries * topk_tiles(positions) * topk : 0;
}

}  // namespace v41sim::kernels

// Where the mHC kernels keep a token's four streams, in 16-byte vectors of 8
// BF16 values, and which tokens a tile holds. In memory a token's streams
// follow one another (tokens x 4 x H). In a single pass's shared tile a row
// is a token: its share of stream 0, then of streams 1, 2 and 3 (the whole
// streams for the token-tile pass, a cluster CTA's slice of each for the
// cluster pass), rows `stride` values apart. Host and device alike, so the
// CPU replay of the single passes stages its tiles where the kernels do.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace v41sim::kernels {

inline constexpr int kStreamVector = 8;  // BF16 values in a 16-byte vector

// Vector v of stream `stream`, among streams of `vectors` vectors each.
V41_HD int64_t stream_vector(int64_t vectors, int stream, int64_t v) { return stream * vectors + v; }

// The first vector of tile row `row` (`stride` values a row, a multiple of 8).
V41_HD int64_t tile_row_vector(int64_t stride, int row) { return row * stride / kStreamVector; }

// Tile `tile` of `tile_rows` tokens: its first token and its rows (the last tile may be short).
struct TileSpan {
  int64_t token0;
  int rows;
};
V41_HD TileSpan tile_span(int64_t tokens, int tile_rows, int64_t tile) {
  const int64_t token0 = tile * tile_rows;
  return {token0, static_cast<int>(tokens - token0 < tile_rows ? tokens - token0 : tile_rows)};
}

}  // namespace v41sim::kernels

// How the cluster single pass divides a site's work (mhc_cluster_pass_cuda.cu).
//
// The token-tile single pass (mhc_mixing_cuda.cu) holds a few whole tokens a
// CTA and so reads all of fn (1 MB for V4.1) from L2 for every 1 to 4 tokens.
// The cluster form turns that around: a cluster of 8 or 16 CTAs shares every
// token, each CTA owning an equal share of the hidden dimension in all four
// streams, and keeps its share of fn (24 rows x 4 x H/8 or H/16 values) in
// shared memory for the whole launch. Eight CTAs (the portable cluster size)
// need 123 KB of it each for V4.1, one CTA an SM; sixteen (non-portable, an
// opt-in on Hopper and Blackwell) need 62 KB, so two CTAs share an SM and one
// streams while the other projects, waits at the barrier or finishes the
// coefficients (16 lanes a token, 20 Sinkhorn rounds: a latency the SM would otherwise idle through). A CTA
// merges, projects and mixes only its slice; the slices' projection sums meet in distributed shared memory,
// where every CTA of the cluster adds them in rank order (the same sum everywhere, deterministic) and
// finishes the coefficients. The clusters are persistent and walk the tokens a tile at a time, so fn leaves
// L2 once a CTA, not once a token.
//
// Plain index arithmetic, on host and device alike, so a CPU test checks that
// the slices cover every value of the flattened streams once.
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/mhc/mhc_coefficients.h"
#include "kernels/mhc/mhc_tile_layout.h"

namespace v41sim::kernels {

inline constexpr int kClusterSizes[] = {8, 16};  // CTAs a cluster: the portable size, and twice it
inline constexpr int kClusterMaxTileRows = 8;    // token rows a tile: half an mma M tile at most
inline constexpr int kClusterRowPad = 8;         // values: shifts consecutive slice rows by 4 banks

// Warps a CTA of a `ctas`-CTA cluster runs: 512 threads where it has the SM
// to itself, 256 where two share one (their registers must fit together).
constexpr V41_HD int cluster_warps(int ctas) { return ctas > 8 ? 8 : 16; }
constexpr V41_HD int cluster_ctas_an_sm(int ctas) { return ctas > 8 ? 2 : 1; }

// The 16-byte vectors of each stream that `rank` of `ctas` owns: [begin, end) of H / 8.
struct VectorRange {
  int64_t begin;
  int64_t end;
};
V41_HD VectorRange cluster_vectors(int64_t hidden, int ctas, int rank) {
  const int64_t vectors = hidden / kStreamVector;
  return {vectors * rank / ctas, vectors * (rank + 1) / ctas};
}

// A rank's slice is its vectors of stream 0, then of stream 1, 2 and 3: this
// many values of each stream, and columns in all (always a multiple of 32, so
// whole mma k16 steps).
V41_HD int64_t cluster_stream_columns(int64_t hidden, int ctas, int rank) {
  const VectorRange r = cluster_vectors(hidden, ctas, rank);
  return (r.end - r.begin) * kStreamVector;
}
V41_HD int64_t cluster_slice_columns(int64_t hidden, int ctas, int rank) {
  return kStreams * cluster_stream_columns(hidden, ctas, rank);
}

// Where slice column `column` of `rank` lies in a token's flattened streams (s H + e).
V41_HD int64_t cluster_flat_index(int64_t hidden, int ctas, int rank, int64_t column) {
  const int64_t per_stream = cluster_stream_columns(hidden, ctas, rank);
  const int64_t stream = column / per_stream;
  return stream * hidden + cluster_vectors(hidden, ctas, rank).begin * kStreamVector + column % per_stream;
}

// Values between consecutive rows of a slice (fn's rows and the tokens' rows
// alike), the widest rank's columns padded; a multiple of 8, so every row
// starts 16-byte aligned.
V41_HD int64_t cluster_slice_stride(int64_t hidden, int ctas) {
  const int64_t vectors = hidden / kStreamVector;
  return kStreams * ((vectors + ctas - 1) / ctas) * kStreamVector + kClusterRowPad;
}

// Copy i of `rank`'s staging of fn (16 bytes a copy, kMixes rows of its
// slice's columns): where it lands in shared memory and where it comes from
// in fn (kMixes rows of the flattened streams), in values.
struct FnSliceCopy {
  int64_t shared_value;
  int64_t fn_value;
};
V41_HD int64_t fn_slice_copies(int64_t hidden, int ctas, int rank) {
  return kMixes * cluster_slice_columns(hidden, ctas, rank) / kStreamVector;
}
V41_HD FnSliceCopy fn_slice_copy(int64_t hidden, int ctas, int rank, int64_t i) {
  const int64_t per_row = cluster_slice_columns(hidden, ctas, rank) / kStreamVector;
  const int64_t row = i / per_row, column = i % per_row * kStreamVector;
  return {row * cluster_slice_stride(hidden, ctas) + column,
          row * kStreams * hidden + cluster_flat_index(hidden, ctas, rank, column)};
}

// Dynamic shared memory a CTA holds: its slice of fn and a tile of token rows.
inline int64_t cluster_pass_shared_bytes(int64_t hidden, int ctas) {
  return (kMixes + kClusterMaxTileRows) * cluster_slice_stride(hidden, ctas) * 2;
}

// Token rows a tile: the most (to 8) that still give each of the device's
// `clusters` a tile, so a decode batch spreads over the GPU.
inline int mhc_cluster_tile_rows(int64_t tokens, int clusters) {
  for (int rows = kClusterMaxTileRows; rows > 1; rows /= 2) {
    if ((tokens + rows - 1) / rows >= clusters) return rows;
  }
  return 1;
}

}  // namespace v41sim::kernels

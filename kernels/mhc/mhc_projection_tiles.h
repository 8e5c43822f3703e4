// mHC's projection on the tensor cores: tokens are the rows of a tile (M, 16
// a tile), fn's 24 rows its columns (N: 3 tiles of 8), the flattened streams
// the reduction (K, 16 an mma.m16n8k16). Written as index arithmetic on host
// and device alike (kernels/common/mma_fragments.h), so a CPU test replays
// every lane's loads; and how the kernels divide the work, chosen on the host.
#pragma once

#include <cstdint>

#include "kernels/common/mma_fragments.h"
#include "kernels/mhc/mhc_coefficients.h"

namespace v41sim::kernels {

inline constexpr int kMixTiles = kMixes / mma::kN;
static_assert(kMixes % mma::kN == 0, "fn's rows fill whole N tiles");

// The three-kernel form's projection: a CTA of 8 warps takes 32 tokens (two M
// tiles sharing each fn fragment) and a share of the reduction.
inline constexpr int kProjectionWarps = 8;
inline constexpr int kProjectionMTiles = 2;
inline constexpr int kProjectionTokens = kProjectionMTiles * mma::kM;
// The single pass: 16 warps; its streams tile pads each token's row by 8
// values, so the 16-byte row shift spreads a fragment's rows over the banks.
inline constexpr int kFusedWarps = 16;
inline constexpr int kFusedRowPad = 8;
inline constexpr int kMaxFusedTokens = 4;
// Values between the single pass's tile rows: a token's flattened streams, padded.
V41_HD int64_t fused_tile_stride(int64_t hidden) { return kStreams * hidden + kFusedRowPad; }

// A from a row-major BF16 tile of token rows (`stride` values apart), the 16
// rows from row0; a row at or past `rows` reads the last one (its results are dropped).
V41_HD uint32_t token_fragment(const uint16_t* tile, int64_t stride, int rows, int row0, int64_t k0,
                               mma::Lane l, int reg) {
  int row = row0 + mma::a_row(l, reg);
  if (row >= rows) row = rows - 1;
  return mma::load_pair(tile + row * stride + k0 + mma::a_col(l, reg));
}

// B from fn (kMixes rows of `k` values, so n-major), mix tile `nt`.
V41_HD uint32_t fn_fragment(const uint16_t* fn, int64_t k, int nt, int64_t k0, mma::Lane l, int reg) {
  return mma::load_pair(fn + (nt * mma::kN + mma::b_n(l)) * k + k0 + mma::b_k(l, reg));
}

// The squares of the two BF16 values a fragment register holds: a token
// fragment's registers 0 and 2 hold row a_row(l, 0), 1 and 3 the row 8 below.
V41_HD float pair_squares(uint32_t pair) {
  const float lo = mma::from_bf16(static_cast<uint16_t>(pair & 0xFFFFu));
  const float hi = mma::from_bf16(static_cast<uint16_t>(pair >> 16));
  return lo * lo + hi * hi;
}

// The k16 steps [begin, end) of slice `slice` of `slices` equal shares.
struct StepRange {
  int64_t begin;
  int64_t end;
};
V41_HD StepRange step_range(int64_t steps, int64_t slice, int64_t slices) {
  return {steps * slice / slices, steps * (slice + 1) / slices};
}

// The k16 steps of a reduction of `k` values that warp `warp` of the
// three-kernel projection's split `split` (of `splits`) takes.
V41_HD StepRange projection_warp_steps(int64_t k, int split, int splits, int warp) {
  return step_range(k / mma::kK, static_cast<int64_t>(split) * kProjectionWarps + warp,
                    static_cast<int64_t>(splits) * kProjectionWarps);
}

// Where split `split`'s sums of `token` (of `tokens`) lie in the projection's workspace, in floats.
V41_HD int64_t projection_workspace_offset(int split, int64_t tokens, int64_t token) {
  return (split * tokens + token) * kProjectionSums;
}

// The workspace's floats: `splits` sets of sums for each of `tokens`.
V41_HD int64_t mhc_projection_workspace_floats(int64_t tokens, int splits) {
  return tokens * splits * kProjectionSums;
}

// Reduction splits of the three-kernel form's projection: enough CTAs to
// give every SM two (a decode batch has too few tokens to fill the GPU by
// tokens alone), each warp keeping at least 8 steps.
inline int mhc_projection_splits(int64_t tokens, int64_t hidden, int sms) {
  const int64_t tiles = (tokens + kProjectionTokens - 1) / kProjectionTokens;
  const int64_t steps = kStreams * hidden / mma::kK;
  const int64_t most = steps / (kProjectionWarps * 8) > 1 ? steps / (kProjectionWarps * 8) : 1;
  const int64_t wanted = (2 * static_cast<int64_t>(sms) + tiles - 1) / tiles;
  return static_cast<int>(wanted < 1 ? 1 : (wanted > most ? most : wanted));
}

// Tokens a single-pass CTA holds: the most (to 4) that still give every SM
// two CTAs and whose streams fit in `shared_bytes`; 0 when not even one fits.
inline int mhc_fused_tokens_per_cta(int64_t tokens, int64_t hidden, int sms, int64_t shared_bytes) {
  const int64_t row_bytes = fused_tile_stride(hidden) * 2;
  for (int per_cta = kMaxFusedTokens; per_cta > 1; per_cta /= 2) {
    const int64_t ctas = (tokens + per_cta - 1) / per_cta;
    if (ctas >= 2 * static_cast<int64_t>(sms) && per_cta * row_bytes <= shared_bytes) return per_cta;
  }
  return row_bytes <= shared_bytes ? 1 : 0;
}

}  // namespace v41sim::kernels

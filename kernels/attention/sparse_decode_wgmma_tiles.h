// V4.1's sparse attention decode on Hopper's warpgroup MMA
// (sparse_decode_wgmma_cuda.cu), as plain host-and-device functions a CPU
// test replays: BF16 operands (the entries widened exactly, as the mma.sync
// kernel widens them), FP32 accumulators; FlashMLA's kind of kernel.
//
// A CTA takes one request's split: its 64 query heads against tiles of 64
// keys. Its two warpgroups each own half of the 512 latent dimensions: a
// warpgroup holds O for its 256 (64 x 256 FP32, 128 registers a thread) and
// takes the scores over the same 256, so it only ever reads its own half of
// Q and of each key, and loads and widens that half itself. Per tile:
//   - partial scores Q.K^T over its 256 dims: 16 m64n64k16 steps, Q and the
//     key tile K-major in shared memory;
//   - meanwhile the next tile's entry indices are looked up;
//   - the two warpgroups add their partial scores through shared memory
//     (16 KB each), so both hold the same S and run the same online softmax
//     (O rescaled lazily: next_reference_max);
//   - O += P.V: 4 m64n256k16 steps, P from registers as the score
//     accumulators leave it, V the same key tile read N-major (K = V);
//   - while the tensor cores run them, the next tile's entries are loaded
//     and widened into the other stage.
// The tiles are kept as the 128-byte swizzle wants them: a 64-dim block of
// 64 rows (heads or keys) is 8 KB, 8 rows of 128 bytes an atom.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/attention/sparse_decode_types.h"
#include "kernels/common/host_device.h"
#include "kernels/common/wgmma_layout.h"

namespace v41sim::kernels::sparse_decode_wgmma {

inline constexpr int kHeads = wgmma::kM;                       // all of V4.1's 64, the wgmma's M
inline constexpr int kKeys = 64;                               // a tile: the scores' N, P.V's K
inline constexpr int kHalfDims = kLatentDim / 2;               // a warpgroup's: P.V's N
inline constexpr int kBlockDims = wgmma::kRowBytes / 2;        // 64 BF16 values a swizzled row
inline constexpr int kBlockBytes = kHeads * wgmma::kRowBytes;  // 64 rows of a 64-dim block
static_assert(kKeys == kHeads, "Q and a key tile share one block layout");
inline constexpr int kStepK = wgmma::kK16Bit;
inline constexpr int kScoreSteps = kHalfDims / kStepK;                 // 16
inline constexpr int kValueSteps = kKeys / kStepK;                     // 4
inline constexpr int kScores = kHeads * kKeys / wgmma::kThreads;       // 32 accumulators a thread
inline constexpr int kOutputs = kHeads * kHalfDims / wgmma::kThreads;  // 128
inline constexpr int kThreads = 2 * wgmma::kThreads;

// Shared memory: Q, two stages of widened keys, the partial scores of each
// warpgroup, and per warpgroup and stage which keys are real.
inline constexpr int kOperandBytes = kLatentDim / kBlockDims * kBlockBytes;  // 64 KB
inline constexpr int kQueryOffset = 0;
inline constexpr int kStages = 2;
inline constexpr int kStagesOffset = kQueryOffset + kOperandBytes;
inline constexpr int kExchangeBytes = kHeads * kKeys * static_cast<int>(sizeof(float));
inline constexpr int kExchangeOffset = kStagesOffset + kStages * kOperandBytes;
inline constexpr int kValidOffset = kExchangeOffset + 2 * kExchangeBytes;
inline constexpr int kSharedBytes = kValidOffset + 2 * kStages * kKeys;
inline constexpr int kSharedBytesAllocated = kSharedBytes + wgmma::kAtomBytes;  // room to align the base
static_assert(kSharedBytesAllocated <= 227 * 1024, "one CTA within Hopper's shared memory");

// Where dims [dim, dim + 8) of row `row` (a head of Q, a key of a tile) lie
// in an operand: its 64-dim block, then the swizzled row.
V41_HD int operand_offset(int row, int dim) {
  return (dim / kBlockDims) * kBlockBytes + wgmma::swizzled_offset(row, (dim % kBlockDims) * 2);
}
V41_HD int stage_offset(int stage) { return kStagesOffset + stage * kOperandBytes; }
V41_HD int valid_offset(int warpgroup, int stage) {
  return kValidOffset + (warpgroup * kStages + stage) * kKeys;
}

// Query chunk c (0-2,047) of warpgroup w's half: head c / 32, 8 dims. Heads
// past the request's are zero-filled.
inline constexpr int kQueryChunks = kHeads * kHalfDims / 8;
struct QueryChunk {
  int smem;     // offset in shared memory
  int element;  // of the request's queries (heads x 512 BF16)
  bool valid;
};
V41_HD QueryChunk query_chunk(int c, int warpgroup, int64_t heads) {
  const int head = c / (kHalfDims / 8), dim = warpgroup * kHalfDims + (c % (kHalfDims / 8)) * 8;
  return {kQueryOffset + operand_offset(head, dim), head * kLatentDim + dim, head < heads};
}

// A thread's share of each tile: key t / 2, 128 dims of its warpgroup's half.
inline constexpr int kShareDims = kHalfDims / 2;
inline constexpr int kShareChunks = kShareDims / 8;  // 16 chunks of 8 dims
struct KeyShare {
  int key;
  int first_dim;
};
V41_HD KeyShare key_share(int warpgroup, int t) {
  return {t / 2, warpgroup * kHalfDims + (t % 2) * kShareDims};
}

// A share of a main entry as stored, loaded into registers to be widened:
// 64 bytes of codes (four 16-byte loads) and its 8 groups' scales (8 bytes).
struct MainShare {
  uint32_t codes[kShareChunks];
  uint32_t scales[2];
};
V41_HD int main_codes_offset(const KeyShare& s) { return s.first_dim / 2; }
V41_HD int main_scales_offset(const KeyShare& s) { return kLatentDim / 2 + s.first_dim / kMxfp4GroupSize; }

// Sixteen values g (0-7) of a share, chunks 2 g and 2 g + 1, widened into
// out[0..7]: a main entry's from its registers (one scale group, its scale
// decoded once), a window entry's from the entry itself (its 128 keys are
// the list's last two tiles, loaded when they are widened), zeros for no entry.
inline constexpr int kShareSixteens = kShareChunks / 2;
V41_HD void widen_share_sixteen(KeyKind kind, const MainShare& main, const uint8_t* entry, const KeyShare& s,
                                int g, uint32_t* out) {
  static_assert(kMxfp4GroupSize == 16, "a main entry's sixteen values share one scale");
  if (kind == KeyKind::kMain) {
    const uint32_t pair = main_scale_pair(static_cast<uint8_t>(main.scales[g / 4] >> (8 * (g % 4))));
    widen_main_eight(main.codes[2 * g], pair, out);
    widen_main_eight(main.codes[2 * g + 1], pair, out + 4);
  } else if (kind == KeyKind::kWindow) {
    const int dim = s.first_dim + 16 * g;
    const uint32_t multiplier = window_group_multiplier(entry, dim);  // 32 values a scale
    widen_window_eight(entry, dim, multiplier, out);
    widen_window_eight(entry, dim + 8, multiplier, out + 4);
  } else {
    for (int i = 0; i < 8; ++i) out[i] = 0;
  }
}

// Descriptors, from the shared address of the (1,024-byte aligned) base.
// Scores step j of warpgroup w: Q and the tile K-major, dims 256 w + 16 j,
// from the operand's row 0 (the step's 32 bytes inside a swizzled row, as
// the FP8 kernels step).
V41_HD int score_step_offset(int warpgroup, int step) {
  return operand_offset(0, warpgroup * kHalfDims + step * kStepK);
}
V41_HD uint64_t query_descriptor(uint32_t base, int warpgroup, int step) {
  return wgmma::descriptor(base + kQueryOffset + score_step_offset(warpgroup, step));
}
V41_HD uint64_t key_descriptor(uint32_t base, int stage, int warpgroup, int step) {
  return wgmma::descriptor(base + stage_offset(stage) + score_step_offset(warpgroup, step));
}
// P.V step j of warpgroup w: the tile read N-major, keys 16 j to 16 j + 15
// (two atoms of 8 rows: the stride) against the half's 256 dims (four 64-dim
// blocks: the leading offset).
V41_HD uint64_t value_descriptor(uint32_t base, int stage, int warpgroup, int step) {
  const int block = warpgroup * kHalfDims / kBlockDims;
  return wgmma::descriptor(base + stage_offset(stage) + block * kBlockBytes + step * 2 * wgmma::kAtomBytes,
                           kBlockBytes, wgmma::kAtomBytes);
}

// Where thread t of warpgroup w leaves its partial score i for the other
// warpgroup: its scores in groups of 4 (one 16-byte store each), a group's
// for consecutive threads consecutive, so a warp's store is 512 contiguous
// bytes (4 passes of shared memory, no bank conflicts).
V41_HD int exchange_offset(int warpgroup, int t, int i) {
  return kExchangeOffset + warpgroup * kExchangeBytes + ((i / 4) * wgmma::kThreads + t) * 16 + (i % 4) * 4;
}

// The online softmax of a thread's two heads (rows accumulator_row(t, 0)
// and + 8): its 16 scores of each, the row maxima over its quad given.
struct RowStates {
  float m[2] = {-INFINITY, -INFINITY};  // reference max of the scaled scores (kRescaleMargin)
  float l[2] = {0.0f, 0.0f};            // sum of exp(s - m), of the BF16 weights P.V uses
};
// The thread's scores scaled, keys with no entry at -inf.
V41_HD void scale_and_mask(float (&s)[kScores], const uint8_t* valid, int t, float scale) {
  V41_UNROLL for (int i = 0; i < kScores; ++i) s[i] =
      valid[wgmma::accumulator_col(t, i)] ? s[i] * scale : -INFINITY;
}
V41_HD void thread_row_maxima(const float (&s)[kScores], float (&maxima)[2]) {
  maxima[0] = maxima[1] = -INFINITY;
  V41_UNROLL for (int i = 0; i < kScores; ++i) maxima[(i % 4) / 2] = fmaxf(maxima[(i % 4) / 2], s[i]);
}
// Given the quad's row maxima: the reference maxima, the factors that
// rescale O so far (1 where the reference stayed), the weights P in BF16 as
// P.V's A fragment (word 4 j + r for keys 16 j to 16 j + 15, register r of
// a_fragment_slot) and the thread's sums of those weights.
struct SoftmaxStep {
  float max[2];
  float correction[2];
  uint32_t p[kValueSteps * 4];
  float sums[2];
};
V41_HD SoftmaxStep softmax_step(const float (&s)[kScores], const float (&quad_maxima)[2],
                                const RowStates& rows) {
  SoftmaxStep out{};
  bool any[2];
  V41_UNROLL for (int r = 0; r < 2; ++r) {
    const ReferenceMax reference = next_reference_max(rows.m[r], quad_maxima[r]);  // lazy (kRescaleMargin)
    out.max[r] = reference.max;
    out.correction[r] = reference.correction;
    any[r] = out.max[r] != -INFINITY;
  }
  V41_UNROLL for (int q = 0; q < kValueSteps * 4; ++q) {
    // Accumulators i and i + 1: keys 16 (q / 4) + 8 ((q % 4) / 2) + 2 (t % 4), + 1; row q % 2.
    const int i = 4 * (2 * (q / 4) + (q % 4) / 2) + 2 * (q % 2);
    const int r = q % 2;
    const uint16_t lo = bf16_bits(any[r] ? fast_exp(s[i] - out.max[r]) : 0.0f);
    const uint16_t hi = bf16_bits(any[r] ? fast_exp(s[i + 1] - out.max[r]) : 0.0f);
    out.p[q] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
    out.sums[r] += bf16_value(lo) + bf16_value(hi);
  }
  return out;
}
// Given the quad's sums of the weights.
V41_HD void update_rows(RowStates& rows, const SoftmaxStep& step, const float (&quad_sums)[2]) {
  V41_UNROLL for (int r = 0; r < 2; ++r) {
    rows.l[r] = rows.l[r] * step.correction[r] + quad_sums[r];
    rows.m[r] = step.max[r];
  }
}

}  // namespace v41sim::kernels::sparse_decode_wgmma

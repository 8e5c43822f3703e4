// V4.1's sparse attention decode on mma.sync (sparse_decode_mma_cuda.cu), as
// plain host-and-device functions a CPU test replays: which thread widens
// which part of a key, which warp scores and accumulates which block, each
// thread's share of the online softmax, where its accumulators go.
//
// A CTA takes one request's split, 8 warps: its 64 query heads against
// tiles of 64 keys.
//   - each key's entry is staged as stored and widened to BF16 by 4 threads,
//     128 dims each;
//   - S = Q.K^T: a warp a block of 16 heads x 32 keys over the 512 dims
//     (4 head blocks x 2 key halves);
//   - the online softmax: 4 consecutive threads a head, 16 keys each, their
//     maxima and sums over the quad;
//   - O += P.V: a warp owns 16 heads x 256 dims of O in registers (32
//     accumulator tiles), K doubling as V (MQA: K = V = latent).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/attention/sparse_decode_types.h"
#include "kernels/common/host_device.h"
#include "kernels/common/mma_fragments.h"

namespace v41sim::kernels::sparse_decode_mma {

inline constexpr int kThreads = 256;
inline constexpr int kWarps = kThreads / 32;
inline constexpr int kHeads = 64;                     // query heads per CTA: all of V4.1's
inline constexpr int kTile = 64;                      // keys per tile
inline constexpr int kRowStride = kLatentDim + 8;     // BF16 per Q or K row; +8 spreads rows over banks
inline constexpr int kScoreStride = kTile + 4;        // floats per score row
inline constexpr int kProbStride = kTile + 8;         // BF16 per P row
inline constexpr int kHeadBlocks = kHeads / mma::kM;  // 4 blocks of 16 heads
inline constexpr int kHalves = kWarps / kHeadBlocks;  // each head block: 2 warps
inline constexpr int kScoreTiles = kTile / kHalves / mma::kN;        // 4 n-tiles of 8 keys per warp
inline constexpr int kOutputTiles = kLatentDim / kHalves / mma::kN;  // 32 n-tiles of 8 dims per warp
inline constexpr int kKeyParts = kThreads / kTile;                   // 4 threads stage and widen a key
inline constexpr int kDimsPerPart = kLatentDim / kKeyParts;          // 128 dims each
inline constexpr int kHeadParts = kThreads / kHeads;                 // 4 threads a head's softmax
inline constexpr int kKeysPerHeadPart = kTile / kHeadParts;          // 16 keys each
// A tile's entries as stored, staged in shared memory: rows wide enough for
// the wider (window) entry, copied 16 bytes at a time.
inline constexpr int kChunk = 16;
inline constexpr int kRawStride = kWindowEntryBytes;
static_assert(kMainEntryBytes % kChunk == 0 && kWindowEntryBytes % kChunk == 0 &&
                  kMainEntryBytes <= kRawStride,
              "entries copy in whole 16-byte chunks");
static_assert(kHalves * kHeadBlocks == kWarps, "warps tile the heads");
static_assert(kHeadParts == 4, "a head's softmax threads are a quad of consecutive lanes (two shuffles)");

struct Smem {
  static constexpr std::size_t q = 0;
  static constexpr std::size_t k = q + sizeof(uint16_t) * kHeads * kRowStride;
  static constexpr std::size_t s = k + sizeof(uint16_t) * kTile * kRowStride;
  static constexpr std::size_t p = s + sizeof(float) * kHeads * kScoreStride;
  static constexpr std::size_t m = p + sizeof(uint16_t) * kHeads * kProbStride;
  static constexpr std::size_t l = m + sizeof(float) * kHeads;
  static constexpr std::size_t correction = l + sizeof(float) * kHeads;
  static constexpr std::size_t valid = correction + sizeof(float) * kHeads;
  static constexpr std::size_t raw = valid + sizeof(int) * kTile;
  static constexpr std::size_t kind = raw + kRawStride * kTile;
  static constexpr std::size_t bytes = kind + sizeof(int) * kTile;
};
static_assert(Smem::k % 16 == 0 && Smem::s % 16 == 0 && Smem::p % 16 == 0 && Smem::m % 16 == 0 &&
                  Smem::raw % 16 == 0,
              "shared arrays stay 16-byte aligned");

// The part of a tile's key a thread stages and widens: key thread / 4, dims
// [128 part, 128 part + 128); it copies every 4th of the entry's 16-byte chunks.
struct KeyPart {
  int key;
  int part;
};
V41_HD KeyPart key_part(int thread) { return {thread / kKeyParts, thread % kKeyParts}; }

// The thread's part of a staged entry widened into its row of the key tile
// (64 BF16 pairs; zeros for no entry).
V41_HD void widen_key_part(KeyKind kind, const uint8_t* entry, int part, uint32_t* words) {
  if (kind == KeyKind::kNone) {
    for (int i = 0; i < kDimsPerPart / 2; ++i) words[i] = 0;
  } else if (kind == KeyKind::kMain) {
    widen_main_entry_part(entry, part * kDimsPerPart, kDimsPerPart, words);
  } else {
    widen_window_entry_part(entry, part * kDimsPerPart, kDimsPerPart, words);
  }
}

// A warp's blocks: the scores of heads [head0, head0 + 16) x keys [key0,
// key0 + 32), and O for the same heads x dims [dim0, dim0 + 256).
struct WarpBlocks {
  int head0;
  int key0;
  int dim0;
};
V41_HD WarpBlocks warp_blocks(int warp) {
  const int half = warp / kHeadBlocks;
  return {(warp % kHeadBlocks) * mma::kM, half * (kTile / kHalves), half * (kLatentDim / kHalves)};
}

// A score as the softmax takes it: scaled, -inf for a padding key.
V41_HD float masked_score(float dot, bool valid, float scale) { return valid ? dot * scale : -INFINITY; }

// The softmax's threads: 4 consecutive ones a head, each 16 of its keys.
struct HeadPart {
  int head;
  int first_key;
};
V41_HD HeadPart head_part(int thread) {
  return {thread / kHeadParts, (thread % kHeadParts) * kKeysPerHeadPart};
}

// The largest of a thread's 16 scores (the quad's: its maximum over the 4).
V41_HD float part_max(const float* score_row, const HeadPart& part) {
  float top = -INFINITY;
  V41_UNROLL for (int j = 0; j < kKeysPerHeadPart; ++j) top = fmaxf(top, score_row[part.first_key + j]);
  return top;
}

// The thread's 16 weights against the reference max, written as BF16 into
// the head's row of P; returns their sum as P.V will use them (the rounded
// weights). No weight while the reference is -inf (no valid key yet).
V41_HD float weigh_part(const float* score_row, const HeadPart& part, float reference, uint16_t* p_row) {
  const bool any = reference != -INFINITY;
  float sum = 0.0f;
  V41_UNROLL for (int j = 0; j < kKeysPerHeadPart; ++j) {
    const int key = part.first_key + j;
    const uint16_t weight = mma::to_bf16(any ? fast_exp(score_row[key] - reference) : 0.0f);
    p_row[key] = weight;
    sum += mma::from_bf16(weight);
  }
  return sum;
}

// A head's running state after a tile: its reference max, its sum of
// weights (the old sum rescaled), the factor O so far is multiplied by.
struct HeadState {
  float m;
  float l;
};
V41_HD HeadState next_head_state(const HeadState& old, const ReferenceMax& reference, float tile_sum) {
  return {reference.max, old.l * reference.correction + tile_sum};
}

}  // namespace v41sim::kernels::sparse_decode_mma

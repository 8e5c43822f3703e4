// How many CTAs share one request's key list in the sparse decode (split-KV),
// chosen on the host as FlashMLA's scheduler weighs it (get_mla_metadata):
// a split costs its 64-key blocks plus a fixed 5 blocks (fixed_overhead_num_
// blocks: writing its partial output, 64 heads x 512 FP32 values = 128 KB,
// and merging it, which for V4.1's 640 keys a request outweighs a split's own
// keys). Both kernels hold an SM a CTA, so CTAs run in waves of one per SM;
// the count is the one that minimises waves x (blocks a split + 5). Plain
// C++, so a CPU test checks the choice.
#pragma once

#include <cstdint>

#include "kernels/attention/sparse_decode_types.h"

namespace v41sim::kernels {

inline constexpr int64_t kSplitBlockKeys = 64;
inline constexpr int64_t kSplitOverheadBlocks = 5;

inline int sparse_decode_splits(const SparseDecodeShape& shape, int sms) {
  const int64_t slots = shape.topk + kWindowTokens;
  const int64_t most = (slots + kSplitBlockKeys - 1) / kSplitBlockKeys;
  int64_t best = 1, best_cost = -1;
  for (int64_t splits = 1; splits <= most; ++splits) {
    const int64_t per_split = (slots + splits - 1) / splits;
    const int64_t blocks = (per_split + kSplitBlockKeys - 1) / kSplitBlockKeys;
    const int64_t waves = (shape.batch * splits + sms - 1) / sms;
    const int64_t cost = waves * (blocks + kSplitOverheadBlocks);
    if (best_cost < 0 || cost < best_cost) {
      best = splits;
      best_cost = cost;
    }
  }
  return static_cast<int>(best);
}

}  // namespace v41sim::kernels

// What the CPU replays of the tensor-core sparse decodes share: a request's
// key list as the kernels' find_key walks it, a CTA's result, and the splits
// of every request replayed and merged with the sink as the combine kernel
// merges them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/attention/sparse_decode_reference.h"
#include "kernels/attention/sparse_decode_types.h"
#include "kernels/common/fp_codec.h"

namespace v41sim::kernels::testing {

// Slot `slot` of request b's key list, as the kernels' find_key finds it.
struct HostKey {
  KeyKind kind;
  const uint8_t* entry;
};
inline HostKey host_key(const SparseDecodeInputs& in, int64_t b, int64_t slot, int64_t end) {
  if (slot >= end) return {KeyKind::kNone, nullptr};
  if (slot < in.shape.topk) {
    const int32_t index = in.topk[static_cast<std::size_t>(b * in.shape.topk + slot)];
    if (index < 0) return {KeyKind::kNone, nullptr};
    return {KeyKind::kMain, in.main_kv.data() + static_cast<int64_t>(index) * kMainEntryBytes};
  }
  const int64_t w = slot - in.shape.topk;
  if (w >= in.window_len[static_cast<std::size_t>(b)]) return {KeyKind::kNone, nullptr};
  return {KeyKind::kWindow, in.window.data() + (b * kWindowTokens + w) * kWindowEntryBytes};
}

// One CTA's result: its unnormalised output (heads x 512) and per head the
// running (reference) max and sum.
struct Partial {
  std::vector<float> o, m, l;
};

// Every request split `splits` ways as split_range does, each split replayed
// by `cta(b, begin, end)` and merged with the sink as the combine kernel merges them.
template <typename ReplayCta>
std::vector<float> replay_splits(const SparseDecodeInputs& in, int splits, ReplayCta cta) {
  const int64_t heads = in.shape.heads, slots = in.shape.topk + kWindowTokens;
  const int64_t per_split = (slots + splits - 1) / splits;
  std::vector<float> out(static_cast<std::size_t>(in.shape.batch * heads * kLatentDim));
  for (int64_t b = 0; b < in.shape.batch; ++b) {
    std::vector<Partial> parts;
    for (int split = 0; split < splits; ++split) {
      const int64_t begin = split * per_split, end = std::min(slots, begin + per_split);
      parts.push_back(cta(b, begin, end));
    }
    for (int64_t h = 0; h < heads; ++h) {
      const auto head = static_cast<std::size_t>(h);
      const float sink = in.sink[head];
      float max_all = sink;
      for (const Partial& p : parts) max_all = std::max(max_all, p.m[head]);
      double denominator = std::exp(sink - max_all);
      for (const Partial& p : parts) denominator += std::exp(p.m[head] - max_all) * p.l[head];
      for (int i = 0; i < kLatentDim; ++i) {
        double acc = 0;
        for (const Partial& p : parts)
          acc += std::exp(p.m[head] - max_all) * p.o[static_cast<std::size_t>(h * kLatentDim + i)];
        out[static_cast<std::size_t>((b * heads + h) * kLatentDim + i)] =
            static_cast<float>(acc / denominator);
      }
    }
  }
  return out;
}

// Queries 60 times larger and each request's top-k sorted by head 0's score,
// so every tile's largest score passes the one before by more than the lazy
// rescaling's margin: a row's reference max moves tile after tile.
inline void make_scores_climb(SparseDecodeInputs& in) {
  for (uint16_t& v : in.q) v = bf16_bits(bf16_value(v) * 60.0f);
  for (int64_t b = 0; b < in.shape.batch; ++b) {
    const auto score = [&](int32_t index) {  // head 0's
      if (index < 0) return -1e30;
      double dot = 0;
      for (int i = 0; i < kLatentDim; ++i)
        dot += bf16_value(in.q[static_cast<std::size_t>(b * in.shape.heads * kLatentDim + i)]) *
               main_entry_value(in.main_kv.data() + static_cast<int64_t>(index) * kMainEntryBytes, i);
      return dot;
    };
    auto first = in.topk.begin() + b * in.shape.topk;
    std::sort(first, first + in.shape.topk, [&](int32_t x, int32_t y) { return score(x) < score(y); });
  }
}

}  // namespace v41sim::kernels::testing

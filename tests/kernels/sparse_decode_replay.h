// What the CPU replays of the tensor-core sparse decodes share: the inputs'
// key lists for the kernels' find_key, a CTA's result, the splits of
// every request replayed and merged with the sink as the combine kernel
// merges them, and the cases both kernels must reproduce the reference on.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "kernels/attention/sparse_decode_reference.h"
#include "kernels/attention/sparse_decode_types.h"
#include "kernels/common/compare.h"
#include "kernels/common/fp_codec.h"

namespace v41sim::kernels::testing {

// The inputs' key lists, as the kernels' find_key walks them on the device.
inline KeyList key_list(const SparseDecodeInputs& in) {
  return {in.topk.data(), in.shape.topk, in.main_kv.data(), in.window.data(), in.window_len.data()};
}

// One CTA's result: its unnormalised output (heads x 512) and per head the
// running (reference) max and sum.
struct Partial {
  std::vector<float> o, m, l;
};

// Every request split `splits` ways as split_range does, each split replayed
// by `cta(b, begin, end)`, and finished as the kernels finish it: one split
// by the CTA itself (whole_list_factor), more by the combine kernel
// (combine_split_partials over the partials laid out as its workspace);
// BF16 outputs.
template <typename ReplayCta>
std::vector<float> replay_splits(const SparseDecodeInputs& in, int splits, ReplayCta cta) {
  const int64_t heads = in.shape.heads, slots = in.shape.topk + kWindowTokens;
  const int64_t per_split = (slots + splits - 1) / splits, stride = heads * kPartialFloats;
  std::vector<float> out(static_cast<std::size_t>(in.shape.batch * heads * kLatentDim));
  for (int64_t b = 0; b < in.shape.batch; ++b) {
    std::vector<float> workspace(static_cast<std::size_t>(splits * stride), NAN);
    for (int split = 0; split < splits; ++split) {
      const int64_t begin = split * per_split, end = std::min(slots, begin + per_split);
      const Partial part = cta(b, begin, end);
      for (int64_t h = 0; h < heads; ++h) {
        float* partial = &workspace[static_cast<std::size_t>(split * stride + h * kPartialFloats)];
        std::copy_n(part.o.begin() + h * kLatentDim, kLatentDim, partial);
        partial[kLatentDim] = part.m[static_cast<std::size_t>(h)];
        partial[kLatentDim + 1] = part.l[static_cast<std::size_t>(h)];
      }
    }
    for (int64_t h = 0; h < heads; ++h) {
      const float sink = in.sink[static_cast<std::size_t>(h)];
      const float* first = &workspace[static_cast<std::size_t>(h * kPartialFloats)];
      const float factor = whole_list_factor(sink, first[kLatentDim], first[kLatentDim + 1]);
      for (int i = 0; i < kLatentDim; ++i) {
        const float value =
            splits == 1 ? first[i] * factor : combine_split_partials(sink, first, stride, splits, i);
        out[static_cast<std::size_t>((b * heads + h) * kLatentDim + i)] = bf16_value(bf16_bits(value));
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

// A replay of every request, split `splits` ways (1: as the kernel finishes a
// whole list itself), counting into `rescales` (where not null) how often O
// was rescaled after its first keys.
using ReplayRequests =
    std::function<std::vector<float>(const SparseDecodeInputs&, int splits, int* rescales)>;

// Two requests of 100 top-k slots (every 17th padding) and windows of 37
// and 128 tokens: 228 slots, 4 tiles, the last partial. Whole with all 64
// heads, and split 3 ways with 40 heads.
inline void expect_ctas_reproduce_the_reference(const ReplayRequests& replay) {
  for (const auto& [heads, splits] : {std::pair<int64_t, int>{64, 1}, {40, 3}}) {
    const SparseDecodeInputs in = make_sparse_decode_inputs({2, heads, 100, 3000}, 7);
    EXPECT_LT(relative_norm_error(replay(in, splits, nullptr), sparse_decode_reference(in)), 5e-3)
        << heads << " heads, " << splits << " splits";
  }
}

// Lazy rescaling: with the default inputs' small scores no row's reference
// max moves after its first keys (O never rescaled again); with scores that
// climb tile after tile (make_scores_climb), O is rescaled more than
// `at_least` times; both reproduce the reference.
inline void expect_lazy_rescaling(const ReplayRequests& replay, int at_least) {
  SparseDecodeInputs in = make_sparse_decode_inputs({2, 64, 200, 3000}, 9);
  int rescales = 0;
  EXPECT_LT(relative_norm_error(replay(in, 1, &rescales), sparse_decode_reference(in)), 5e-3);
  EXPECT_EQ(rescales, 0);
  make_scores_climb(in);
  rescales = 0;
  EXPECT_LT(relative_norm_error(replay(in, 1, &rescales), sparse_decode_reference(in)), 5e-3);
  EXPECT_GT(rescales, at_least);
}

// A request with no key at all (every top-k slot padding, an empty window):
// its rows stay at -inf and nothing, and the sink alone makes its output 0,
// whole or split.
inline void expect_no_keys_give_zeros(const ReplayRequests& replay) {
  SparseDecodeInputs in = make_sparse_decode_inputs({2, 64, 100, 3000}, 8);
  for (int64_t j = 0; j < in.shape.topk; ++j) in.topk[static_cast<std::size_t>(j)] = -1;
  in.window_len[0] = 0;
  for (const int splits : {1, 2}) {
    const std::vector<float> got = replay(in, splits, nullptr);
    for (int i = 0; i < 64 * kLatentDim; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], 0.0f) << i;
    EXPECT_LT(relative_norm_error(got, sparse_decode_reference(in)), 5e-3);
  }
}

}  // namespace v41sim::kernels::testing

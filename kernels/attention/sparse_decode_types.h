// Shapes and cache layouts of V4.1's sparse attention decode, shared by the
// CPU reference and the CUDA kernel.
//   q:        batch x heads x 512 (BF16)
//   main KV:  compressed entries, 288 B each (512 FP4 e2m1 + 32 e4m3 scales)
//   topk:     batch x topk indices into the main KV (-1: no entry)
//   window:   batch x 128 entries of 528 B (512 FP8 e4m3 + 16 e8m0 scales),
//             the first window_len[b] of them valid
//   sink:     heads logits (attention sink: in the softmax, no value)
//   out:      batch x heads x 512 (BF16)
// K = V: the 512-dim latent is both key and value; scores are scaled by 1/sqrt(512).
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"
#include "kernels/kv_quant/mxfp4_kv_block.h"

namespace v41sim::kernels {

inline constexpr int kLatentDim = 512;
inline constexpr int kMainEntryBytes = kLatentDim / 2 + kLatentDim / kMxfp4GroupSize;  // 288
inline constexpr int kWindowScaleGroup = 32;
inline constexpr int kWindowEntryBytes = kLatentDim + kLatentDim / kWindowScaleGroup;  // 528
inline constexpr int kWindowTokens = 128;

struct SparseDecodeShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t topk = 0;
  int64_t main_entries = 0;
};

// Value i of a main-KV entry (MXFP4: e2m1 pairs, e4m3 scale per 16).
V41_HD float main_entry_value(const uint8_t* entry, int i) {
  const uint8_t byte = entry[i / 2];
  const float scale = decode_e4m3(entry[kLatentDim / 2 + i / kMxfp4GroupSize]);
  return decode_e2m1((i & 1) ? (byte >> 4) : (byte & 0xF)) * scale;
}

// A main-KV group's E4M3 scale as the BF16 pair its values are multiplied by.
V41_HD uint32_t main_scale_pair(uint8_t scale_code) {
  const uint32_t scale = bf16_bits(decode_e4m3(scale_code));
  return scale | (scale << 16);
}

// Eight values of a main-KV entry widened to BF16 pairs in out[0..3], values
// low first: their codes (one word, as stored) and their group's scale pair
// (widen_e2m1x4_to_bf16x4, four at a time).
V41_HD void widen_main_eight(uint32_t code_word, uint32_t scale_pair, uint32_t* out) {
  widen_e2m1x4_to_bf16x4(static_cast<uint16_t>(code_word), scale_pair, out);
  widen_e2m1x4_to_bf16x4(static_cast<uint16_t>(code_word >> 16), scale_pair, out + 2);
}

// Dims [first, first + count) of a main-KV entry widened to BF16 pairs in
// `row` (count / 2 words, values low first): each group's scale decoded once,
// its codes widened eight at a time: how the tensor-core kernels' threads
// widen their part of an entry (first and count multiples of 16; a 288-byte
// entry is 4-byte aligned).
V41_HD void widen_main_entry_part(const uint8_t* entry, int first, int count, uint32_t* row) {
  for (int c = first; c < first + count; c += kMxfp4GroupSize) {
    const uint32_t scale_pair = main_scale_pair(entry[kLatentDim / 2 + c / kMxfp4GroupSize]);
    for (int e = 0; e < kMxfp4GroupSize; e += 8)
      widen_main_eight(load_word(entry + (c + e) / 2), scale_pair, row + (c + e - first) / 2);
  }
}

// Value i of a window entry (FP8 e4m3, e8m0 scale per 32).
V41_HD float window_entry_value(const uint8_t* entry, int i) {
  return decode_e4m3(entry[i]) * decode_e8m0(entry[kLatentDim + i / kWindowScaleGroup]);
}

// Eight values of a window entry from dim `first` (a multiple of 8) widened
// to BF16 pairs in out[0..3], values low first, given their group's E8M0
// scale as a multiplier (window_widening_multiplier): the values read as
// words of 4 and widened by bit operations (widen_e4m3x4_to_bf16x4); a scale
// outside the exact range (multiplier 0) takes the per-value float path (a
// 528-byte entry is 4-byte aligned).
V41_HD void widen_window_eight(const uint8_t* entry, int first, uint32_t multiplier, uint32_t* out) {
  for (int w = 0; w < 2; ++w) {
    if (multiplier != 0) {
      widen_e4m3x4_to_bf16x4(load_word(entry + first + 4 * w), multiplier, out + 2 * w);
      continue;
    }
    for (int i = 0; i < 4; i += 2) {
      out[2 * w + i / 2] =
          static_cast<uint32_t>(bf16_bits(window_entry_value(entry, first + 4 * w + i))) |
          (static_cast<uint32_t>(bf16_bits(window_entry_value(entry, first + 4 * w + i + 1))) << 16);
    }
  }
}

// A window group's multiplier, for the group holding dim `dim`.
V41_HD uint32_t window_group_multiplier(const uint8_t* entry, int dim) {
  return window_widening_multiplier(entry[kLatentDim + dim / kWindowScaleGroup]);
}

// Dims [first, first + count) of a window entry widened to BF16 pairs in
// `row` (count / 2 words): each group's multiplier made once, its values
// widened eight at a time (first and count multiples of 32).
V41_HD void widen_window_entry_part(const uint8_t* entry, int first, int count, uint32_t* row) {
  for (int c = first; c < first + count; c += kWindowScaleGroup) {
    const uint32_t multiplier = window_group_multiplier(entry, c);
    for (int e = 0; e < kWindowScaleGroup; e += 8)
      widen_window_eight(entry, c + e, multiplier, row + (c + e - first) / 2);
  }
}

// What a slot of a request's key list holds: nothing (padding, or past the
// window's fill), a compressed main-KV entry, or a window entry.
enum class KeyKind : int { kNone = 0, kMain = 1, kWindow = 2 };

// The requests' key lists as the kernels walk them: a request's top-k slots
// (main-KV entries by index, -1 padding), then its window's 128 (the first
// window_len of them filled).
struct KeyList {
  const int32_t* topk;  // batch x topk_count
  int64_t topk_count;
  const uint8_t* main_kv;
  const uint8_t* window;  // batch x 128 entries
  const int32_t* window_len;
};
struct KeyEntry {
  KeyKind kind;
  const uint8_t* entry;  // null for no key
};
// Slot `slot` of request b's list; no key at or past `end` (its split's end).
V41_HD KeyEntry find_key(const KeyList& list, int64_t b, int64_t slot, int64_t end) {
  if (slot >= end) return {KeyKind::kNone, nullptr};
  if (slot < list.topk_count) {
    const int32_t index = list.topk[b * list.topk_count + slot];
    if (index < 0) return {KeyKind::kNone, nullptr};
    return {KeyKind::kMain, list.main_kv + static_cast<int64_t>(index) * kMainEntryBytes};
  }
  const int64_t w = slot - list.topk_count;
  if (w >= list.window_len[b]) return {KeyKind::kNone, nullptr};
  return {KeyKind::kWindow, list.window + (b * kWindowTokens + w) * kWindowEntryBytes};
}

// The online softmax's reference max, as FlashAttention-4 keeps it: a row's
// weights are taken against a max that moves only where a tile's scores pass
// it by more than kRescaleMargin (ln 256: weights up to 256, as exact in
// BF16 as any and far inside FP32's range in the sums; the softmax is the
// same in the end), so O, whose rescaling the tensor cores wait for, rarely
// needs it after a request's first tiles. Given the reference so far and the
// tile's max: the new reference and the factor O so far is multiplied by (1
// where the reference stays; 1 while no key was valid, -inf).
inline constexpr float kRescaleMargin = 8 * 0.69314718f;  // ln 256
struct ReferenceMax {
  float max;
  float correction;
};
V41_HD ReferenceMax next_reference_max(float reference, float tile_max) {
  const float top = fmaxf(reference, tile_max);
  const bool stays = reference != -INFINITY && top - reference <= kRescaleMargin;
  const float max = stays ? reference : top;
  return {max, stays || max == -INFINITY ? 1.0f : fast_exp(reference - max)};
}

// A head's splits merged with its sink by log-sum-exp weights: the max the
// weights are taken against, and the softmax's denominator (the sink's
// weight and each split's sum of exp(s - m) at its weight). The splits'
// maxima and sums lie `stride` floats apart; a split with no valid key (max
// -inf) weighs 0.
struct SinkMerge {
  float max;
  float denominator;
};
V41_HD SinkMerge merge_with_sink(float sink, const float* maxima, const float* sums, int64_t stride,
                                 int splits) {
  SinkMerge merge{sink, 0.0f};
  for (int s = 0; s < splits; ++s) merge.max = fmaxf(merge.max, maxima[s * stride]);
  merge.denominator = fast_exp(sink - merge.max);
  for (int s = 0; s < splits; ++s)
    merge.denominator += fast_exp(maxima[s * stride] - merge.max) * sums[s * stride];
  return merge;
}

// What turns one split's unnormalised output into the attention output, where
// the split is the whole key list, with its reference max m and its sum l
// (the merge of a single split; 0 where no key was valid, m = -inf).
V41_HD float whole_list_factor(float sink, float m, float l) {
  const SinkMerge merge = merge_with_sink(sink, &m, &l, 0, 1);
  return fast_exp(m - merge.max) / merge.denominator;
}

// A split's partial result of one head, as the kernels leave it in their
// workspace: 512 unnormalised outputs, then the running (reference) max and sum.
inline constexpr int kPartialFloats = kLatentDim + 2;

// Output dim i of a head, its splits merged with the sink: `first` the
// head's partial in split 0, the next split's `stride` floats on.
V41_HD float combine_split_partials(float sink, const float* first, int64_t stride, int splits, int i) {
  const SinkMerge merge = merge_with_sink(sink, first + kLatentDim, first + kLatentDim + 1, stride, splits);
  float acc = 0.0f;
  for (int s = 0; s < splits; ++s)
    acc += fast_exp(first[s * stride + kLatentDim] - merge.max) * first[s * stride + i];
  return acc / merge.denominator;
}

V41_HD void quantize_window_entry(const float* values, uint8_t* entry) {
  for (int g = 0; g < kLatentDim / kWindowScaleGroup; ++g) {
    float amax = 0.0f;
    for (int i = 0; i < kWindowScaleGroup; ++i) amax = fmaxf(amax, fabsf(values[g * kWindowScaleGroup + i]));
    entry[kLatentDim + g] = encode_e8m0_ceil(amax / 448.0f);
  }
  for (int i = 0; i < kLatentDim; ++i) {
    entry[i] = encode_e4m3(values[i] / decode_e8m0(entry[kLatentDim + i / kWindowScaleGroup]));
  }
}

}  // namespace v41sim::kernels

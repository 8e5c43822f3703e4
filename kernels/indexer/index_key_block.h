// One index key as V4.1 stores it: 128 values in FP4 E2M1 (64 bytes, low
// nibble first) and one E8M0 scale per 32 values (4 bytes) = 68 bytes.
// Shared by the CPU reference and the CUDA kernels.
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"

namespace v41sim::kernels {

inline constexpr int kIndexDim = 128;
inline constexpr int kIndexScaleGroup = 32;
inline constexpr int kIndexKeyBytes = kIndexDim / 2 + kIndexDim / kIndexScaleGroup;  // 68

V41_HD void quantize_index_key(const float* values, uint8_t* entry) {
  uint8_t* scales = entry + kIndexDim / 2;
  for (int g = 0; g < kIndexDim / kIndexScaleGroup; ++g) {
    float amax = 0.0f;
    for (int i = 0; i < kIndexScaleGroup; ++i) amax = fmaxf(amax, fabsf(values[g * kIndexScaleGroup + i]));
    scales[g] = encode_e8m0_ceil(amax / 6.0f);  // power-of-two scale: 6 * scale >= amax
  }
  for (int i = 0; i < kIndexDim; i += 2) {
    const float inv = 1.0f / decode_e8m0(scales[i / kIndexScaleGroup]);
    entry[i / 2] =
        static_cast<uint8_t>(encode_e2m1(values[i] * inv) | (encode_e2m1(values[i + 1] * inv) << 4));
  }
}

V41_HD float index_key_value(const uint8_t* entry, int i) {
  const uint8_t byte = entry[i / 2];
  const float scale = decode_e8m0(entry[kIndexDim / 2 + i / kIndexScaleGroup]);
  return decode_e2m1((i & 1) ? (byte >> 4) : (byte & 0xF)) * scale;
}

// Half of an index key (64 dims, two scale groups) widened to BF16 in `row`:
// 32 words of two values each, low first, as one of the two kernel threads
// per key does it (the key's bytes read as words: a 68-byte key is 4-byte
// aligned). Four codes at a time by byte permutes and one BF16x2 multiply
// by the group's 2^(code - 127) per pair (widen_e2m1x4_to_bf16x4), exact
// where every product is a normal BF16 (scale codes 2..252); other scales
// take widen_e2m1x2_to_bf16x2's float path. A missing key (entry null) is zeros.
V41_HD void widen_index_key_half(const uint8_t* entry, int half, uint32_t* row) {
  constexpr int kGroupsPerHalf = kIndexDim / 2 / kIndexScaleGroup;  // 2
  constexpr int kWordsPerGroup = kIndexScaleGroup / 8;              // 4 words of 8 codes
  for (int g = 0; g < kGroupsPerHalf; ++g) {
    uint32_t* out = row + g * (kIndexScaleGroup / 2);
    if (entry == nullptr) {
      for (int i = 0; i < kIndexScaleGroup / 2; ++i) out[i] = 0u;
      continue;
    }
    const int group = half * kGroupsPerHalf + g;
    const uint8_t scale = entry[kIndexDim / 2 + group];
    const bool exact = scale >= 2 && scale <= 252;
    const uint32_t multiplier =
        (static_cast<uint32_t>(scale) << 7) * 0x10001u;  // BF16 2^(scale - 127), twice
    for (int w = 0; w < kWordsPerGroup; ++w) {
      const uint32_t word = load_word(entry + group * (kIndexScaleGroup / 2) + 4 * w);
      if (exact) {
        widen_e2m1x4_to_bf16x4(static_cast<uint16_t>(word), multiplier, out + 4 * w);
        widen_e2m1x4_to_bf16x4(static_cast<uint16_t>(word >> 16), multiplier, out + 4 * w + 2);
        continue;
      }
      for (int b = 0; b < 4; ++b)
        out[4 * w + b] = widen_e2m1x2_to_bf16x2(static_cast<uint8_t>(word >> (8 * b)), scale);
    }
  }
}

// Order-preserving map of a float to an unsigned key (larger float, larger key).
V41_HD uint32_t ordered_bits(float x) {
  const uint32_t bits = float_bits(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

}  // namespace v41sim::kernels

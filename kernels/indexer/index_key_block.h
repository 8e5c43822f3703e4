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

// Order-preserving map of a float to an unsigned key (larger float, larger key).
V41_HD uint32_t ordered_bits(float x) {
  const uint32_t bits = float_bits(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

}  // namespace v41sim::kernels

// One scale group of V4.1's compressed main KV entry: 16 values as FP4 E2M1
// sharing one E4M3 scale (512 dims = 32 groups = 256 B of values + 32 B of
// scales = 288 B). Shared by the CPU reference and the CUDA kernel.
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"

namespace v41sim::kernels {

inline constexpr int kMxfp4GroupSize = 16;
inline constexpr float kE2M1Max = 6.0f;

// Bytes of one entry: dim/2 of packed FP4 values, then one scale per group.
V41_HD int64_t mxfp4_entry_bytes_device(int64_t dim) { return dim / 2 + dim / kMxfp4GroupSize; }

// Quantizes values[0..16) into 8 packed bytes (low nibble first) and a scale code.
V41_HD void quantize_mxfp4_group(const float* values, uint8_t* packed, uint8_t* scale_code) {
  float amax = 0.0f;
  for (int i = 0; i < kMxfp4GroupSize; ++i) amax = fmaxf(amax, fabsf(values[i]));
  *scale_code = encode_e4m3(amax / kE2M1Max);
  const float scale = decode_e4m3(*scale_code);
  const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < kMxfp4GroupSize; i += 2) {
    const uint8_t lo = encode_e2m1(values[i] * inverse);
    const uint8_t hi = encode_e2m1(values[i + 1] * inverse);
    packed[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

V41_HD void dequantize_mxfp4_group(const uint8_t* packed, uint8_t scale_code, float* values) {
  const float scale = decode_e4m3(scale_code);
  for (int i = 0; i < kMxfp4GroupSize; i += 2) {
    values[i] = decode_e2m1(packed[i / 2] & 0xF) * scale;
    values[i + 1] = decode_e2m1(packed[i / 2] >> 4) * scale;
  }
}

}  // namespace v41sim::kernels

// Seeded pseudo-random inputs generated on the device, so the harness times
// kernels on realistic values (never all zeros: top-k, softmax and the
// tensor cores' power draw all depend on the data) without spending minutes
// on host-side generation and copies for multi-gigabyte sweeps.
#pragma once

#include <cstdint>

namespace v41sim::kernels {

// Uniform in [-1, 1).
void fill_uniform(float* out, int64_t count, uint64_t seed);
// 68-byte index keys: random E2M1 codes, E8M0 scales near 1 (2^-3..2^3).
void fill_index_keys(uint8_t* keys, int64_t count, uint64_t seed);
// FP8 E4M3 bytes of magnitude 2^-4..2^3, either sign, never NaN.
void fill_e4m3(uint8_t* out, int64_t count, uint64_t seed);
// MXFP4 weights: `values` E2M1 codes (random, packed two per byte) and one
// E8M0 scale per 32 of weight-sized magnitude, codes kWeightScaleCodeMin..Max
// (2^-10..2^-4).
inline constexpr uint8_t kWeightScaleCodeMin = 117;
inline constexpr uint8_t kWeightScaleCodeMax = 123;
void fill_mxfp4_weights(uint8_t* packed, uint8_t* scales, int64_t values, uint64_t seed);
// BF16 bits of uniform values in [-1, 1).
void fill_bf16(uint16_t* out, int64_t count, uint64_t seed);

}  // namespace v41sim::kernels

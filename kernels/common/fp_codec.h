// Encoders and decoders for the OCP Microscaling element formats our caches
// use: FP4 E2M1 values and FP8 E4M3 (OCP "FN": no infinities, max 448).
// Round to nearest, ties to even; out-of-range magnitudes saturate.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/host_device.h"

namespace v41sim::kernels {

// E2M1 magnitudes by 3-bit code (sign in bit 3): 0, 0.5, 1, 1.5, 2, 3, 4, 6.
V41_HD float e2m1_magnitude(uint8_t code) {
  const uint8_t exponent = (code >> 1) & 0x3;
  const float mantissa = (code & 0x1) ? 0.5f : 0.0f;
  if (exponent == 0) return mantissa;  // subnormal: 0 or 0.5
  return (1.0f + mantissa) * static_cast<float>(1 << (exponent - 1));
}

V41_HD float decode_e2m1(uint8_t nibble) {
  const float magnitude = e2m1_magnitude(nibble & 0x7);
  return (nibble & 0x8) ? -magnitude : magnitude;
}

// Nearest E2M1 magnitude, ties to the even code, by counting the midpoints
// between neighbouring magnitudes that |x| passes (a midpoint itself counts
// where the code above it is even): seven compares, no search, as the KV
// quantizer does it per value. Saturates at 6; NaN and values that round to
// zero give +0.
V41_HD uint8_t encode_e2m1(float x) {
  const float a = fabsf(x);
  const int code =
      (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return static_cast<uint8_t>((x < 0.0f && code != 0 ? 0x8 : 0x0) | code);
}

V41_HD float decode_e4m3(uint8_t code) {
  const int exponent = (code >> 3) & 0xF;
  const int mantissa = code & 0x7;
  const float magnitude = exponent == 0 ? ldexpf(static_cast<float>(mantissa), -9)
                                        : ldexpf(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

V41_HD uint8_t encode_e4m3(float x) {
  constexpr uint8_t kMaxCode = 0x7E;  // 448
  const uint8_t sign = x < 0.0f ? 0x80 : 0x00;
  const float a = fabsf(x);
  if (!(a == a)) return 0x7F;  // NaN
  if (a >= 448.0f) return static_cast<uint8_t>(sign | kMaxCode);
  if (a < ldexpf(1.0f, -6)) {  // subnormal range: steps of 2^-9
    return static_cast<uint8_t>(sign | static_cast<uint8_t>(rintf(ldexpf(a, 9))));
  }
  int e2 = 0;
  const float fraction = frexpf(a, &e2);  // a = fraction * 2^e2, fraction in [0.5, 1)
  int exponent = e2 - 1;
  int mantissa = static_cast<int>(rintf((fraction * 2.0f - 1.0f) * 8.0f));
  if (mantissa == 8) {
    mantissa = 0;
    ++exponent;
  }
  const int code = ((exponent + 7) << 3) | mantissa;
  return static_cast<uint8_t>(sign | (code > kMaxCode ? kMaxCode : code));
}

// E8M0: a power-of-two scale 2^(code - 127) (OCP MX); code 255 is NaN.
V41_HD float decode_e8m0(uint8_t code) { return ldexpf(1.0f, static_cast<int>(code) - 127); }

// The smallest power of two >= x (x > 0), as an E8M0 code, clamped to the finite range.
V41_HD uint8_t encode_e8m0_ceil(float x) {
  if (!(x > 0.0f)) return 0;
  int e2 = 0;
  const float fraction = frexpf(x, &e2);  // x = fraction * 2^e2, fraction in [0.5, 1)
  int exponent = fraction == 0.5f ? e2 - 1 : e2;
  exponent = exponent < -127 ? -127 : (exponent > 127 ? 127 : exponent);
  return static_cast<uint8_t>(exponent + 127);
}

// BF16 as raw bits, rounded to nearest even from float (NaN stays NaN).
V41_HD uint16_t bf16_bits(float x) {
  const uint32_t bits = float_bits(x);
  if ((bits & 0x7F800000u) == 0x7F800000u && (bits & 0x007FFFFFu) != 0) return 0x7FC0;
  return static_cast<uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// A BF16 value from its bits (exact).
V41_HD float bf16_value(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

// E8M0 to float by its bits (no ldexpf: the expert GEMM decodes one per
// accumulator pair per 32 weights). Codes 1..254 are normal floats; code 0 is
// 2^-127, a float subnormal; 255 is NaN.
V41_HD float e8m0_value(uint8_t code) {
  if (code == 0) return bits_float(0x00400000u);
  if (code == 0xFF) return bits_float(0x7FC00000u);
  return bits_float(static_cast<uint32_t>(code) << 23);
}

// E8M0 as BF16 bits, the same value (BF16 has float's exponent field, so
// 2^-127 is a BF16 subnormal as it is a float one): the W4A16 expert GEMM
// multiplies a group's widened weights by it.
V41_HD uint32_t e8m0_as_bf16(uint8_t code) {
  if (code == 0) return 0x0040u;
  if (code == 0xFF) return 0x7FC0u;
  return static_cast<uint32_t>(code) << 7;
}

// Bytes of (hi:lo) picked by the low 3 bits of each selector nibble: CUDA's
// __byte_perm on the device, the same selection written out on the host.
V41_HD uint32_t byte_select(uint32_t lo, uint32_t hi, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  return __byte_perm(lo, hi, selector & 0x7777u);
#else
  const uint64_t bytes = (static_cast<uint64_t>(hi) << 32) | lo;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t pick = (selector >> (4 * i)) & 0x7u;
    out |= static_cast<uint32_t>((bytes >> (8 * pick)) & 0xFFu) << (8 * i);
  }
  return out;
#endif
}

// PTX prmt in its default mode: each selector nibble picks a byte of (hi:lo)
// by its low 3 bits, and its bit 3 asks for that byte's sign bit replicated
// over the whole output byte instead (0x00 or 0xFF).
V41_HD uint32_t byte_permute(uint32_t lo, uint32_t hi, uint32_t selector) {
#if defined(__CUDA_ARCH__)
  uint32_t out;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(out) : "r"(lo), "r"(hi), "r"(selector));
  return out;
#else
  const uint64_t bytes = (static_cast<uint64_t>(hi) << 32) | lo;
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nibble = (selector >> (4 * i)) & 0xFu;
    uint32_t byte = static_cast<uint32_t>((bytes >> (8 * (nibble & 0x7u))) & 0xFFu);
    if (nibble & 0x8u) byte = (byte & 0x80u) ? 0xFFu : 0x00u;
    out |= byte << (8 * i);
  }
  return out;
#endif
}

// Four E2M1 codes (nibble i = element i, low nibble first) widened to four
// E4M3 codes (byte i = element i). Exact: every E2M1 value is an E4M3 value.
// The magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 as E4M3 bytes, by 3-bit code:
// 0x00 0x30 0x38 0x3C | 0x40 0x44 0x48 0x4C, one byte permute. The sign of
// code i is bit 4i+3: the top bits of bytes 0 and 1 of (x << 4) are the signs
// of codes 0 and 2, those of x the signs of codes 1 and 3, so a second permute
// in sign-replicate mode spreads them to bytes 0..3. Five integer operations
// for four values (the simulator's widening cost is counted from this).
// The E4M3 bytes of the eight E2M1 magnitudes, codes 0-3 in `low` and 4-7 in
// `high`: the table one byte permute looks the magnitudes up in.
struct E2m1ToE4m3Table {
  uint32_t low, high;
};
inline constexpr E2m1ToE4m3Table kE2m1AsE4m3{0x3C383000u, 0x4C484440u};

V41_HD uint32_t widen_e2m1x4_to_e4m3x4(uint16_t nibbles, E2m1ToE4m3Table table) {
  const uint32_t x = nibbles;
  const uint32_t magnitudes = byte_select(table.low, table.high, x & 0x7777u);
  const uint32_t signs = byte_permute(x << 4, x, 0xD9C8u) & 0x80808080u;
  return magnitudes | signs;
}

V41_HD uint32_t widen_e2m1x4_to_e4m3x4(uint16_t nibbles) {
  return widen_e2m1x4_to_e4m3x4(nibbles, kE2m1AsE4m3);
}

// The table for the magnitudes times 2^-shift, each rounded to E4M3 (to
// nearest, ties to even): a group's scale folded into its values. Exact for
// shift <= 8: the smallest product, 0.5 x 2^-8, is E4M3's smallest subnormal
// 2^-9, and 1.5 x 2^-8 its third; beyond that the small magnitudes round.
V41_HD E2m1ToE4m3Table e2m1_to_e4m3_table(int shift) {
  uint32_t bytes[2] = {0, 0};
  for (int code = 0; code < 8; ++code) {
    const uint8_t byte = encode_e4m3(ldexpf(e2m1_magnitude(static_cast<uint8_t>(code)), -shift));
    bytes[code / 4] |= static_cast<uint32_t>(byte) << (8 * (code % 4));
  }
  return {bytes[0], bytes[1]};
}

// Two BF16 products, rounded to nearest even: the device's mul.rn.bf16x2; on
// the host the float products rounded to BF16.
V41_HD uint32_t mul_bf16x2(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  uint32_t out;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(out) : "r"(a), "r"(b));
  return out;
#else
  const auto half = [](uint32_t x, int i) { return bits_float(((x >> (16 * i)) & 0xFFFFu) << 16); };
  return static_cast<uint32_t>(bf16_bits(half(a, 0) * half(b, 0))) |
         (static_cast<uint32_t>(bf16_bits(half(a, 1) * half(b, 1))) << 16);
#endif
}

// Four E2M1 codes (nibble i = value i, low nibble first) times a BF16 scale
// pair (the same scale in both halves), as four BF16 values in two words
// (values 0 and 1, then 2 and 3; low half first). The BF16 bits of the
// magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 are 0x0000 0x3F00 0x3F80 0x3FC0 |
// 0x4000 0x4040 0x4080 0x40C0: one byte permute picks the four high bytes,
// one the four low bytes, the signs join the high bytes as in
// widen_e2m1x4_to_e4m3x4, two permutes interleave low and high bytes, and
// two BF16x2 multiplies apply the scale. Exact for an E4M3 scale: 2
// significant bits times 4 fit BF16's 8. Eight integer operations and two
// multiplies for four values (the simulator's widening cost is counted from this).
V41_HD void widen_e2m1x4_to_bf16x4(uint16_t nibbles, uint32_t scale_bf16x2, uint32_t* out) {
  constexpr uint32_t kHighBytesLo = 0x3F3F3F00u, kHighBytesHi = 0x40404040u;
  constexpr uint32_t kLowBytesLo = 0xC0800000u, kLowBytesHi = 0xC0804000u;
  const uint32_t x = nibbles;
  const uint32_t selector = x & 0x7777u;
  const uint32_t signs = byte_permute(x << 4, x, 0xD9C8u);
  const uint32_t high = byte_select(kHighBytesLo, kHighBytesHi, selector) | (signs & 0x80808080u);
  const uint32_t low = byte_select(kLowBytesLo, kLowBytesHi, selector);
  out[0] = mul_bf16x2(byte_select(low, high, 0x5140u), scale_bf16x2);
  out[1] = mul_bf16x2(byte_select(low, high, 0x7362u), scale_bf16x2);
}

// Four E4M3 values (byte i = value i) as four BF16 values in two words
// (values 0 and 1, then 2 and 3; low half first), times a BF16 multiplier
// pair. A byte moved to the high byte of a BF16 half keeps its sign at bit 15;
// its exponent and mantissa shifted down 4 bits land in BF16's exponent and
// mantissa fields as the value times 2^-120 (the bias differs by 120; E4M3
// subnormals become BF16 subnormals, scaled the same). The multiplier puts
// back 2^120 and the block scale (window_widening_multiplier). Per 4 values:
// two byte permutes, two shifts and four logic operations, and two BF16x2
// multiplies.
V41_HD void widen_e4m3x4_to_bf16x4(uint32_t bytes, uint32_t multiplier_bf16x2, uint32_t* out) {
  const uint32_t high01 = byte_select(0u, bytes, 0x5040u);  // b0 << 8 | b1 << 24
  const uint32_t high23 = byte_select(0u, bytes, 0x7060u);  // b2 << 8 | b3 << 24
  const auto place = [](uint32_t high) { return (high & 0x80008000u) | ((high >> 4) & 0x07F007F0u); };
  out[0] = mul_bf16x2(place(high01), multiplier_bf16x2);
  out[1] = mul_bf16x2(place(high23), multiplier_bf16x2);
}

// The BF16 multiplier pair for widen_e4m3x4_to_bf16x4 under an E8M0 scale
// 2^(code - 127): 2^(code - 7), or 0 where the widening would not be exact
// (codes below 3: products below BF16's subnormal step; above 134: the
// multiplier itself leaves BF16's range), so callers take the float path.
V41_HD uint32_t window_widening_multiplier(uint8_t scale_code) {
  if (scale_code < 3 || scale_code > 134) return 0;
  const uint32_t bits = (static_cast<uint32_t>(scale_code) + 120u) << 7;
  return bits | (bits << 16);
}

// Two E2M1 codes (low nibble first) times an E8M0 scale 2^(scale_code - 127),
// as two BF16 values packed low first, without float math: the BF16 bits of
// the E2M1 magnitude (0, 0.5, 1, 1.5, 2, 3, 4, 6) with the scale's exponent
// added. Exact, as the float product rounded to BF16 would be: an E2M1 value
// has 2 significant bits, BF16 8. Scale codes outside 2..252 (where a product
// could leave BF16's normal range, and 255, NaN) take the float path.
V41_HD uint32_t widen_e2m1x2_to_bf16x2(uint8_t codes, uint8_t scale_code) {
  if (scale_code < 2 || scale_code > 252) {
    const float scale = decode_e8m0(scale_code);
    return static_cast<uint32_t>(bf16_bits(decode_e2m1(codes & 0xF) * scale)) |
           (static_cast<uint32_t>(bf16_bits(decode_e2m1(codes >> 4) * scale)) << 16);
  }
  constexpr uint64_t kMagnitudes0to3 = 0x3FC03F803F000000ull, kMagnitudes4to7 = 0x40C0408040404000ull;
  const int exponent_shift = (static_cast<int>(scale_code) - 127) << 7;  // BF16 exponent field: bits 7..14
  const auto widen = [exponent_shift](uint32_t code) {
    const uint32_t magnitude = code & 0x7u;
    if (magnitude == 0) return (code & 0x8u) << 12;  // +-0: no exponent to shift
    const uint64_t table = magnitude < 4 ? kMagnitudes0to3 : kMagnitudes4to7;
    const int bits = static_cast<int>((table >> (16 * (magnitude & 0x3u))) & 0xFFFFu) + exponent_shift;
    return static_cast<uint32_t>(bits) | ((code & 0x8u) << 12);
  };
  return widen(codes & 0xFu) | (widen(static_cast<uint32_t>(codes) >> 4) << 16);
}

}  // namespace v41sim::kernels

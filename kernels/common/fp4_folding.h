// FP4 rows of 128 values with an E8M0 scale per 32 (MXFP4 weights, V4.1's
// index keys) made FP8 for a tensor-core step that takes one scale per row:
// each group's scale over the row's largest is folded into its values
// (E2M1 x 2^-shift, rounded to E4M3 by a byte-permute table: exact for shifts
// up to 8), and the row's largest scale is applied after the step. Exact
// while a row's four group scales lie within 2^8 of each other.
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"
#include "kernels/common/host_device.h"

namespace v41sim::kernels {

inline constexpr int kFoldingTables = 16;  // shifts 0-15; from 13 on every magnitude rounds to zero

// The largest of four E8M0 codes (a word's bytes).
V41_HD uint32_t largest_code(uint32_t codes) {
  const uint32_t a = codes & 0xFFu, b = (codes >> 8) & 0xFFu, c = (codes >> 16) & 0xFFu, d = codes >> 24;
  const uint32_t ab = a > b ? a : b, cd = c > d ? c : d;
  return ab > cd ? ab : cd;
}

// The row's scale, applied after the step: its largest group scale.
V41_HD float row_scale_of(uint32_t codes) { return e8m0_value(static_cast<uint8_t>(largest_code(codes))); }

// Sixteen codes (two words, low nibble first) of group `group` of a row
// whose four group codes are `codes`, as sixteen E4M3 bytes in `words`.
V41_HD void fold_and_widen_sixteen(uint32_t low, uint32_t high, uint32_t codes, int group,
                                   const E2m1ToE4m3Table* tables, uint32_t (&words)[4]) {
  const uint32_t shift = largest_code(codes) - ((codes >> (8 * group)) & 0xFFu);
  const E2m1ToE4m3Table table = tables[shift < kFoldingTables ? shift : kFoldingTables - 1];
  words[0] = widen_e2m1x4_to_e4m3x4(static_cast<uint16_t>(low & 0xFFFFu), table);
  words[1] = widen_e2m1x4_to_e4m3x4(static_cast<uint16_t>(low >> 16), table);
  words[2] = widen_e2m1x4_to_e4m3x4(static_cast<uint16_t>(high & 0xFFFFu), table);
  words[3] = widen_e2m1x4_to_e4m3x4(static_cast<uint16_t>(high >> 16), table);
}

}  // namespace v41sim::kernels

// CPU reference of V4.1 sparse attention decode (see sparse_decode_types.h).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention/sparse_decode_types.h"

namespace v41sim::kernels {

struct SparseDecodeInputs {
  SparseDecodeShape shape;
  std::vector<uint16_t> q;          // batch x heads x 512, BF16 as the query projection writes them
  std::vector<uint8_t> main_kv;     // main_entries x 288
  std::vector<int32_t> topk;        // batch x topk
  std::vector<uint8_t> window;      // batch x 128 x 528
  std::vector<int32_t> window_len;  // batch
  std::vector<float> sink;          // heads
};

// Random but valid inputs (seeded): used by tests and the harness.
SparseDecodeInputs make_sparse_decode_inputs(const SparseDecodeShape& shape, uint32_t seed);

// The output in FP32 (the kernels write BF16, as FlashMLA does; their checks
// allow that rounding).
std::vector<float> sparse_decode_reference(const SparseDecodeInputs& in);

}  // namespace v41sim::kernels

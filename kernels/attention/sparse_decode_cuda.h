// Host API of the V4.1 sparse attention decode kernel (plain C++).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention/sparse_decode_reference.h"

namespace v41sim::kernels {

std::vector<float> sparse_decode_cuda(const SparseDecodeInputs& in);

// Device buffers for the harness; `splits` 0 picks a split count that fills the SMs.
struct SparseDecodeDevice {
  SparseDecodeShape shape;
  const float* q;
  const uint8_t* main_kv;
  const int32_t* topk;
  const uint8_t* window;
  const int32_t* window_len;
  const float* sink;
  float* out;
  float* workspace;  // sparse_decode_workspace_floats(shape, splits)
  int splits;
};
int sparse_decode_splits(const SparseDecodeShape& shape, int sms);
int64_t sparse_decode_workspace_floats(const SparseDecodeShape& shape, int splits);
void launch_sparse_decode(const SparseDecodeDevice& d);

}  // namespace v41sim::kernels

// Host API of the V4.1 sparse attention decode kernel (plain C++).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/attention/sparse_decode_reference.h"
#include "kernels/attention/sparse_decode_splits.h"

namespace v41sim::kernels {

// The FP32-unit baseline and the tensor-core kernels (BF16 mma.sync; BF16
// wgmma, sm_90 devices only: it throws elsewhere); same inputs, same results
// within BF16 rounding of the softmax weights. The tensor-core kernels take
// `splits` (0: sparse_decode_splits' choice), so a check can run them whole
// (1: no partials, no combine) and split.
std::vector<float> sparse_decode_cuda(const SparseDecodeInputs& in);
std::vector<float> sparse_decode_mma_cuda(const SparseDecodeInputs& in, int splits = 0);
std::vector<float> sparse_decode_wgmma_cuda(const SparseDecodeInputs& in, int splits = 0);

// Device buffers for the harness; `splits` as sparse_decode_splits chooses them.
struct SparseDecodeDevice {
  SparseDecodeShape shape;
  const uint16_t* q;  // BF16, batch x heads x 512
  const uint8_t* main_kv;
  const int32_t* topk;
  const uint8_t* window;
  const int32_t* window_len;
  const float* sink;
  uint16_t* out;     // BF16, batch x heads x 512
  float* workspace;  // sparse_decode_workspace_floats(shape, splits); unused by the
                     // tensor-core kernel at 1 split, which writes `out` itself
  int splits;
};
int64_t sparse_decode_workspace_floats(const SparseDecodeShape& shape, int splits);
void launch_sparse_decode(const SparseDecodeDevice& d);
void launch_sparse_decode_mma(const SparseDecodeDevice& d);
void launch_sparse_decode_wgmma(const SparseDecodeDevice& d);

// Uploads the inputs, runs `launch` with `splits` (0: sparse_decode_splits'
// count), downloads the output (BF16, returned widened to float).
std::vector<float> run_sparse_decode(const SparseDecodeInputs& in, void (*launch)(const SparseDecodeDevice&),
                                     int splits);

}  // namespace v41sim::kernels

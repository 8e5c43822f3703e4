// The V4.1 encoder compressor at ratio 2: each compressed entry pools two
// consecutive tokens' projected KV with per-dimension softmax weights over
// their gate scores plus a learned position bias (V4's `ape`), then the
// MXFP4 quantizer writes the 288-byte cache entry. (RoPE on the last 64
// dims, applied before quantization in the model, is not part of this kernel.)
//   kv, score: tokens x 512 (float); ape: 2 x 512; out: tokens/2 x 288 bytes
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/host_device.h"
#include "kernels/kv_quant/mxfp4_kv_block.h"

namespace v41sim::kernels {

inline constexpr int kCompressRatio = 2;

// Pools the 16 values of scale group `group` of entry `entry` into `pooled`.
V41_HD void pool_ratio2_group(const float* kv, const float* score, const float* ape, int64_t entry, int group,
                              float* pooled) {
  constexpr int kDim = 512;
  for (int i = 0; i < kMxfp4GroupSize; ++i) {
    const int d = group * kMxfp4GroupSize + i;
    const int64_t t0 = entry * kCompressRatio;
    const float s0 = score[t0 * kDim + d] + ape[d];
    const float s1 = score[(t0 + 1) * kDim + d] + ape[kDim + d];
    const float m = fmaxf(s0, s1);
    const float e0 = expf(s0 - m);
    const float e1 = expf(s1 - m);
    pooled[i] = (e0 * kv[t0 * kDim + d] + e1 * kv[(t0 + 1) * kDim + d]) / (e0 + e1);
  }
}

std::vector<uint8_t> compress_ratio2_reference(const std::vector<float>& kv, const std::vector<float>& score,
                                               const std::vector<float>& ape, int64_t tokens);
std::vector<uint8_t> compress_ratio2_cuda(const std::vector<float>& kv, const std::vector<float>& score,
                                          const std::vector<float>& ape, int64_t tokens);
void launch_compress_ratio2(const float* kv, const float* score, const float* ape, uint8_t* out,
                            int64_t tokens);

}  // namespace v41sim::kernels

// The V4.1 encoder compressor at ratio 2: each compressed entry pools two
// consecutive tokens' projected KV with per-dimension softmax weights over
// their gate scores plus a learned position bias (V4's `ape`), then the
// MXFP4 quantizer writes the 288-byte cache entry. (RoPE on the last 64
// dims, applied before quantization in the model, is not part of this kernel.)
//   kv, score: tokens x 512 (the reference takes floats, the CUDA kernel BF16
//   bits); ape: 2 x 512 floats; out: tokens/2 x 288 bytes
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/common/host_device.h"
#include "kernels/kv_quant/mxfp4_kv_block.h"

namespace v41sim::kernels {

inline constexpr int kCompressRatio = 2;

inline constexpr int kCompressDim = 512;

// Where scale group `group` of entry `entry` starts: its first token's row
// (the second token's is one row of kCompressDim later) and its first dim.
V41_HD int64_t ratio2_group_offset(int64_t entry, int group) {
  return entry * kCompressRatio * kCompressDim + group * kMxfp4GroupSize;
}

// Pools one scale group's 16 dims of two tokens: kv0/kv1 and score0/score1
// are the tokens' values and gate scores, ape0/ape1 the position biases of
// the two slots, each 16 values.
V41_HD void pool_ratio2_values(const float* kv0, const float* kv1, const float* score0, const float* score1,
                               const float* ape0, const float* ape1, float* pooled) {
  for (int i = 0; i < kMxfp4GroupSize; ++i) {
    const float s0 = score0[i] + ape0[i];
    const float s1 = score1[i] + ape1[i];
    const float m = fmaxf(s0, s1);
    const float e0 = expf(s0 - m);
    const float e1 = expf(s1 - m);
    pooled[i] = (e0 * kv0[i] + e1 * kv1[i]) / (e0 + e1);
  }
}

std::vector<uint8_t> compress_ratio2_reference(const std::vector<float>& kv, const std::vector<float>& score,
                                               const std::vector<float>& ape, int64_t tokens);
// The CUDA kernel takes kv and score as BF16 bits, as the compressor's projection writes them.
std::vector<uint8_t> compress_ratio2_cuda(const std::vector<uint16_t>& kv, const std::vector<uint16_t>& score,
                                          const std::vector<float>& ape, int64_t tokens);
void launch_compress_ratio2(const uint16_t* kv, const uint16_t* score, const float* ape, uint8_t* out,
                            int64_t tokens);

}  // namespace v41sim::kernels

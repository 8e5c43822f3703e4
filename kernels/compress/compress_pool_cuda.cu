// Ratio-2 compressor: one thread per (entry, scale group): pool 16 dims of
// two tokens, then quantize them into the entry (memory-bound: reads 2 x 2 x
// 16 BF16 values, as the compressor's projection writes them, and writes 9
// bytes), with 16-byte loads and one 8-byte store of the packed values
// (vector_access.cuh says why). The position biases are FP32 parameters.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/vector_access.cuh"
#include "kernels/compress/compress_pool.h"

namespace v41sim::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kDim = kCompressDim;
constexpr int kGroups = kDim / kMxfp4GroupSize;

__global__ void compress_ratio2_kernel(const uint16_t* __restrict__ kv, const uint16_t* __restrict__ score,
                                       const float* __restrict__ ape, uint8_t* __restrict__ out,
                                       int64_t entries) {
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flat >= entries * kGroups) return;
  const int64_t entry = flat / kGroups;
  const int group = static_cast<int>(flat % kGroups);
  const int64_t at = ratio2_group_offset(entry, group);
  const int d = group * kMxfp4GroupSize;
  float kv0[kMxfp4GroupSize], kv1[kMxfp4GroupSize], s0[kMxfp4GroupSize], s1[kMxfp4GroupSize];
  float ape0[kMxfp4GroupSize], ape1[kMxfp4GroupSize];
  load_bf16x16(kv + at, kv0);
  load_bf16x16(kv + at + kDim, kv1);
  load_bf16x16(score + at, s0);
  load_bf16x16(score + at + kDim, s1);
  load_floats16(ape + d, ape0);
  load_floats16(ape + kDim + d, ape1);
  float pooled[kMxfp4GroupSize];
  pool_ratio2_values(kv0, kv1, s0, s1, ape0, ape1, pooled);
  uint8_t* e = out + entry * mxfp4_entry_bytes_device(kDim);
  uint8_t packed[kMxfp4GroupSize / 2];
  quantize_mxfp4_group(pooled, packed, e + kDim / 2 + group);
  store_bytes8(e + group * (kMxfp4GroupSize / 2), packed);
}

}  // namespace

void launch_compress_ratio2(const uint16_t* kv, const uint16_t* score, const float* ape, uint8_t* out,
                            int64_t tokens) {
  if (tokens <= 0 || tokens % kCompressRatio != 0)
    throw std::invalid_argument("compress ratio 2: tokens must be even");
  if (!aligned_to(kv, 16) || !aligned_to(score, 16) || !aligned_to(ape, 16) || !aligned_to(out, 8))
    throw std::invalid_argument("compress ratio 2: inputs must be 16-byte and entries 8-byte aligned");
  const int64_t work = tokens / kCompressRatio * kGroups;
  compress_ratio2_kernel<<<static_cast<unsigned>((work + kThreads - 1) / kThreads), kThreads>>>(
      kv, score, ape, out, tokens / kCompressRatio);
}

std::vector<uint8_t> compress_ratio2_cuda(const std::vector<uint16_t>& kv, const std::vector<uint16_t>& score,
                                          const std::vector<float>& ape, int64_t tokens) {
  const std::size_t out_bytes =
      static_cast<std::size_t>(tokens / kCompressRatio * mxfp4_entry_bytes_device(kDim));
  const DeviceBuffer<uint16_t> d_kv(kv), d_score(score);
  const DeviceBuffer<float> d_ape(ape);
  const DeviceBuffer<uint8_t> d_out(out_bytes);
  launch_compress_ratio2(d_kv.get(), d_score.get(), d_ape.get(), d_out.get(), tokens);
  CUDA_CHECK(cudaGetLastError());
  return d_out.download(out_bytes);
}

}  // namespace v41sim::kernels

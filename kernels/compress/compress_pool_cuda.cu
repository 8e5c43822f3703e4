// Ratio-2 compressor: one thread per (entry, scale group): pool 16 dims of
// two tokens, then quantize them into the entry (memory-bound: reads 2 x 2 x
// 16 floats, writes 9 bytes).
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/compress/compress_pool.h"

namespace v41sim::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kDim = 512;
constexpr int kGroups = kDim / kMxfp4GroupSize;

__global__ void compress_ratio2_kernel(const float* __restrict__ kv, const float* __restrict__ score,
                                       const float* __restrict__ ape, uint8_t* __restrict__ out,
                                       int64_t entries) {
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (flat >= entries * kGroups) return;
  const int64_t entry = flat / kGroups;
  const int group = static_cast<int>(flat % kGroups);
  float pooled[kMxfp4GroupSize];
  pool_ratio2_group(kv, score, ape, entry, group, pooled);
  uint8_t* e = out + entry * mxfp4_entry_bytes_device(kDim);
  quantize_mxfp4_group(pooled, e + group * (kMxfp4GroupSize / 2), e + kDim / 2 + group);
}

}  // namespace

void launch_compress_ratio2(const float* kv, const float* score, const float* ape, uint8_t* out,
                            int64_t tokens) {
  if (tokens <= 0 || tokens % kCompressRatio != 0)
    throw std::invalid_argument("compress ratio 2: tokens must be even");
  const int64_t work = tokens / kCompressRatio * kGroups;
  compress_ratio2_kernel<<<static_cast<unsigned>((work + kThreads - 1) / kThreads), kThreads>>>(
      kv, score, ape, out, tokens / kCompressRatio);
}

std::vector<uint8_t> compress_ratio2_cuda(const std::vector<float>& kv, const std::vector<float>& score,
                                          const std::vector<float>& ape, int64_t tokens) {
  const std::size_t out_bytes =
      static_cast<std::size_t>(tokens / kCompressRatio * mxfp4_entry_bytes_device(kDim));
  const DeviceBuffer<float> d_kv(kv), d_score(score), d_ape(ape);
  const DeviceBuffer<uint8_t> d_out(out_bytes);
  launch_compress_ratio2(d_kv.get(), d_score.get(), d_ape.get(), d_out.get(), tokens);
  CUDA_CHECK(cudaGetLastError());
  return d_out.download(out_bytes);
}

}  // namespace v41sim::kernels

// V4.1 sparse attention decode on the GPU: split-KV, flash-decoding style.
//
// Grid (splits, batch): each CTA takes a slice of one request's key list
// (its top-k compressed entries, then its window), keeps all of the
// request's query heads in shared memory (MQA: every head reads the same
// keys, so each key is fetched and widened once per CTA), walks the slice in
// tiles of 16 keys with an online softmax, and writes an unnormalised partial
// output with its running max and sum. A second kernel merges the splits and
// the attention sink with log-sum-exp weights and writes the output. Queries
// come in and outputs go out in BF16, as FlashMLA takes and writes them. Math
// is FP32 on CUDA cores: a correctness-first baseline for the tensor-core version.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/attention/sparse_decode_split.cuh"
#include "kernels/common/bf16_values.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/dynamic_shared_memory.cuh"

namespace v41sim::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxHeads = 64;
constexpr int kTile = 16;
constexpr int kThreadsPerHead = kThreads / kMaxHeads;         // 4
constexpr int kDimsPerThread = kLatentDim / kThreadsPerHead;  // 128
constexpr int kKeysPerThread = kTile / kThreadsPerHead;       // 4

struct SharedLayout {
  static constexpr int kQ = kMaxHeads * kLatentDim;
  static constexpr int kKeys = kTile * kLatentDim;
  static constexpr int kScores = kMaxHeads * kTile;
  static constexpr std::size_t bytes() {
    return sizeof(float) * (kQ + kKeys + kScores) + sizeof(int) * kTile;
  }
};

__global__ void sparse_decode_split_kernel(SparseDecodeDevice d) {
  extern __shared__ float smem[];
  float* q_s = smem;
  float* keys_s = q_s + SharedLayout::kQ;
  float* scores_s = keys_s + SharedLayout::kKeys;
  int* valid_s = reinterpret_cast<int*>(scores_s + SharedLayout::kScores);

  const int64_t b = blockIdx.y;
  const int split = blockIdx.x;
  const int64_t heads = d.shape.heads;
  const auto [begin, end] = split_range(d, split);
  const float scale = rsqrtf(static_cast<float>(kLatentDim));

  for (int64_t i = threadIdx.x; i < heads * kLatentDim; i += kThreads)
    q_s[i] = bf16_value(d.q[b * heads * kLatentDim + i]);
  const int head = threadIdx.x / kThreadsPerHead;
  const int part = threadIdx.x % kThreadsPerHead;
  const bool active = head < heads;
  float o[kDimsPerThread];
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) o[i] = 0.0f;
  float m = -INFINITY;
  float l = 0.0f;

  for (int64_t tile = begin; tile < end; tile += kTile) {
    __syncthreads();
    // Widen the tile's keys into shared memory, once for all heads.
    for (int idx = threadIdx.x; idx < kTile * kLatentDim; idx += kThreads) {
      const int k = idx / kLatentDim;
      const int i = idx % kLatentDim;
      const KeyEntry key = find_key(key_list(d), b, tile + k, end);
      keys_s[idx] = key.kind == KeyKind::kNone   ? 0.0f
                    : key.kind == KeyKind::kMain ? main_entry_value(key.entry, i)
                                                 : window_entry_value(key.entry, i);
      if (i == 0) valid_s[k] = key.kind != KeyKind::kNone;
    }
    __syncthreads();
    if (active) {
#pragma unroll
      for (int kk = 0; kk < kKeysPerThread; ++kk) {
        const int k = part * kKeysPerThread + kk;
        float dot = 0.0f;
        for (int i = 0; i < kLatentDim; ++i) dot += q_s[head * kLatentDim + i] * keys_s[k * kLatentDim + i];
        scores_s[head * kTile + k] = valid_s[k] ? dot * scale : -INFINITY;
      }
    }
    __syncthreads();
    if (!active) continue;
    float tile_max = -INFINITY;
    for (int k = 0; k < kTile; ++k) tile_max = fmaxf(tile_max, scores_s[head * kTile + k]);
    const float m_new = fmaxf(m, tile_max);
    if (m_new == -INFINITY) continue;  // nothing valid yet
    const float correction = __expf(m - m_new);
    l *= correction;
#pragma unroll
    for (int i = 0; i < kDimsPerThread; ++i) o[i] *= correction;
    for (int k = 0; k < kTile; ++k) {
      const float p = __expf(scores_s[head * kTile + k] - m_new);
      l += p;
      const float* v = keys_s + k * kLatentDim + part * kDimsPerThread;
#pragma unroll
      for (int i = 0; i < kDimsPerThread; ++i) o[i] += p * v[i];
    }
    m = m_new;
  }
  if (!active) return;
  // Partial: [batch][split][head] of (512 outputs, max, sum).
  float* partial = partial_of(d, b, split, head);
#pragma unroll
  for (int i = 0; i < kDimsPerThread; ++i) partial[part * kDimsPerThread + i] = o[i];
  if (part == 0) {
    partial[kLatentDim] = m;
    partial[kLatentDim + 1] = l;
  }
}

__global__ void sparse_decode_combine_kernel(SparseDecodeDevice d) {
  const int64_t b = blockIdx.y;
  const int64_t head = blockIdx.x;
  const int i = threadIdx.x;  // one output dim per thread
  d.out[(b * d.shape.heads + head) * kLatentDim + i] = bf16_bits(combine_split_partials(
      d.sink[head], partial_of(d, b, 0, head), d.shape.heads * kPartialFloats, d.splits, i));
}

}  // namespace

void launch_sparse_decode_combine(const SparseDecodeDevice& d) {
  const dim3 grid(static_cast<unsigned>(d.shape.heads), static_cast<unsigned>(d.shape.batch));
  sparse_decode_combine_kernel<<<grid, kLatentDim>>>(d);
}

int64_t sparse_decode_workspace_floats(const SparseDecodeShape& shape, int splits) {
  return shape.batch * splits * shape.heads * kPartialFloats;
}

void launch_sparse_decode(const SparseDecodeDevice& d) {
  if (d.shape.heads <= 0 || d.shape.heads > kMaxHeads || d.splits <= 0) {
    throw std::invalid_argument("sparse decode: heads must be 1..64 and splits positive");
  }
  allow_shared_memory<sparse_decode_split_kernel>(static_cast<int>(SharedLayout::bytes()));
  const dim3 split_grid(static_cast<unsigned>(d.splits), static_cast<unsigned>(d.shape.batch));
  sparse_decode_split_kernel<<<split_grid, kThreads, SharedLayout::bytes()>>>(d);
  launch_sparse_decode_combine(d);
}

// The wgmma kernel's code is sm_90a's alone, in its own library; its
// splits merge here, as the other kernels' do.
void launch_sparse_decode_wgmma(const SparseDecodeDevice& d) {
  launch_sparse_decode_wgmma_splits(d);
  if (d.splits > 1) launch_sparse_decode_combine(d);
}

std::vector<float> sparse_decode_wgmma_cuda(const SparseDecodeInputs& in, int splits) {
  return run_sparse_decode(in, launch_sparse_decode_wgmma, splits);
}

std::vector<float> sparse_decode_cuda(const SparseDecodeInputs& in) {
  return run_sparse_decode(in, launch_sparse_decode, 0);
}

std::vector<float> run_sparse_decode(const SparseDecodeInputs& in, void (*launch)(const SparseDecodeDevice&),
                                     int splits_wanted) {
  int device = 0, sms = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const DeviceBuffer<uint16_t> q(in.q);
  const DeviceBuffer<uint8_t> main_kv(in.main_kv);
  const DeviceBuffer<int32_t> topk(in.topk);
  const DeviceBuffer<uint8_t> window(in.window);
  const DeviceBuffer<int32_t> window_len(in.window_len);
  const DeviceBuffer<float> sink(in.sink);
  const int splits = splits_wanted > 0 ? splits_wanted : sparse_decode_splits(in.shape, sms);
  const DeviceBuffer<uint16_t> out(in.q.size());
  const DeviceBuffer<float> workspace(
      static_cast<std::size_t>(sparse_decode_workspace_floats(in.shape, splits)));
  launch({in.shape, q.get(), main_kv.get(), topk.get(), window.get(), window_len.get(), sink.get(), out.get(),
          workspace.get(), splits});
  CUDA_CHECK(cudaGetLastError());
  return from_bf16_values(out.download(in.q.size()));
}

}  // namespace v41sim::kernels

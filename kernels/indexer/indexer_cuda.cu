// Lightning indexer on the GPU: a correctness-first baseline.
//
// Logits: one CTA per (query, 128 positions); the query's heads and weights
// sit in shared memory, each thread widens one 68-byte FP4 key into registers
// and runs the head dot products on the FP32 units. (DeepGEMM's FP4 indexer
// runs these on tensor cores; this kernel is the reference the harness times
// first and the tensor-core version will be checked against.)
// Top-k: one CTA per query finds the k-th largest logit by a bitwise binary
// search over order-preserving keys (32 counting passes), then compacts the
// selected positions in index order; ties go to the lower position.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"

namespace v41sim::kernels {
namespace {

constexpr int kKeysPerBlock = 128;
constexpr int kMaxHeads = 64;
constexpr int kTopkThreads = 1024;

struct IndexerParams {
  int64_t queries;
  int64_t heads;
  int64_t positions;
};

__global__ void indexer_logits_kernel(const float* __restrict__ q, const float* __restrict__ weights,
                                      const uint8_t* __restrict__ keys, float* __restrict__ logits,
                                      IndexerParams p) {
  __shared__ float q_smem[kMaxHeads * kIndexDim];
  __shared__ float w_smem[kMaxHeads];
  const int64_t query = blockIdx.y;
  for (int64_t i = threadIdx.x; i < p.heads * kIndexDim; i += blockDim.x) {
    q_smem[i] = q[query * p.heads * kIndexDim + i];
  }
  for (int64_t h = threadIdx.x; h < p.heads; h += blockDim.x) w_smem[h] = weights[query * p.heads + h];
  __syncthreads();
  const int64_t position = static_cast<int64_t>(blockIdx.x) * kKeysPerBlock + threadIdx.x;
  if (position >= p.positions) return;
  const uint8_t* entry = keys + position * kIndexKeyBytes;
  float key[kIndexDim];
#pragma unroll
  for (int i = 0; i < kIndexDim; ++i) key[i] = index_key_value(entry, i);
  float logit = 0.0f;
  for (int64_t h = 0; h < p.heads; ++h) {
    const float* qh = q_smem + h * kIndexDim;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kIndexDim; ++i) dot += qh[i] * key[i];
    logit += w_smem[h] * fmaxf(dot, 0.0f);
  }
  logits[query * p.positions + position] = logit;
}

__device__ int block_count(int local) {
  __shared__ int total;
  if (threadIdx.x == 0) total = 0;
  __syncthreads();
  atomicAdd(&total, local);
  __syncthreads();
  const int result = total;
  __syncthreads();
  return result;
}

__global__ void topk_kernel(const float* __restrict__ logits, int32_t* __restrict__ selected,
                            int64_t positions, int64_t topk) {
  const float* row = logits + static_cast<int64_t>(blockIdx.x) * positions;
  int32_t* out = selected + static_cast<int64_t>(blockIdx.x) * topk;
  // The k-th largest key: the largest threshold with at least k keys at or above it.
  uint32_t threshold = 0;
  for (int bit = 31; bit >= 0; --bit) {
    const uint32_t candidate = threshold | (1u << bit);
    int local = 0;
    for (int64_t i = threadIdx.x; i < positions; i += blockDim.x) local += ordered_bits(row[i]) >= candidate;
    if (block_count(local) >= topk) threshold = candidate;
  }
  // Each thread owns a contiguous chunk, so the output keeps index order.
  const int64_t chunk = (positions + blockDim.x - 1) / blockDim.x;
  const int64_t begin = threadIdx.x * chunk;
  const int64_t end = begin + chunk < positions ? begin + chunk : positions;
  int above = 0;
  int equal = 0;
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t k = ordered_bits(row[i]);
    above += k > threshold;
    equal += k == threshold;
  }
  __shared__ int above_prefix[kTopkThreads];
  __shared__ int equal_prefix[kTopkThreads];
  __shared__ int total_above;
  above_prefix[threadIdx.x] = above;
  equal_prefix[threadIdx.x] = equal;
  __syncthreads();
  if (threadIdx.x == 0) {  // exclusive scans over the chunks; once per query
    int a = 0;
    int e = 0;
    for (int t = 0; t < static_cast<int>(blockDim.x); ++t) {
      const int na = above_prefix[t];
      const int ne = equal_prefix[t];
      above_prefix[t] = a;
      equal_prefix[t] = e;
      a += na;
      e += ne;
    }
    total_above = a;
  }
  __syncthreads();
  // Ties at the threshold fill what is left of k, lowest positions first.
  const int64_t ties_needed = topk - total_above;
  int64_t ties_before = equal_prefix[threadIdx.x];
  int64_t written = above_prefix[threadIdx.x] + (ties_before < ties_needed ? ties_before : ties_needed);
  for (int64_t i = begin; i < end; ++i) {
    const uint32_t k = ordered_bits(row[i]);
    if (k > threshold) {
      out[written++] = static_cast<int32_t>(i);
    } else if (k == threshold && ties_before < ties_needed) {
      out[written++] = static_cast<int32_t>(i);
      ++ties_before;
    }
  }
}

}  // namespace

void launch_indexer_logits(const float* q, const float* weights, const uint8_t* keys, float* logits,
                           int64_t queries, int64_t heads, int64_t positions) {
  if (heads <= 0 || heads > kMaxHeads || queries <= 0 || positions <= 0) {
    throw std::invalid_argument("indexer logits: heads must be 1..64, queries and positions positive");
  }
  const dim3 grid(static_cast<unsigned>((positions + kKeysPerBlock - 1) / kKeysPerBlock),
                  static_cast<unsigned>(queries));
  indexer_logits_kernel<<<grid, kKeysPerBlock>>>(q, weights, keys, logits, {queries, heads, positions});
}

void launch_topk(const float* logits, int32_t* selected, int64_t queries, int64_t positions, int64_t topk) {
  if (topk <= 0 || topk > positions || queries <= 0)
    throw std::invalid_argument("topk: need 0 < k <= positions");
  topk_kernel<<<static_cast<unsigned>(queries), kTopkThreads>>>(logits, selected, positions, topk);
}

std::vector<float> indexer_logits_cuda(const std::vector<float>& q, const std::vector<float>& weights,
                                       const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                       int64_t positions) {
  const DeviceBuffer<float> d_q(q), d_w(weights), d_logits(static_cast<std::size_t>(queries * positions));
  const DeviceBuffer<uint8_t> d_keys(keys);
  launch_indexer_logits(d_q.get(), d_w.get(), d_keys.get(), d_logits.get(), queries, heads, positions);
  CUDA_CHECK(cudaGetLastError());
  return d_logits.download(static_cast<std::size_t>(queries * positions));
}

std::vector<int32_t> topk_cuda(const std::vector<float>& logits, int64_t queries, int64_t positions,
                               int64_t topk) {
  const DeviceBuffer<float> d_logits(logits);
  const DeviceBuffer<int32_t> d_out(static_cast<std::size_t>(queries * topk));
  launch_topk(d_logits.get(), d_out.get(), queries, positions, topk);
  CUDA_CHECK(cudaGetLastError());
  return d_out.download(static_cast<std::size_t>(queries * topk));
}

}  // namespace v41sim::kernels

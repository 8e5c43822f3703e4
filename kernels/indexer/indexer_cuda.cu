// Lightning indexer on the GPU, with the hierarchical candidate pool.
//
// Logits: one CTA per (query, 128 positions); the query's heads (E4M3,
// widened once) and weights sit in shared memory, each thread widens one
// 68-byte FP4 key into registers and runs the head dot products on the FP32
// units. (DeepGEMM's FP4 indexer runs these on tensor cores, as
// indexer_mma_cuda.cu does; this is the correctness-first baseline, timed as
// a baseline row.) When
// layer 20 builds the candidate pool, the same pass writes each block's max
// logit (8 lanes, three shuffles), so the pool never re-reads the logits.
// Reindex layers score only the pooled positions, so their cost stops growing
// once the context passes 16,384 compressed positions.
//
// The top-k over these logits is topk_cuda.cu's.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/pool_slots.h"

namespace v41sim::kernels {
namespace {

constexpr int kKeysPerBlock = 128;
constexpr int kMaxHeads = 64;
constexpr int kPoolBlock = static_cast<int>(kV41PoolBlockSize);
constexpr unsigned kFullMask = 0xffffffffu;
static_assert(kKeysPerBlock % kPoolBlock == 0 && 32 % kPoolBlock == 0, "pool blocks must not straddle warps");

struct IndexerParams {
  int64_t queries;
  int64_t heads;
  int64_t positions;
  int64_t key_stride;       // bytes between key sets: 0 when every query reads one sequence's keys
  int64_t request_queries;  // queries in a row that read one key set
};

__device__ const uint8_t* key_of(const uint8_t* keys, const IndexerParams& p, int64_t query,
                                 int64_t position) {
  return keys + query / p.request_queries * p.key_stride + position * kIndexKeyBytes;
}

// The query's heads and head weights, staged once per CTA.
struct QuerySmem {
  float q[kMaxHeads * kIndexDim];
  float w[kMaxHeads];
};

__device__ void stage_query(QuerySmem& s, const uint8_t* q, const float* weights, int64_t query,
                            int64_t heads) {
  for (int64_t i = threadIdx.x; i < heads * kIndexDim; i += blockDim.x)
    s.q[i] = decode_e4m3(q[query * heads * kIndexDim + i]);
  for (int64_t h = threadIdx.x; h < heads; h += blockDim.x) s.w[h] = weights[query * heads + h];
  __syncthreads();
}

// sum_h w[h] * ReLU(q_h . key) for one 68-byte key.
__device__ float score_key(const QuerySmem& s, int64_t heads, const uint8_t* entry) {
  float key[kIndexDim];
#pragma unroll
  for (int i = 0; i < kIndexDim; ++i) key[i] = index_key_value(entry, i);
  float logit = 0.0f;
  for (int64_t h = 0; h < heads; ++h) {
    const float* qh = s.q + h * kIndexDim;
    float dot = 0.0f;
#pragma unroll
    for (int i = 0; i < kIndexDim; ++i) dot += qh[i] * key[i];
    logit += s.w[h] * fmaxf(dot, 0.0f);
  }
  return logit;
}

__global__ void indexer_logits_kernel(const uint8_t* __restrict__ q, const float* __restrict__ weights,
                                      const uint8_t* __restrict__ keys, float* __restrict__ logits,
                                      float* __restrict__ block_max, IndexerParams p) {
  __shared__ QuerySmem smem;
  const int64_t query = blockIdx.y;
  stage_query(smem, q, weights, query, p.heads);
  const int64_t position = static_cast<int64_t>(blockIdx.x) * kKeysPerBlock + threadIdx.x;
  float logit = -INFINITY;
  if (position < p.positions) {
    logit = score_key(smem, p.heads, key_of(keys, p, query, position));
    logits[query * p.positions + position] = logit;
  }
  if (block_max == nullptr)
    return;  // uniform across the grid
             // Every lane reaches the shuffles; lanes past the end carry -inf.
#pragma unroll
  for (int offset = kPoolBlock / 2; offset > 0; offset /= 2) {
    logit = fmaxf(logit, __shfl_xor_sync(kFullMask, logit, offset));
  }
  const int64_t blocks = (p.positions + kPoolBlock - 1) / kPoolBlock;
  if (threadIdx.x % kPoolBlock == 0 && position < p.positions) {
    block_max[query * blocks + position / kPoolBlock] = logit;
  }
}

__global__ void indexer_pool_logits_kernel(const uint8_t* __restrict__ q, const float* __restrict__ weights,
                                           const uint8_t* __restrict__ keys, const int32_t* __restrict__ pool,
                                           float* __restrict__ pool_logits, IndexerParams p,
                                           int64_t pool_blocks) {
  __shared__ QuerySmem smem;
  const int64_t query = blockIdx.y;
  stage_query(smem, q, weights, query, p.heads);
  const int64_t slots = pool_blocks * kPoolBlock;
  const int64_t slot = static_cast<int64_t>(blockIdx.x) * kKeysPerBlock + threadIdx.x;
  if (slot >= slots) return;
  const int64_t position = pool_position(pool, query, pool_blocks, slot);
  pool_logits[query * slots + slot] =
      position < p.positions ? score_key(smem, p.heads, key_of(keys, p, query, position)) : -INFINITY;
}

dim3 score_grid(int64_t columns, int64_t queries) {
  return dim3(static_cast<unsigned>((columns + kKeysPerBlock - 1) / kKeysPerBlock),
              static_cast<unsigned>(queries));
}

IndexerParams scoring_params(int64_t queries, int64_t heads, int64_t positions, int64_t request_queries) {
  if (heads <= 0 || heads > kMaxHeads || queries <= 0 || positions <= 0) {
    throw std::invalid_argument("indexer logits: heads must be 1..64, queries and positions positive");
  }
  if (request_queries < 0 || (request_queries > 0 && queries % request_queries != 0)) {
    throw std::invalid_argument("indexer logits: queries must be whole requests");
  }
  if (request_queries == kOneKeySet) return {queries, heads, positions, 0, 1};
  return {queries, heads, positions, positions * kIndexKeyBytes, request_queries};
}

}  // namespace

void launch_indexer_logits(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                           int64_t queries, int64_t heads, int64_t positions, float* block_max,
                           int64_t request_queries) {
  const IndexerParams p = scoring_params(queries, heads, positions, request_queries);
  indexer_logits_kernel<<<score_grid(positions, queries), kKeysPerBlock>>>(q, weights, keys, logits,
                                                                           block_max, p);
}

void launch_indexer_pool_logits(const uint8_t* q, const float* weights, const uint8_t* keys,
                                const int32_t* pool, float* pool_logits, int64_t queries, int64_t heads,
                                int64_t positions, int64_t pool_blocks, int64_t request_queries) {
  const IndexerParams p = scoring_params(queries, heads, positions, request_queries);
  if (pool_blocks <= 0) throw std::invalid_argument("pool logits: the pool is empty");
  indexer_pool_logits_kernel<<<score_grid(pool_blocks * kPoolBlock, queries), kKeysPerBlock>>>(
      q, weights, keys, pool, pool_logits, p, pool_blocks);
}

std::vector<float> indexer_logits_cuda(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                       const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                       int64_t positions, IndexerMath math) {
  return indexer_logits_with_block_max_cuda(q, weights, keys, queries, heads, positions, kOneKeySet, math)
      .logits;
}

LogitsWithBlockMax indexer_logits_with_block_max_cuda(const std::vector<uint8_t>& q,
                                                      const std::vector<float>& weights,
                                                      const std::vector<uint8_t>& keys, int64_t queries,
                                                      int64_t heads, int64_t positions,
                                                      int64_t request_queries, IndexerMath math) {
  const auto logit_count = static_cast<std::size_t>(queries * positions);
  const auto block_count = static_cast<std::size_t>(queries * ((positions + kPoolBlock - 1) / kPoolBlock));
  const DeviceBuffer<uint8_t> d_q(q);
  const DeviceBuffer<float> d_w(weights), d_logits(logit_count), d_block_max(block_count);
  const DeviceBuffer<uint8_t> d_keys(keys);
  auto launch = math == IndexerMath::kTensorCores ? launch_indexer_logits_mma : launch_indexer_logits;
  launch(d_q.get(), d_w.get(), d_keys.get(), d_logits.get(), queries, heads, positions, d_block_max.get(),
         request_queries);
  CUDA_CHECK(cudaGetLastError());
  return {d_logits.download(logit_count), d_block_max.download(block_count)};
}

std::vector<float> indexer_pool_logits_cuda(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                            const std::vector<uint8_t>& keys,
                                            const std::vector<int32_t>& pool, int64_t queries, int64_t heads,
                                            int64_t positions, int64_t request_queries, IndexerMath math) {
  const int64_t pool_blocks = static_cast<int64_t>(pool.size()) / queries;
  const auto slot_count = static_cast<std::size_t>(queries * pool_blocks * kPoolBlock);
  const DeviceBuffer<uint8_t> d_q(q);
  const DeviceBuffer<float> d_w(weights), d_out(slot_count);
  const DeviceBuffer<uint8_t> d_keys(keys);
  const DeviceBuffer<int32_t> d_pool(pool);
  auto launch =
      math == IndexerMath::kTensorCores ? launch_indexer_pool_logits_mma : launch_indexer_pool_logits;
  launch(d_q.get(), d_w.get(), d_keys.get(), d_pool.get(), d_out.get(), queries, heads, positions,
         pool_blocks, request_queries);
  CUDA_CHECK(cudaGetLastError());
  return d_out.download(slot_count);
}

}  // namespace v41sim::kernels

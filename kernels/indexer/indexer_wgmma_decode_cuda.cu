// Lightning-indexer decode logits on Hopper's warpgroup MMA (sm_90a): each
// request of a batch scores its own keys, FP8 E4M3 queries x FP4 keys
// widened to E4M3 (DeepGEMM's paged mqa_logits kind), where the mma.sync
// path widens both to BF16. Layout and epilogue: indexer_wgmma_decode_tiles.h.
//
// Per CTA: one request's queries (its token and the drafts it verifies, 32
// heads each, 4 KB a query, loaded once) against 16 tiles of 64 of its keys.
// The producer warpgroup copies and widens each tile as prefill's does
// (indexer_wgmma_pipeline.cuh); the computing warpgroup runs, for each query
// in turn, four m64n32k32 steps over the tile, sums each key's heads (ReLU,
// head weight), scales by the key's largest group scale, stores, and, where
// the layer builds the candidate pool, writes each block of 8 keys' max; it
// releases the tile after the last query's steps. A Reindex layer's logits in
// the pool take the same kernel over the pool's slots, each tile's keys
// copied block by block (one query a CTA: each query's pool is its own).
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_device.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/mbarrier.cuh"
#include "kernels/common/v41_shapes.h"
#include "kernels/common/wgmma.cuh"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/indexer_wgmma_decode_tiles.h"
#include "kernels/indexer/indexer_wgmma_pipeline.cuh"
#include "kernels/indexer/pool_slots.h"

namespace v41sim::kernels {
namespace {

using namespace indexer_wgmma_decode;
using indexer_wgmma::Handover;

constexpr unsigned kFullMask = 0xffffffffu;

struct Launch {
  const uint8_t* q;
  const float* weights;
  const uint8_t* keys;  // requests x positions x 68 bytes
  float* logits;        // queries x slots
  float* block_max;     // null: no pool built at this layer
  const int32_t* pool;  // null: the slots are the positions; else queries x pool_blocks block ids
  int64_t pool_blocks;
  int64_t queries, positions, slots;
  int request_queries;  // queries a request (a CTA), sharing its keys
  indexer_wgmma::PipelineLayout layout;
};

// The position slot stands for, of the query's keys.
__device__ int64_t position_of(const Launch& l, int64_t query, int64_t slot) {
  return l.pool != nullptr ? pool_position(l.pool, query, l.pool_blocks, slot) : slot;
}

// One query's epilogue for the tile from slot tile_first on (its
// accumulators `acc`): per key sum_h w[h] ReLU(S[h]) times the key's scale
// (-inf for a pool slot past the last position, as the reference writes),
// stored, and the pool blocks' maxima where the layer builds the pool.
__device__ void store_tile_logits(const Launch& l, int64_t query, int64_t tile_first,
                                  const float (&acc)[kAccumulators], const float (&weight)[kAccumulators],
                                  const float (&scale)[2], int t) {
  const int row = key_row(t, 0);  // and row + 8
  const int64_t blocks = (l.positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  float sums[2] = {0.0f, 0.0f};  // key rows row, row + 8
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) sums[row_half(i)] += weight[i] * fmaxf(acc[i], 0.0f);
  float out[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    sums[r] += __shfl_xor_sync(kFullMask, sums[r], 1);
    sums[r] += __shfl_xor_sync(kFullMask, sums[r], 2);
    out[r] = sums[r] * scale[r];
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t slot = tile_first + row + 8 * r;
    const bool valid = slot < l.slots && position_of(l, query, slot) < l.positions;
    if (slot < l.slots && stores_logit(t, r)) l.logits[query * l.slots + slot] = valid ? out[r] : -INFINITY;
    if (l.block_max != nullptr) {  // the same for every thread of the CTA
      float m = valid ? out[r] : -INFINITY;
      m = fmaxf(m, __shfl_xor_sync(kFullMask, m, 4));
      m = fmaxf(m, __shfl_xor_sync(kFullMask, m, 8));
      m = fmaxf(m, __shfl_xor_sync(kFullMask, m, 16));
      const int64_t block_first = tile_first + 16 * (t / 32) + 8 * r;
      if (block_first < l.positions && stores_block_max(t, r))
        l.block_max[query * blocks + block_first / kV41PoolBlockSize] = m;
    }
  }
}

// The computing warpgroup: each tile's 64 keys against each of the
// request's queries (from first_query on) in turn, their 32 heads each; the
// stage goes back to the producer once the last query's steps are done.
__device__ void compute(const Launch& l, int64_t first_query, int64_t first_slot, int64_t tiles,
                        uint8_t* smem, const indexer_wgmma::Pipeline& pipe, int t) {
  const int row = key_row(t, 0);
  float acc[kAccumulators];
  for (int64_t kb = 0; kb < tiles; ++kb) {
    const uint8_t* stage = indexer_wgmma::wait_for_tile(smem + l.layout.stages, pipe, kb);
    const float* scales = reinterpret_cast<const float*>(stage + indexer_wgmma::kKeyScalesOffset);
    const float scale[2] = {scales[row], scales[row + 8]};
    for (int j = 0; j < l.request_queries; ++j) {
      const int64_t query = first_query + j;
      float weight[kAccumulators];  // loaded while the steps run
#pragma unroll
      for (int i = 0; i < kAccumulators; ++i) weight[i] = l.weights[query * kHeads + head_of(t, i)];
      indexer_wgmma::multiply_stage(acc, stage, smem + j * kQueryTileBytes);
      if (j == l.request_queries - 1) mbarrier::arrive(&pipe.empty[Handover::stage_of(kb)]);
      store_tile_logits(l, query, first_slot + kb * kKeys, acc, weight, scale, t);
    }
  }
}

// Warpgroup 0 computes, warpgroup 1 produces. Grid: x over chunks of
// kTilesPerCta tiles of a request's slots, y over the requests.
__global__ void __launch_bounds__(kThreads) indexer_decode_logits_wgmma_kernel(Launch l) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  const indexer_wgmma::Pipeline pipe = indexer_wgmma::set_up_pipeline(smem, l.layout, kComputeThreads);
  const int thread = static_cast<int>(threadIdx.x);
  const int64_t first_slot = static_cast<int64_t>(blockIdx.x) * kTilesPerCta * kKeys;
  const int64_t request = blockIdx.y;
  const int64_t first_query = request * l.request_queries;
  const int64_t tiles = indexer_wgmma::cta_tiles(first_slot, l.slots, kTilesPerCta);
  if (thread >= kComputeThreads) {
    const uint8_t* keys = l.keys + key_set_offset(request, l.positions);
    const int32_t* pool_row = l.pool != nullptr ? l.pool + first_query * l.pool_blocks : nullptr;
    indexer_wgmma::produce_key_tiles(
        keys, tiles, smem + l.layout.stages, pipe, thread - kComputeThreads,
        [&](int c, int64_t j) {
          const int64_t first = first_slot + j * kKeys;
          return pool_row != nullptr ? pool_key_copy(c, first, pool_row, l.pool_blocks, l.positions)
                                     : indexer_wgmma::key_copy(c, first, l.positions);
        },
        [&](int t) {
          for (int c = t; c < l.request_queries * kQueryChunks; c += kProducerThreads) {
            const int j = c / kQueryChunks;
            const PartialCopy copy = query_copy(c % kQueryChunks, j, first_query + j);
            cp_async_16_partial(smem + copy.smem, l.q + copy.global, copy.bytes);
          }
        });
  } else {
    compute(l, first_query, first_slot, tiles, smem, pipe, thread);
  }
}

void launch(Launch l, int64_t heads) {
  const int64_t per_cta = static_cast<int64_t>(kTilesPerCta) * kKeys;
  const int n = l.request_queries;
  const bool pooled = l.pool != nullptr;
  if (heads != kHeads || n < 1 || n > kMaxRequestQueries || (pooled && n != 1) || l.queries <= 0 ||
      l.queries % n != 0 || l.queries / n > 65535 || l.positions <= 0 || l.slots <= 0 ||
      (l.slots + per_cta - 1) / per_cta > 2147483647) {
    throw std::invalid_argument(
        "indexer decode logits (wgmma): needs 32 heads, 1-8 queries a request (1 in the pool) dividing the "
        "queries, 1-65,535 requests, positions > 0 and a pool not empty");
  }
  std::string why;
  if (!sm90a_device(&why)) throw std::runtime_error("indexer decode logits (wgmma): " + why);
  allow_shared_memory<indexer_decode_logits_wgmma_kernel>(layout_for(kMaxRequestQueries).allocated);
  l.layout = layout_for(n);
  const dim3 grid(static_cast<unsigned>((l.slots + per_cta - 1) / per_cta),
                  static_cast<unsigned>(l.queries / n));
  indexer_decode_logits_wgmma_kernel<<<grid, kThreads, l.layout.allocated>>>(l);
  CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_indexer_decode_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                        float* logits, int64_t queries, int64_t heads, int64_t positions,
                                        float* block_max, int request_queries) {
  launch(
      {q, weights, keys, logits, block_max, nullptr, 0, queries, positions, positions, request_queries, {}},
      heads);
}

void launch_indexer_decode_pool_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                             const int32_t* pool, float* pool_logits, int64_t queries,
                                             int64_t heads, int64_t positions, int64_t pool_blocks) {
  launch({q,
          weights,
          keys,
          pool_logits,
          nullptr,
          pool,
          pool_blocks,
          queries,
          positions,
          pool_blocks * kV41PoolBlockSize,
          1,
          {}},
         heads);
}

LogitsWithBlockMax indexer_decode_logits_wgmma_cuda(const std::vector<uint8_t>& q,
                                                    const std::vector<float>& weights,
                                                    const std::vector<uint8_t>& keys, int64_t queries,
                                                    int64_t heads, int64_t positions, int request_queries) {
  const int64_t blocks = (positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  const DeviceBuffer<uint8_t> d_q(q), d_keys(keys);
  const DeviceBuffer<float> d_w(weights), d_logits(static_cast<std::size_t>(queries * positions)),
      d_max(static_cast<std::size_t>(queries * blocks));
  launch_indexer_decode_logits_wgmma(d_q.get(), d_w.get(), d_keys.get(), d_logits.get(), queries, heads,
                                     positions, d_max.get(), request_queries);
  CUDA_CHECK(cudaDeviceSynchronize());
  return {d_logits.download(static_cast<std::size_t>(queries * positions)),
          d_max.download(static_cast<std::size_t>(queries * blocks))};
}

std::vector<float> indexer_decode_pool_logits_wgmma_cuda(const std::vector<uint8_t>& q,
                                                         const std::vector<float>& weights,
                                                         const std::vector<uint8_t>& keys,
                                                         const std::vector<int32_t>& pool, int64_t queries,
                                                         int64_t heads, int64_t positions) {
  const int64_t pool_blocks = static_cast<int64_t>(pool.size()) / queries;
  const auto count = static_cast<std::size_t>(queries * pool_blocks * kV41PoolBlockSize);
  const DeviceBuffer<uint8_t> d_q(q), d_keys(keys);
  const DeviceBuffer<float> d_w(weights), d_out(count);
  const DeviceBuffer<int32_t> d_pool(pool);
  launch_indexer_decode_pool_logits_wgmma(d_q.get(), d_w.get(), d_keys.get(), d_pool.get(), d_out.get(),
                                          queries, heads, positions, pool_blocks);
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_out.download(count);
}

}  // namespace v41sim::kernels

// Lightning-indexer decode logits on Hopper's warpgroup MMA (sm_90a): each
// query of a batch scores its own request's keys, FP8 E4M3 query x FP4 keys
// widened to E4M3 (DeepGEMM's paged mqa_logits kind), where the mma.sync
// path widens both to BF16. Layout and epilogue: indexer_wgmma_decode_tiles.h.
//
// Per CTA: one query (its 32 heads, 4 KB, loaded once) against 16 tiles of
// 64 of its keys. The producer warpgroup copies and widens each tile as
// prefill's does (indexer_wgmma_pipeline.cuh); the computing warpgroup runs
// four m64n32k32 steps over the tile, sums each key's heads (ReLU, head
// weight), scales by the key's largest group scale, stores, and, where the
// layer builds the candidate pool, writes each block of 8 keys' max.
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

namespace v41sim::kernels {
namespace {

using namespace indexer_wgmma_decode;
using indexer_wgmma::Handover;

constexpr unsigned kFullMask = 0xffffffffu;

struct Launch {
  const uint8_t* q;
  const float* weights;
  const uint8_t* keys;  // queries x positions x 68 bytes
  float* logits;
  float* block_max;  // null: no pool built at this layer
  int64_t queries, positions;
};

// The computing warpgroup: each tile's 64 keys against the query's 32
// heads, then per key sum_h w[h] ReLU(S[h]) times the key's scale.
__device__ void compute(const Launch& l, int64_t query, int64_t first_key, int64_t tiles, uint8_t* smem,
                        const indexer_wgmma::Pipeline& pipe, int t) {
  float weight[kAccumulators];
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) weight[i] = l.weights[query * kHeads + head_of(t, i)];
  const int row = key_row(t, 0);  // and row + 8
  const int64_t blocks = (l.positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  float acc[kAccumulators];
  for (int64_t kb = 0; kb < tiles; ++kb) {
    const uint8_t* stage = indexer_wgmma::multiply_tile(acc, smem + kStagesOffset, smem, pipe, kb);
    float sums[2] = {0.0f, 0.0f};  // key rows row, row + 8
#pragma unroll
    for (int i = 0; i < kAccumulators; ++i) sums[row_half(i)] += weight[i] * fmaxf(acc[i], 0.0f);
    const float* scales = reinterpret_cast<const float*>(stage + indexer_wgmma::kKeyScalesOffset);
    float out[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      sums[r] += __shfl_xor_sync(kFullMask, sums[r], 1);
      sums[r] += __shfl_xor_sync(kFullMask, sums[r], 2);
      out[r] = sums[r] * scales[row + 8 * r];
    }
    mbarrier::arrive(&pipe.empty[Handover::stage_of(kb)]);
    const int64_t tile_first = first_key + kb * kKeys;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t position = tile_first + row + 8 * r;
      const bool valid = position < l.positions;
      if (valid && stores_logit(t, r)) l.logits[query * l.positions + position] = out[r];
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
}

// Warpgroup 0 computes, warpgroup 1 produces. Grid: x over chunks of
// kTilesPerCta tiles of a query's keys, y over the queries.
__global__ void __launch_bounds__(kThreads) indexer_decode_logits_wgmma_kernel(Launch l) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  const indexer_wgmma::Pipeline pipe =
      indexer_wgmma::set_up_pipeline(smem, kBarriersOffset, kTablesOffset, kComputeThreads);
  const int thread = static_cast<int>(threadIdx.x);
  const int64_t first_key = static_cast<int64_t>(blockIdx.x) * kTilesPerCta * kKeys;
  const int64_t query = blockIdx.y;
  const int64_t tiles = indexer_wgmma::cta_tiles(first_key, l.positions, kTilesPerCta);
  if (thread >= kComputeThreads) {
    const uint8_t* keys = l.keys + key_set_offset(query, l.positions);
    indexer_wgmma::produce_key_tiles(keys, l.positions, first_key, tiles, smem + kStagesOffset, pipe,
                                     thread - kComputeThreads, [&](int t) {
                                       for (int c = t; c < kQueryChunks; c += kProducerThreads) {
                                         const PartialCopy copy = query_copy(c, query);
                                         cp_async_16_partial(smem + copy.smem, l.q + copy.global, copy.bytes);
                                       }
                                     });
  } else {
    compute(l, query, first_key, tiles, smem, pipe, thread);
  }
}

}  // namespace

void launch_indexer_decode_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                        float* logits, int64_t queries, int64_t heads, int64_t positions,
                                        float* block_max) {
  const int64_t per_cta = static_cast<int64_t>(kTilesPerCta) * kKeys;
  if (heads != kHeads || queries <= 0 || queries > 65535 || positions <= 0 ||
      (positions + per_cta - 1) / per_cta > 2147483647) {
    throw std::invalid_argument(
        "indexer decode logits (wgmma): needs 32 heads, 1-65,535 queries, positions > 0");
  }
  std::string why;
  if (!sm90a_device(&why)) throw std::runtime_error("indexer decode logits (wgmma): " + why);
  allow_shared_memory<indexer_decode_logits_wgmma_kernel>(kSharedBytesAllocated);
  const dim3 grid(static_cast<unsigned>((positions + per_cta - 1) / per_cta), static_cast<unsigned>(queries));
  indexer_decode_logits_wgmma_kernel<<<grid, kThreads, kSharedBytesAllocated>>>(
      {q, weights, keys, logits, block_max, queries, positions});
  CUDA_CHECK(cudaGetLastError());
}

LogitsWithBlockMax indexer_decode_logits_wgmma_cuda(const std::vector<uint8_t>& q,
                                                    const std::vector<float>& weights,
                                                    const std::vector<uint8_t>& keys, int64_t queries,
                                                    int64_t heads, int64_t positions) {
  const int64_t blocks = (positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  const DeviceBuffer<uint8_t> d_q(q), d_keys(keys);
  const DeviceBuffer<float> d_w(weights), d_logits(static_cast<std::size_t>(queries * positions)),
      d_max(static_cast<std::size_t>(queries * blocks));
  launch_indexer_decode_logits_wgmma(d_q.get(), d_w.get(), d_keys.get(), d_logits.get(), queries, heads,
                                     positions, d_max.get());
  CUDA_CHECK(cudaDeviceSynchronize());
  return {d_logits.download(static_cast<std::size_t>(queries * positions)),
          d_max.download(static_cast<std::size_t>(queries * blocks))};
}

}  // namespace v41sim::kernels

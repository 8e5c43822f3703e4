// Lightning-indexer logits on Hopper's warpgroup MMA (sm_90a): FP8 E4M3
// queries x FP4 index keys on FP8 tensor cores, as DeepGEMM's mqa_logits
// kernels run them, where indexer_mma_cuda.cu widens both to BF16 for
// mma.sync. A prefill chunk: the queries share one sequence's keys. Layout,
// folding and the head sum: indexer_wgmma_tiles.h.
//
// Per CTA: 8 queries (their 32 heads each, 32 KB, loaded once) against 16
// tiles of 64 positions. A producer warpgroup copies each tile's keys as
// stored, widens them into the swizzled operand tile with their group
// scales folded in and hands the stage over on its full barrier; two
// computing warpgroups, 4 queries each, run four m64n128k32 steps over the
// tile's keys, sum each query's heads (ReLU, head weight), scale by the
// key's largest group scale, store, and release the stage.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/cp_async.cuh"
#include "kernels/common/cuda_check.h"
#include "kernels/common/cuda_device.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/mbarrier.cuh"
#include "kernels/common/wgmma.cuh"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/indexer_wgmma_pipeline.cuh"
#include "kernels/indexer/indexer_wgmma_tiles.h"

namespace v41sim::kernels {
namespace {

using namespace indexer_wgmma;

struct Launch {
  const uint8_t* q;
  const float* weights;
  const uint8_t* keys;
  float* logits;
  int64_t queries, positions;
};

// The producer: the CTA's key tiles, and with the first, its queries.
__device__ void produce(const Launch& l, int64_t first_query, int64_t first_key, int64_t tiles, uint8_t* smem,
                        const Pipeline& pipe, int t) {
  produce_key_tiles(
      l.keys, tiles, smem + kStagesOffset, pipe, t,
      [&](int c, int64_t j) { return key_copy(c, first_key + j * kKeys, l.positions); },
      [&](int thread) {
        for (int c = thread; c < kQueryChunks; c += kProducerThreads) {
          const PartialCopy copy = query_copy(c, first_query, l.queries);
          cp_async_16_partial(smem + copy.smem, l.q + copy.global, copy.bytes);
        }
      });
}

// A computing warpgroup: each tile's 64 keys against its group's 128
// (query, head) columns, then per key and query sum_h w[h] ReLU(S[h]) times
// the key's scale; lane t % 4 of each quad stores its query's two keys.
__device__ void compute(const Launch& l, int64_t first_query, int64_t first_key, int64_t tiles, uint8_t* smem,
                        const Pipeline& pipe, int warpgroup, int t) {
  float weight[32];  // column pairs: j = i / 4, i % 2
#pragma unroll
  for (int i = 0; i < 64; i += 4) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t query = first_query + warpgroup * kGroupQueries + query_of(t, i + h);
      weight[i / 2 + h] = query < l.queries ? l.weights[query * kHeads + head_of(t, i + h)] : 0.0f;
    }
  }
  const int row = wgmma::accumulator_row(t, 0);  // and row + 8
  const int my_query = t % 4;
  float acc[64];
  for (int64_t kb = 0; kb < tiles; ++kb) {
    const uint8_t* stage =
        multiply_tile(acc, smem + kStagesOffset, smem + warpgroup * kGroupTileBytes, pipe, kb);
    float sums[2][kGroupQueries] = {};  // [key row, row + 8][query]
#pragma unroll
    for (int i = 0; i < 64; ++i) sums[(i % 4) / 2][i / 16] += weight[i / 4 * 2 + i % 2] * fmaxf(acc[i], 0.0f);
    float mine[2] = {0.0f, 0.0f};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
#pragma unroll
      for (int q = 0; q < kGroupQueries; ++q) {
        float v = sums[r][q];
        v += __shfl_xor_sync(0xffffffffu, v, 1);
        v += __shfl_xor_sync(0xffffffffu, v, 2);
        if (q == my_query) mine[r] = v;
      }
    }
    const float* scales = reinterpret_cast<const float*>(stage + kKeyScalesOffset);
    const float out[2] = {mine[0] * scales[row], mine[1] * scales[row + 8]};
    mbarrier::arrive(&pipe.empty[Handover::stage_of(kb)]);
    const int64_t query = first_query + warpgroup * kGroupQueries + my_query;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t position = first_key + kb * kKeys + row + 8 * r;
      if (query < l.queries && position < l.positions) l.logits[query * l.positions + position] = out[r];
    }
  }
}

// Warpgroups 0 and 1 compute (queries 0-3 and 4-7 of the CTA's), warpgroup
// 2 produces. Grid: x over chunks of kTilesPerCta tiles, y over kQueries queries.
__global__ void __launch_bounds__(kThreads, 1) indexer_logits_wgmma_kernel(Launch l) {
  extern __shared__ uint8_t dynamic_smem[];
  uint8_t* smem = wgmma::atom_aligned(dynamic_smem);
  const Pipeline pipe = set_up_pipeline(smem, kLayout, kComputeThreads);
  const int thread = static_cast<int>(threadIdx.x);
  const int64_t first_key = static_cast<int64_t>(blockIdx.x) * kTilesPerCta * kKeys;
  const int64_t first_query = static_cast<int64_t>(blockIdx.y) * kQueries;
  const int64_t tiles = cta_tiles(first_key, l.positions, kTilesPerCta);
  const int warpgroup = thread / wgmma::kThreads;
  if (warpgroup == kComputeThreads / wgmma::kThreads) {  // the warpgroup after the computing ones
    produce(l, first_query, first_key, tiles, smem, pipe, thread % wgmma::kThreads);
  } else {
    compute(l, first_query, first_key, tiles, smem, pipe, warpgroup, thread % wgmma::kThreads);
  }
}

}  // namespace

void launch_indexer_logits_wgmma(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                                 int64_t queries, int64_t heads, int64_t positions) {
  if (heads != kHeads || queries <= 0 || positions <= 0 || (queries + kQueries - 1) / kQueries > 65535) {
    throw std::invalid_argument(
        "indexer logits (wgmma): needs 32 heads, 1-524,280 queries and positions > 0");
  }
  std::string why;
  if (!sm90a_device(&why)) throw std::runtime_error("indexer logits (wgmma): " + why);
  allow_shared_memory<indexer_logits_wgmma_kernel>(kSharedBytesAllocated);
  const int64_t per_cta = static_cast<int64_t>(kTilesPerCta) * kKeys;
  const dim3 grid(static_cast<unsigned>((positions + per_cta - 1) / per_cta),
                  static_cast<unsigned>((queries + kQueries - 1) / kQueries));
  indexer_logits_wgmma_kernel<<<grid, kThreads, kSharedBytesAllocated>>>(
      {q, weights, keys, logits, queries, positions});
  CUDA_CHECK(cudaGetLastError());
}

std::vector<float> indexer_logits_wgmma_cuda(const std::vector<uint8_t>& q, const std::vector<float>& weights,
                                             const std::vector<uint8_t>& keys, int64_t queries, int64_t heads,
                                             int64_t positions) {
  const auto count = static_cast<std::size_t>(queries * positions);
  const DeviceBuffer<uint8_t> d_q(q), d_keys(keys);
  const DeviceBuffer<float> d_w(weights), d_logits(count);
  launch_indexer_logits_wgmma(d_q.get(), d_w.get(), d_keys.get(), d_logits.get(), queries, heads, positions);
  CUDA_CHECK(cudaDeviceSynchronize());
  return d_logits.download(count);
}

}  // namespace v41sim::kernels

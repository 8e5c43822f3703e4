// Lightning-indexer logits on tensor cores: mma.sync.m16n8k16, BF16 operands,
// FP32 accumulators (the FP32-unit kernel in indexer_cuda.cu is the baseline).
//
// Who does what in a CTA: indexer_mma_tiles.h. Each tile's 128 keys are
// widened to BF16 in shared memory exactly (an E2M1 value times an E8M0
// power of two fits BF16), by bit operations on four codes at a time
// (widen_index_key_half) rather than float math per value; the queries'
// E4M3 codes widen to BF16 exactly too.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/common/mma_sync.cuh"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/indexer_mma_tiles.h"

namespace v41sim::kernels {
namespace {

using namespace indexer_mma;
constexpr unsigned kFullMask = 0xffffffffu;

// Widens a tile's 128 keys into k_s as BF16 rows, two threads per key
// (widen_index_key_half); missing keys are zero rows.
__device__ void widen_key_tile(const uint8_t* __restrict__ keys, const Params& p, const ColumnMap& map,
                               int64_t query0, int64_t column0, uint16_t* k_s) {
  const KeyHalf mine = key_half(threadIdx.x);
  widen_index_key_half(
      column_key(keys, p, map, query0, column0 + mine.key), mine.half,
      reinterpret_cast<uint32_t*>(k_s + mine.key * kRowStride + mine.half * (kIndexDim / 2)));
}

// One tile: S = Q.K^T on the tensor cores for each query's 32 heads x this
// warp's 16 keys, then the logits (and pool-block maxima) of those keys.
template <int kQueries>
__device__ void score_tile(const uint16_t* q_s, const uint16_t* k_s, const float* w_s,
                           float* __restrict__ logits, float* __restrict__ block_max, const Params& p,
                           const ColumnMap& map, const CtaQueries& cta, int64_t column0, int key0,
                           mma::Lane lane) {
  constexpr int kRowTiles = kQueries * kHeadTiles;
  float acc[kRowTiles][kKeyTiles][4] = {};
#pragma unroll
  for (int k0 = 0; k0 < kIndexDim; k0 += mma::kK) {
    uint32_t a[kRowTiles][4];
#pragma unroll
    for (int m = 0; m < kRowTiles; ++m) {
#pragma unroll
      for (int r = 0; r < 4; ++r) a[m][r] = mma::load_a(q_s, kRowStride, m * mma::kM, k0, lane, r);
    }
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t) {
      uint32_t b[2];
#pragma unroll
      for (int r = 0; r < 2; ++r)
        b[r] = mma::load_b_n_major(k_s, kRowStride, key0 + t * mma::kN, k0, lane, r);
#pragma unroll
      for (int m = 0; m < kRowTiles; ++m) mma::mma_bf16_16816(acc[m][t], a[m], b);
    }
  }

  // Per query and key column: sum over heads of w[h] * ReLU(S). A lane holds
  // two columns per n-tile (values i and i + 2 share a column), rows g and
  // g + 8 per m-tile; a query's heads are its two m-tiles.
#pragma unroll
  for (int qi = 0; qi < kQueries; ++qi) {
    const int64_t query = cta.first + qi;
    const bool real_query = query < cta.end;  // uniform across the CTA
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t) {
      float column_sum[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float s = lane_head_sum(acc, w_s, qi, t, j, lane);
        s += __shfl_xor_sync(kFullMask, s, 4);  // over the eight lane groups
        s += __shfl_xor_sync(kFullMask, s, 8);
        s += __shfl_xor_sync(kFullMask, s, 16);
        column_sum[j] = s;
      }
      if (!real_query) continue;
      // Every lane now holds the sums of columns 2p and 2p + 1; lanes 0..3 write them.
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int64_t column = lane_column(column0, key0, t, j, lane);
        const bool real = real_column(p, map, query, column);
        if (real) tile_max = fmaxf(tile_max, column_sum[j]);
        if (lane.group == 0 && column < p.columns) {
          logits[query * p.columns + column] = real ? column_sum[j] : -INFINITY;
        }
      }
      if (block_max == nullptr) continue;  // uniform across the grid
      tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(kFullMask, tile_max, 2));
      const int64_t first = column0 + key0 + t * mma::kN;  // a whole pool block: 8 columns
      if (threadIdx.x % 32 == 0 && first < p.columns) {
        block_max[block_max_slot(p, query, first)] = tile_max;
      }
    }
  }
}

template <int kQueries>
__global__ void __launch_bounds__(kThreads)
    indexer_logits_mma_kernel(const uint8_t* __restrict__ q, const float* __restrict__ weights,
                              const uint8_t* __restrict__ keys, float* __restrict__ logits,
                              float* __restrict__ block_max, Params p, ColumnMap map) {
  using Layout = Smem<kQueries>;
  extern __shared__ __align__(16) unsigned char smem[];
  auto* q_s = reinterpret_cast<uint16_t*>(smem + Layout::q);
  auto* k_s = reinterpret_cast<uint16_t*>(smem + Layout::k);
  auto* w_s = reinterpret_cast<float*>(smem + Layout::w);
  const CtaQueries cta = cta_queries(p, kQueries, blockIdx.y);

  // Rows qi * 32 + h: the CTA's query qi's head h (zero past its last query or head).
  for (int i = threadIdx.x; i < Layout::kRows * kIndexDim; i += kThreads) {
    const QueryRow row = query_row(i / kIndexDim, cta, p);
    q_s[i / kIndexDim * kRowStride + i % kIndexDim] =
        mma::to_bf16(row.real ? decode_e4m3(q[(row.query * p.heads + row.head) * kIndexDim + i % kIndexDim])
                              : 0.0f);  // exact
  }
  for (int i = threadIdx.x; i < Layout::kRows; i += kThreads) {
    const QueryRow row = query_row(i, cta, p);
    w_s[i] = row.real ? weights[row.query * p.heads + row.head] : 0.0f;
  }
  const int warp = threadIdx.x / 32;
  const mma::Lane lane = mma::lane_of(threadIdx.x % 32);
  const int key0 = warp * kKeysPerWarp;
  for (int tile = 0; tile < kTilesPerCta; ++tile) {
    const int64_t column0 = first_column(blockIdx.x, tile);
    if (column0 >= p.columns) break;  // uniform across the CTA
    if (tile > 0) __syncthreads();    // every warp is done with the previous tile's keys
    widen_key_tile(keys, p, map, cta.first, column0, k_s);
    __syncthreads();
    score_tile<kQueries>(q_s, k_s, w_s, logits, block_max, p, map, cta, column0, key0, lane);
  }
}

template <int kQueries>
void launch_tile(const uint8_t* q, const float* weights, const uint8_t* keys, float* out, float* block_max,
                 const Params& p, const ColumnMap& map) {
  allow_shared_memory<indexer_logits_mma_kernel<kQueries>>(static_cast<int>(Smem<kQueries>::bytes));
  const dim3 grid(static_cast<unsigned>(column_ctas(p)), static_cast<unsigned>(query_ctas(p, kQueries)));
  indexer_logits_mma_kernel<kQueries>
      <<<grid, kThreads, Smem<kQueries>::bytes>>>(q, weights, keys, out, block_max, p, map);
}

// Queries that share their keys (a prefill chunk, a decode request's token
// and drafts) go up to four to a CTA, so each key tile is widened once for
// up to 128 rows; a query scoring its own pool one to a CTA (queries_per_cta).
void launch(const uint8_t* q, const float* weights, const uint8_t* keys, float* out, float* block_max,
            const Params& p, const ColumnMap& map) {
  if (p.heads <= 0 || p.heads > kHeads || p.queries <= 0 || p.positions <= 0 || p.columns <= 0) {
    throw std::invalid_argument(
        "indexer logits (tensor cores): heads must be 1..32, queries and positions positive");
  }
  if (p.key_stride > 0 && (p.request_queries <= 0 || p.queries % p.request_queries != 0)) {
    throw std::invalid_argument("indexer logits (tensor cores): queries must be whole requests");
  }
  switch (queries_per_cta(p, map)) {
    case kSharedKeyQueries:
      return launch_tile<kSharedKeyQueries>(q, weights, keys, out, block_max, p, map);
    case 2:
      return launch_tile<2>(q, weights, keys, out, block_max, p, map);
    default:
      return launch_tile<1>(q, weights, keys, out, block_max, p, map);
  }
}

// Key sets `positions` keys apart, a request's queries in a row reading one;
// one set for all (kOneKeySet).
Params scoring_params(int64_t queries, int64_t heads, int64_t positions, int64_t columns,
                      int64_t request_queries) {
  const bool one_set = request_queries == kOneKeySet;
  return {queries,
          heads,
          positions,
          columns,
          one_set ? 0 : positions * kIndexKeyBytes,
          one_set ? queries : request_queries};
}

}  // namespace

void launch_indexer_logits_mma(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                               int64_t queries, int64_t heads, int64_t positions, float* block_max,
                               int64_t request_queries) {
  launch(q, weights, keys, logits, block_max,
         scoring_params(queries, heads, positions, positions, request_queries), {nullptr, 0});
}

void launch_indexer_pool_logits_mma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                    const int32_t* pool, float* pool_logits, int64_t queries, int64_t heads,
                                    int64_t positions, int64_t pool_blocks, int64_t request_queries) {
  if (pool_blocks <= 0) throw std::invalid_argument("pool logits: the pool is empty");
  launch(q, weights, keys, pool_logits, nullptr,
         scoring_params(queries, heads, positions, pool_blocks * kPoolBlock, request_queries),
         {pool, pool_blocks});
}

}  // namespace v41sim::kernels

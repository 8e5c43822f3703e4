// Lightning-indexer logits on tensor cores: mma.sync.m16n8k16, BF16 operands,
// FP32 accumulators (the FP32-unit kernel in indexer_cuda.cu is the baseline).
//
// One CTA per (query, 512 positions or pool slots: four tiles of 128), 8
// warps; queries that share their keys (a prefill chunk) go four to a CTA, so
// a key tile is widened once for 128 query-head rows. The queries' heads x
// 128 dims are staged as BF16 once per CTA; each tile's 128 keys are widened
// to BF16 in shared memory, exactly (an E2M1 value times an E8M0 power of
// two fits BF16), by bit operations on two codes at a time
// (widen_e2m1x2_to_bf16x2) rather than float math per value. Each warp computes S = Q.K^T for each query's 32
// heads x 16 keys, then in registers the logit sum_h w[h] * ReLU(S[h][key]): each lane sums its four heads
// per key, and three shuffles sum over the eight lane groups. An n-tile is 8 keys, which is one
// candidate-pool block, so the block max costs two more shuffles and no extra pass.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/mma_sync.cuh"
#include "kernels/common/v41_shapes.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/pool_slots.h"

namespace v41sim::kernels {
namespace {

constexpr int kThreads = 256;
constexpr int kKeys = 128;                             // positions (or pool slots) per tile
constexpr int kTilesPerCta = 4;                        // the staged queries serve four key tiles
constexpr int kHeads = 32;                             // V4.1's indexer heads: two m-tiles
constexpr int kRowStride = kIndexDim + 8;              // BF16 per Q or K row; +8 spreads rows over banks
constexpr int kKeysPerWarp = kKeys / (kThreads / 32);  // 16: two n-tiles
constexpr int kHeadTiles = kHeads / mma::kM;
constexpr int kKeyTiles = kKeysPerWarp / mma::kN;
constexpr int kPoolBlock = static_cast<int>(kV41PoolBlockSize);
constexpr unsigned kFullMask = 0xffffffffu;
static_assert(mma::kN == kPoolBlock, "one n-tile is one candidate-pool block");

// Which position a CTA column stands for: the next 128 positions, or 128 pool slots.
struct ColumnMap {
  const int32_t* pool;  // null: plain positions
  int64_t pool_blocks;
  __device__ int64_t position(int64_t query, int64_t column) const {
    return pool == nullptr ? column : pool_position(pool, query, pool_blocks, column);
  }
};

struct Params {
  int64_t queries;
  int64_t heads;
  int64_t positions;
  int64_t columns;     // positions, or pool slots
  int64_t key_stride;  // bytes between queries' key sets (0: shared)
};

// Shared memory of a CTA that scores kQueries queries (all sharing the keys
// when kQueries > 1: a prefill chunk) against 128 keys.
template <int kQueries>
struct Smem {
  static constexpr int kRows = kQueries * kHeads;
  static constexpr std::size_t q = 0;
  static constexpr std::size_t k = q + sizeof(uint16_t) * kRows * kRowStride;
  static constexpr std::size_t w = k + sizeof(uint16_t) * kKeys * kRowStride;
  static constexpr std::size_t bytes = w + sizeof(float) * kRows;
};

// Widens a tile's 128 keys into k_s as BF16 rows, two threads per key
// (widen_index_key_half); missing keys are zero rows.
__device__ void widen_key_tile(const uint8_t* __restrict__ keys, const Params& p, const ColumnMap& map,
                               int64_t query0, int64_t column0, uint16_t* k_s) {
  const int key = static_cast<int>(threadIdx.x) / 2;
  const int half = static_cast<int>(threadIdx.x) % 2;
  const int64_t column = column0 + key;
  const int64_t position = column < p.columns ? map.position(query0, column) : p.positions;
  const uint8_t* entry =
      position < p.positions ? keys + query0 * p.key_stride + position * kIndexKeyBytes : nullptr;
  widen_index_key_half(entry, half,
                       reinterpret_cast<uint32_t*>(k_s + key * kRowStride + half * (kIndexDim / 2)));
}

// One tile: S = Q.K^T on the tensor cores for each query's 32 heads x this
// warp's 16 keys, then the logits (and pool-block maxima) of those keys.
template <int kQueries>
__device__ void score_tile(const uint16_t* q_s, const uint16_t* k_s, const float* w_s,
                           float* __restrict__ logits, float* __restrict__ block_max, const Params& p,
                           const ColumnMap& map, int64_t query0, int64_t column0, int key0, mma::Lane lane) {
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
    const int64_t query = query0 + qi;
    const bool real_query = query < p.queries;  // uniform across the CTA
#pragma unroll
    for (int t = 0; t < kKeyTiles; ++t) {
      float column_sum[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        float s = 0.0f;
#pragma unroll
        for (int m = qi * kHeadTiles; m < (qi + 1) * kHeadTiles; ++m) {
          s += w_s[m * mma::kM + mma::c_row(lane, j)] * fmaxf(acc[m][t][j], 0.0f);
          s += w_s[m * mma::kM + mma::c_row(lane, j + 2)] * fmaxf(acc[m][t][j + 2], 0.0f);
        }
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
        const int64_t column = column0 + key0 + t * mma::kN + mma::c_col(lane, j);
        const bool real = column < p.columns && map.position(query, column) < p.positions;
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
        block_max[query * ((p.columns + kPoolBlock - 1) / kPoolBlock) + first / kPoolBlock] = tile_max;
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
  const int64_t query0 = static_cast<int64_t>(blockIdx.y) * kQueries;

  // Rows qi * 32 + h: query query0 + qi's head h (zero past the last query or head).
  for (int i = threadIdx.x; i < Layout::kRows * kIndexDim; i += kThreads) {
    const int row = i / kIndexDim;
    const int64_t query = query0 + row / kHeads;
    const int h = row % kHeads;
    const bool real = query < p.queries && h < p.heads;
    q_s[row * kRowStride + i % kIndexDim] = mma::to_bf16(
        real ? decode_e4m3(q[(query * p.heads + h) * kIndexDim + i % kIndexDim]) : 0.0f);  // exact
  }
  for (int row = threadIdx.x; row < Layout::kRows; row += kThreads) {
    const int64_t query = query0 + row / kHeads;
    const int h = row % kHeads;
    w_s[row] = query < p.queries && h < p.heads ? weights[query * p.heads + h] : 0.0f;
  }
  const int warp = threadIdx.x / 32;
  const mma::Lane lane = mma::lane_of(threadIdx.x % 32);
  const int key0 = warp * kKeysPerWarp;
  for (int tile = 0; tile < kTilesPerCta; ++tile) {
    const int64_t column0 = (static_cast<int64_t>(blockIdx.x) * kTilesPerCta + tile) * kKeys;
    if (column0 >= p.columns) break;  // uniform across the CTA
    if (tile > 0) __syncthreads();    // every warp is done with the previous tile's keys
    widen_key_tile(keys, p, map, query0, column0, k_s);
    __syncthreads();
    score_tile<kQueries>(q_s, k_s, w_s, logits, block_max, p, map, query0, column0, key0, lane);
  }
}

template <int kQueries>
void launch_tile(const uint8_t* q, const float* weights, const uint8_t* keys, float* out, float* block_max,
                 const Params& p, const ColumnMap& map) {
  static bool configured = false;
  if (!configured) {
    CUDA_CHECK(cudaFuncSetAttribute(indexer_logits_mma_kernel<kQueries>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(Smem<kQueries>::bytes)));
    configured = true;
  }
  const dim3 grid(static_cast<unsigned>((p.columns + kKeys * kTilesPerCta - 1) / (kKeys * kTilesPerCta)),
                  static_cast<unsigned>((p.queries + kQueries - 1) / kQueries));
  indexer_logits_mma_kernel<kQueries>
      <<<grid, kThreads, Smem<kQueries>::bytes>>>(q, weights, keys, out, block_max, p, map);
}

// Queries that share their keys (a prefill chunk) go four to a CTA, so each
// key tile is widened once for 128 rows; a decode batch (each query its own
// keys, or its own pool) goes one query to a CTA.
constexpr int kSharedKeyQueries = 4;

void launch(const uint8_t* q, const float* weights, const uint8_t* keys, float* out, float* block_max,
            const Params& p, const ColumnMap& map) {
  if (p.heads <= 0 || p.heads > kHeads || p.queries <= 0 || p.positions <= 0 || p.columns <= 0) {
    throw std::invalid_argument(
        "indexer logits (tensor cores): heads must be 1..32, queries and positions positive");
  }
  if (p.key_stride == 0 && map.pool == nullptr && p.queries >= kSharedKeyQueries) {
    launch_tile<kSharedKeyQueries>(q, weights, keys, out, block_max, p, map);
  } else {
    launch_tile<1>(q, weights, keys, out, block_max, p, map);
  }
}

}  // namespace

void launch_indexer_logits_mma(const uint8_t* q, const float* weights, const uint8_t* keys, float* logits,
                               int64_t queries, int64_t heads, int64_t positions, float* block_max,
                               bool per_query_keys) {
  launch(q, weights, keys, logits, block_max,
         {queries, heads, positions, positions, per_query_keys ? positions * kIndexKeyBytes : 0},
         {nullptr, 0});
}

void launch_indexer_pool_logits_mma(const uint8_t* q, const float* weights, const uint8_t* keys,
                                    const int32_t* pool, float* pool_logits, int64_t queries, int64_t heads,
                                    int64_t positions, int64_t pool_blocks, bool per_query_keys) {
  if (pool_blocks <= 0) throw std::invalid_argument("pool logits: the pool is empty");
  launch(
      q, weights, keys, pool_logits, nullptr,
      {queries, heads, positions, pool_blocks * kPoolBlock, per_query_keys ? positions * kIndexKeyBytes : 0},
      {pool, pool_blocks});
}

}  // namespace v41sim::kernels

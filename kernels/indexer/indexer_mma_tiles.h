// The lightning indexer's logits on mma.sync (indexer_mma_cuda.cu), as plain
// host-and-device functions a CPU test replays: which queries and columns a
// CTA takes, which thread widens which half of a key, which keys a warp
// scores, and each lane's share of a logit and of a pool block's maximum.
//
// One CTA per (1, 2 or 4 queries, 512 columns: four tiles of 128), 8 warps.
// A column is a position, or a candidate-pool slot. Queries that share their
// keys go up to four to a CTA, so a key tile is widened once for up to 128
// query-head rows: a prefill chunk's, or a decode request's token and the
// drafts it verifies (a CTA never mixes two requests: 6 queries are a CTA of
// 4 and one of 2); a query that scores its own pool goes one to a CTA.
// Per tile:
//   - its 128 keys are widened to BF16 in shared memory, two threads a key;
//   - each warp computes S = Q.K^T for each query's 32 heads x its 16 keys
//     (two m-tiles of heads, two n-tiles of keys);
//   - then in registers the logit sum_h w[h] * ReLU(S[h][key]): each lane
//     sums its four heads a column (rows g and g + 8 of each of the query's
//     two m-tiles), and shuffles over the eight lane groups add the rest;
//   - an n-tile is 8 keys, one candidate-pool block, so the block's maximum
//     costs two more shuffles (over the four lanes of a row).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/pool_slots.h"

namespace v41sim::kernels::indexer_mma {

inline constexpr int kThreads = 256;
inline constexpr int kKeys = 128;                 // columns per tile
inline constexpr int kTilesPerCta = 4;            // the staged queries serve four key tiles
inline constexpr int kHeads = 32;                 // V4.1's indexer heads: two m-tiles
inline constexpr int kRowStride = kIndexDim + 8;  // BF16 per Q or K row; +8 spreads rows over banks
inline constexpr int kKeysPerWarp = kKeys / (kThreads / 32);  // 16: two n-tiles
inline constexpr int kHeadTiles = kHeads / mma::kM;
inline constexpr int kKeyTiles = kKeysPerWarp / mma::kN;
inline constexpr int kPoolBlock = static_cast<int>(kV41PoolBlockSize);
inline constexpr int kSharedKeyQueries = 4;  // queries a CTA where they share their keys
static_assert(mma::kN == kPoolBlock, "one n-tile is one candidate-pool block");
static_assert(kThreads == 2 * kKeys, "two threads widen a key");

struct Params {
  int64_t queries;
  int64_t heads;
  int64_t positions;
  int64_t columns;          // positions, or pool slots
  int64_t key_stride;       // bytes between key sets (0: one set, every query's)
  int64_t request_queries;  // queries in a row that read one key set (where key_stride > 0)
};

// Which position a column stands for: the column itself, or a pool slot's.
struct ColumnMap {
  const int32_t* pool;  // null: plain positions
  int64_t pool_blocks;
  V41_HD int64_t position(int64_t query, int64_t column) const {
    return pool == nullptr ? column : pool_position(pool, query, pool_blocks, column);
  }
};

// Queries that read one key set: all of them, or a request's.
V41_HD int64_t set_queries(const Params& p) { return p.key_stride == 0 ? p.queries : p.request_queries; }
V41_HD int64_t key_set(const Params& p, int64_t query) {
  return p.key_stride == 0 ? 0 : query / p.request_queries;
}

// Queries a CTA where `queries` share a key set and score plain positions:
// all of them up to two, else four (three pad a row of queries; a template
// each, so the accumulators stay in registers).
V41_HD int shared_key_queries_per_cta(int64_t queries) {
  return queries >= 3 ? kSharedKeyQueries : static_cast<int>(queries);
}
V41_HD int queries_per_cta(const Params& p, const ColumnMap& map) {
  return map.pool != nullptr ? 1 : shared_key_queries_per_cta(set_queries(p));
}

// The grid: columns in CTAs of four tiles (x); queries (y) in CTAs of up to
// `per_cta` queries of one key set each, a set's queries in
// ceil(set / per_cta) CTAs.
V41_HD int64_t column_ctas(const Params& p) {
  return (p.columns + kKeys * kTilesPerCta - 1) / (kKeys * kTilesPerCta);
}
V41_HD int64_t query_ctas(const Params& p, int per_cta) {
  const int64_t n = set_queries(p);
  return p.queries / n * ((n + per_cta - 1) / per_cta);
}

// The queries CTA row y stages, [first, end): all of one key set.
struct CtaQueries {
  int64_t first;
  int64_t end;
};
V41_HD CtaQueries cta_queries(const Params& p, int per_cta, int64_t y) {
  const int64_t n = set_queries(p), ctas_a_set = (n + per_cta - 1) / per_cta;
  const int64_t set_first = y / ctas_a_set * n, first = set_first + y % ctas_a_set * per_cta;
  return {first, first + per_cta < set_first + n ? first + per_cta : set_first + n};
}
V41_HD int64_t first_column(int64_t cta_x, int tile) { return (cta_x * kTilesPerCta + tile) * kKeys; }

// Shared memory of a CTA that scores kQueries queries against 128 keys.
template <int kQueries>
struct Smem {
  static constexpr int kRows = kQueries * kHeads;
  static constexpr std::size_t q = 0;
  static constexpr std::size_t k = q + sizeof(uint16_t) * kRows * kRowStride;
  static constexpr std::size_t w = k + sizeof(uint16_t) * kKeys * kRowStride;
  static constexpr std::size_t bytes = w + sizeof(float) * kRows;
};

// Row `row` of the staged queries: the CTA's query first + row / 32's head
// row % 32, real unless past its last query or head (then zeros, weight 0).
struct QueryRow {
  int64_t query;
  int64_t head;
  bool real;
};
V41_HD QueryRow query_row(int row, const CtaQueries& cta, const Params& p) {
  const int64_t query = cta.first + row / kHeads, head = row % kHeads;
  return {query, head, query < cta.end && head < p.heads};
}

// The half of a tile's key a thread widens: key thread / 2, dims [64 half, 64 half + 64).
struct KeyHalf {
  int key;
  int half;
};
V41_HD KeyHalf key_half(int thread) { return {thread / 2, thread % 2}; }

// The key of a tile's column for the CTA's (first) query: null past the
// columns or past the last position (a zero row, its logit -inf).
V41_HD const uint8_t* column_key(const uint8_t* keys, const Params& p, const ColumnMap& map, int64_t query0,
                                 int64_t column) {
  const int64_t position = column < p.columns ? map.position(query0, column) : p.positions;
  return position < p.positions ? keys + key_set(p, query0) * p.key_stride + position * kIndexKeyBytes
                                : nullptr;
}

// The column of a lane's accumulator pair j (0 or 1) of n-tile t, in a warp
// whose keys start at key0 (warp x 16) of a tile starting at column0.
V41_HD int64_t lane_column(int64_t column0, int key0, int t, int j, mma::Lane lane) {
  return column0 + key0 + t * mma::kN + mma::c_col(lane, j);
}

// A lane's share of query qi's logit for column j of n-tile t: its four heads
// (rows g and g + 8 of the query's two m-tiles), each weighted after ReLU.
template <int kRowTiles>
V41_HD float lane_head_sum(const float (&acc)[kRowTiles][kKeyTiles][4], const float* w_s, int qi, int t,
                           int j, mma::Lane lane) {
  float s = 0.0f;
  V41_UNROLL for (int m = qi * kHeadTiles; m < (qi + 1) * kHeadTiles; ++m) {
    s += w_s[m * mma::kM + mma::c_row(lane, j)] * fmaxf(acc[m][t][j], 0.0f);
    s += w_s[m * mma::kM + mma::c_row(lane, j + 2)] * fmaxf(acc[m][t][j + 2], 0.0f);
  }
  return s;
}

// Whether a column holds a real position for the query (else its logit is -inf).
V41_HD bool real_column(const Params& p, const ColumnMap& map, int64_t query, int64_t column) {
  return column < p.columns && map.position(query, column) < p.positions;
}

// Where the pool-block maximum of the block starting at `first` goes.
V41_HD int64_t block_max_slot(const Params& p, int64_t query, int64_t first) {
  return query * ((p.columns + kPoolBlock - 1) / kPoolBlock) + first / kPoolBlock;
}

}  // namespace v41sim::kernels::indexer_mma

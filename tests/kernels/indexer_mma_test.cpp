// The mma.sync indexer logits' logic on the CPU, CTA by CTA: the queries
// staged and each tile's keys widened by the kernel's own functions
// (indexer_mma_tiles.h) into poisoned images of its shared memory, each
// warp's S = Q.K^T taken through the fragment loads it issues
// (mma_fragments.h) on an emulated mma.m16n8k16, and each lane's epilogue
// (its four heads' weighted ReLUs, the shuffles over the lane groups, the
// lanes that store, the pool-block maxima) replayed with the shuffles'
// order. It must reproduce the CPU reference for a prefill chunk (four
// queries a CTA, one CTA partial), a decode batch (each query its own keys,
// fewer than 32 heads), requests of a token and its drafts reading their
// request's keys (2 a CTA, or 4 and 2), and a Reindex layer's pool (slots past
// the last position), with partial last tiles and CTAs of fewer tiles, each
// logit written once. What this cannot show: the barriers' ordering (the
// device checks do).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/indexer/indexer_mma_tiles.h"
#include "kernels/indexer/indexer_reference.h"
#include "tests/kernels/mma_bf16_emulation.h"

namespace v41sim::kernels {
namespace {

using namespace indexer_mma;
using testing::kLanes;
using testing::kPoisonBf16;

struct Inputs {
  Params p;
  std::vector<uint8_t> q, keys;
  std::vector<float> w;
  std::vector<int32_t> pool;  // empty: plain positions
  ColumnMap map() const { return {pool.empty() ? nullptr : pool.data(), p.columns / kPoolBlock}; }
};

struct Outputs {
  std::vector<float> logits, block_max;  // queries x columns; queries x blocks (where asked for)
  std::vector<int> logit_writes;         // how often each logit was stored
};

// values[l] += values[l ^ mask] in every lane at once, as __shfl_xor_sync gives it.
void shuffle_add(float (&values)[kLanes], int mask) {
  float before[kLanes];
  std::memcpy(before, values, sizeof before);
  for (int l = 0; l < kLanes; ++l) values[l] = before[l] + before[l ^ mask];
}
void shuffle_max(float (&values)[kLanes], int mask) {
  float before[kLanes];
  std::memcpy(before, values, sizeof before);
  for (int l = 0; l < kLanes; ++l) values[l] = std::fmax(before[l], before[l ^ mask]);
}

template <int kQueries>
class CtaReplay {
 public:
  static constexpr int kRows = Smem<kQueries>::kRows;
  static constexpr int kRowTiles = kQueries * kHeadTiles;

  CtaReplay(const Inputs& in, int64_t cta_x, int64_t cta_y, Outputs& out)
      : in_(in), map_(in.map()), cta_(cta_queries(in.p, kQueries, cta_y)), out_(out) {
    stage_queries();
    for (int tile = 0; tile < kTilesPerCta; ++tile) {
      const int64_t column0 = first_column(cta_x, tile);
      if (column0 >= in_.p.columns) break;
      widen_keys(column0);
      for (int warp = 0; warp < kThreads / kLanes; ++warp) score(column0, warp * kKeysPerWarp);
    }
  }

 private:
  void stage_queries() {
    for (int i = 0; i < kRows * kIndexDim; ++i) {
      const QueryRow row = query_row(i / kIndexDim, cta_, in_.p);
      q_s_[static_cast<std::size_t>(i / kIndexDim * kRowStride + i % kIndexDim)] =
          mma::to_bf16(row.real ? decode_e4m3(in_.q[static_cast<std::size_t>(
                                      (row.query * in_.p.heads + row.head) * kIndexDim + i % kIndexDim)])
                                : 0.0f);
    }
    for (int i = 0; i < kRows; ++i) {
      const QueryRow row = query_row(i, cta_, in_.p);
      w_s_[i] = row.real ? in_.w[static_cast<std::size_t>(row.query * in_.p.heads + row.head)] : 0.0f;
    }
  }

  void widen_keys(int64_t column0) {
    std::fill(k_s_.begin(), k_s_.end(), kPoisonBf16);
    for (int thread = 0; thread < kThreads; ++thread) {
      const KeyHalf mine = key_half(thread);
      uint32_t words[kIndexDim / 4];
      widen_index_key_half(column_key(in_.keys.data(), in_.p, map_, cta_.first, column0 + mine.key),
                           mine.half, words);
      std::memcpy(&k_s_[static_cast<std::size_t>(mine.key * kRowStride + mine.half * (kIndexDim / 2))], words,
                  sizeof words);
    }
  }

  // A warp's keys [key0, key0 + 16) of the tile: S, then each lane's epilogue.
  void score(int64_t column0, int key0) {
    static float acc[kLanes][kRowTiles][kKeyTiles][4];  // each lane's accumulators, as the kernel holds them
    std::memset(acc, 0, sizeof acc);
    for (int k0 = 0; k0 < kIndexDim; k0 += mma::kK) {
      for (int m = 0; m < kRowTiles; ++m) {
        for (int t = 0; t < kKeyTiles; ++t) {
          float d[kLanes][4];
          for (int lane = 0; lane < kLanes; ++lane) std::memcpy(d[lane], acc[lane][m][t], sizeof d[lane]);
          testing::emulate_warp_mma(
              d,
              [&](mma::Lane l, int r) { return mma::load_a(q_s_.data(), kRowStride, m * mma::kM, k0, l, r); },
              [&](mma::Lane l, int r) {
                return mma::load_b_n_major(k_s_.data(), kRowStride, key0 + t * mma::kN, k0, l, r);
              });
          for (int lane = 0; lane < kLanes; ++lane) std::memcpy(acc[lane][m][t], d[lane], sizeof d[lane]);
        }
      }
    }
    for (int qi = 0; qi < kQueries; ++qi) {
      const int64_t query = cta_.first + qi;
      for (int t = 0; t < kKeyTiles; ++t) {
        float sums[2][kLanes];
        for (int j = 0; j < 2; ++j) {
          for (int lane = 0; lane < kLanes; ++lane)
            sums[j][lane] = lane_head_sum(acc[lane], w_s_, qi, t, j, mma::lane_of(lane));
          for (const int mask : {4, 8, 16}) shuffle_add(sums[j], mask);
        }
        if (query >= cta_.end) continue;
        float tile_max[kLanes];
        for (int lane = 0; lane < kLanes; ++lane) {
          tile_max[lane] = -INFINITY;
          for (int j = 0; j < 2; ++j) {
            const int64_t column = lane_column(column0, key0, t, j, mma::lane_of(lane));
            const bool real = real_column(in_.p, map_, query, column);
            if (real) tile_max[lane] = std::fmax(tile_max[lane], sums[j][lane]);
            if (mma::lane_of(lane).group == 0 && column < in_.p.columns) {
              const auto at = static_cast<std::size_t>(query * in_.p.columns + column);
              out_.logits[at] = real ? sums[j][lane] : -INFINITY;
              ++out_.logit_writes[at];
            }
          }
        }
        if (out_.block_max.empty()) continue;
        for (const int mask : {1, 2}) shuffle_max(tile_max, mask);
        const int64_t first = column0 + key0 + t * mma::kN;
        if (first < in_.p.columns)
          out_.block_max[static_cast<std::size_t>(block_max_slot(in_.p, query, first))] = tile_max[0];
      }
    }
  }

  const Inputs& in_;
  const ColumnMap map_;
  const CtaQueries cta_;
  Outputs& out_;
  std::vector<uint16_t> q_s_ = std::vector<uint16_t>(kRows * kRowStride, kPoisonBf16);
  std::vector<uint16_t> k_s_ = std::vector<uint16_t>(kKeys * kRowStride, kPoisonBf16);
  float w_s_[kRows];
};

// The whole grid, as the launcher picks its CTAs; outputs poisoned first.
Outputs replay(const Inputs& in, bool with_block_max) {
  const int64_t blocks = (in.p.columns + kPoolBlock - 1) / kPoolBlock;
  const auto logit_count = static_cast<std::size_t>(in.p.queries * in.p.columns);
  Outputs out{std::vector<float>(logit_count, NAN),
              std::vector<float>(with_block_max ? static_cast<std::size_t>(in.p.queries * blocks) : 0u, NAN),
              std::vector<int>(logit_count, 0)};
  const int per_cta = queries_per_cta(in.p, in.map());
  for (int64_t y = 0; y < query_ctas(in.p, per_cta); ++y) {
    for (int64_t x = 0; x < column_ctas(in.p); ++x) {
      if (per_cta == kSharedKeyQueries) {
        CtaReplay<kSharedKeyQueries>(in, x, y, out);
      } else if (per_cta == 2) {
        CtaReplay<2>(in, x, y, out);
      } else {
        CtaReplay<1>(in, x, y, out);
      }
    }
  }
  for (std::size_t i = 0; i < logit_count; ++i) EXPECT_EQ(out.logit_writes[i], 1) << "logit " << i;
  return out;
}

// request_queries: queries in a row reading one request's keys; 0: all one
// sequence's (a prefill chunk).
Inputs make_inputs(int64_t queries, int64_t heads, int64_t positions, int64_t request_queries,
                   uint32_t seed) {
  const bool one_set = request_queries == 0;
  const int64_t key_sets = one_set ? 1 : queries / request_queries;
  return {{queries, heads, positions, positions, one_set ? 0 : positions * kIndexKeyBytes,
           one_set ? queries : request_queries},
          index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), seed)),
          quantize_index_keys_reference(
              normal_values(static_cast<std::size_t>(key_sets * positions * kIndexDim), seed + 1),
              key_sets * positions),
          normal_values(static_cast<std::size_t>(queries * heads), seed + 2),
          {}};
}

// -inf where the reference has it; elsewhere the sums' order alone differs
// (E4M3 queries and FP4 keys widen to BF16 exactly, their products are exact in FP32).
void expect_logits_match(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  double error = 0, norm = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      ASSERT_EQ(got[i], want[i]) << "logit " << i;
      continue;
    }
    ASSERT_TRUE(std::isfinite(got[i])) << "logit " << i << " not written or not finite";
    error += (got[i] - want[i]) * double{got[i] - want[i]};
    norm += want[i] * double{want[i]};
  }
  EXPECT_LT(std::sqrt(error / norm), 1e-5);
}

// A prefill chunk: 6 queries sharing 1,100 keys, four queries a CTA (the
// second CTA's last two past the last query); columns in CTAs of 512 (the
// last of 76: one partial tile); the pool blocks' maxima those of the logits.
TEST(IndexerMma, PrefillCtasReproduceTheReference) {
  const Inputs in = make_inputs(6, kHeads, 1100, 0, 41);
  ASSERT_EQ(queries_per_cta(in.p, in.map()), kSharedKeyQueries);
  const Outputs got = replay(in, true);
  expect_logits_match(got.logits, indexer_logits_reference(in.q, in.w, in.keys, 6, kHeads, 1100));
  EXPECT_EQ(got.block_max, block_max_reference(got.logits, 6, 1100, kPoolBlock));
}

// A decode batch: 3 queries, each its own request's 1,100 keys, 20 heads
// (the staged rows past them zero), one query a CTA.
TEST(IndexerMma, DecodeCtasReproduceTheReference) {
  const int64_t queries = 3, heads = 20, positions = 1100;
  const Inputs in = make_inputs(queries, heads, positions, 1, 51);
  ASSERT_EQ(queries_per_cta(in.p, in.map()), 1);
  const Outputs got = replay(in, true);
  expect_logits_match(got.logits,
                      indexer_logits_reference(in.q, in.w, in.keys, queries, heads, positions, true));
  EXPECT_EQ(got.block_max, block_max_reference(got.logits, queries, positions, kPoolBlock));
}

// Decode with drafts: 3 requests over their own 1,100 keys, 24 heads. With
// 6 queries a request (its token and 5 drafts) a request's queries take a
// CTA of 4 and one of 2, which must stage and write none of the next
// request's; with 2 a request, one CTA of 2 each. Each reads its request's
// keys.
TEST(IndexerMma, RequestCtasReadTheirRequestsKeys) {
  const int64_t requests = 3, heads = 24, positions = 1100;
  for (const int64_t request_queries : {6, 2}) {
    SCOPED_TRACE(request_queries);
    const int64_t queries = requests * request_queries;
    const Inputs in = make_inputs(queries, heads, positions, request_queries, 71);
    const int per_cta = queries_per_cta(in.p, in.map());
    ASSERT_EQ(per_cta, request_queries == 6 ? kSharedKeyQueries : 2);
    ASSERT_EQ(query_ctas(in.p, per_cta), request_queries == 6 ? 2 * requests : requests);
    const Outputs got = replay(in, true);
    expect_logits_match(
        got.logits,
        indexer_logits_reference(in.q, in.w, key_set_a_query(in.keys, queries, request_queries, positions),
                                 queries, heads, positions, true));
    EXPECT_EQ(got.block_max, block_max_reference(got.logits, queries, positions, kPoolBlock));
  }
}

// The CTA rows take each query once, a CTA's queries all of one key set and
// at most as many as it stages: requests of 1 to 8 queries, and one set
// (a prefill chunk) of 10.
TEST(IndexerMma, QueryCtasTakeEachQueryOnceWithinItsKeySet) {
  std::vector<Params> cases{{10, kHeads, 100, 100, 0, 10}};
  for (const int64_t request_queries : {1, 2, 3, 5, 6, 8})
    cases.push_back({5 * request_queries, kHeads, 100, 100, 100 * kIndexKeyBytes, request_queries});
  for (const Params& p : cases) {
    SCOPED_TRACE(p.request_queries);
    const int per_cta = queries_per_cta(p, {nullptr, 0});
    std::vector<int> taken(static_cast<std::size_t>(p.queries), 0);
    for (int64_t y = 0; y < query_ctas(p, per_cta); ++y) {
      const CtaQueries cta = cta_queries(p, per_cta, y);
      ASSERT_LT(cta.first, cta.end);
      ASSERT_LE(cta.end - cta.first, per_cta);
      for (int64_t query = cta.first; query < cta.end; ++query) {
        ++taken[static_cast<std::size_t>(query)];
        EXPECT_EQ(key_set(p, query), key_set(p, cta.first)) << "query " << query;
      }
    }
    for (int n : taken) ASSERT_EQ(n, 1);
  }
}

// A Reindex layer: 2 requests over their own 997 keys, 1 or 2 queries a
// request, each query scoring its own pool of 70 blocks (560 slots: a CTA of
// 512 and one of 48) in its request's keys, the last block short (997 = 124
// x 8 + 5), so its last three slots hold -inf.
void expect_pool_ctas_reproduce_the_reference(int64_t request_queries) {
  const int64_t queries = 2 * request_queries, positions = 997, pool_blocks = 70;
  Inputs in = make_inputs(queries, kHeads, positions, request_queries, 61);
  in.p.columns = pool_blocks * kPoolBlock;
  const int64_t blocks = (positions + kPoolBlock - 1) / kPoolBlock;
  for (int64_t t = 0; t < queries; ++t) {
    for (int64_t s = 0; s < pool_blocks; ++s)  // ascending, the last block in each: the last 70, or spread
      in.pool.push_back(
          static_cast<int32_t>(t == 0 ? blocks - pool_blocks + s : s * (blocks - 1) / (pool_blocks - 1)));
  }
  ASSERT_EQ(queries_per_cta(in.p, in.map()), 1);
  const Outputs got = replay(in, false);
  expect_logits_match(
      got.logits,
      pool_logits_reference(in.q, in.w, key_set_a_query(in.keys, queries, request_queries, positions),
                            in.pool, queries, kHeads, positions, kPoolBlock, true));
  for (int64_t t = 0; t < queries; ++t)
    EXPECT_TRUE(std::isinf(got.logits[static_cast<std::size_t>((t + 1) * in.p.columns - 1)]));
}

TEST(IndexerMma, PoolCtasReproduceTheReference) {
  for (const int64_t request_queries : {1, 2}) {
    SCOPED_TRACE(request_queries);
    expect_pool_ctas_reproduce_the_reference(request_queries);
  }
}

// The maps cover their work once: two threads every key's 128 dims; the
// warps' keys every column of a tile; each lane's columns, over the group-0
// lanes that store, every column of its n-tiles; the staged rows every
// (query, head) of a CTA.
TEST(IndexerMma, ThreadsAndLanesCoverTheTileOnce) {
  std::vector<int> widened(kKeys * kIndexDim, 0), stored(kKeys, 0);
  for (int thread = 0; thread < kThreads; ++thread) {
    const KeyHalf mine = key_half(thread);
    for (int dim = 0; dim < kIndexDim / 2; ++dim)
      ++widened[static_cast<std::size_t>(mine.key * kIndexDim + mine.half * (kIndexDim / 2) + dim)];
  }
  for (int warp = 0; warp < kThreads / kLanes; ++warp) {
    for (int lane = 0; lane < kLanes; ++lane) {
      if (mma::lane_of(lane).group != 0) continue;
      for (int t = 0; t < kKeyTiles; ++t) {
        for (int j = 0; j < 2; ++j)
          ++stored[static_cast<std::size_t>(lane_column(0, warp * kKeysPerWarp, t, j, mma::lane_of(lane)))];
      }
    }
  }
  for (int n : widened) ASSERT_EQ(n, 1);
  for (int n : stored) ASSERT_EQ(n, 1);
  const Params p{10, kHeads, 100, 100, 0, 10};
  std::vector<int> rows(static_cast<std::size_t>(kSharedKeyQueries * kHeads), 0);
  for (int row = 0; row < Smem<kSharedKeyQueries>::kRows; ++row) {
    const QueryRow r = query_row(row, cta_queries(p, kSharedKeyQueries, 1), p);
    ++rows[static_cast<std::size_t>((r.query - 4) * kHeads + r.head)];
  }
  for (int n : rows) ASSERT_EQ(n, 1);
}

}  // namespace
}  // namespace v41sim::kernels

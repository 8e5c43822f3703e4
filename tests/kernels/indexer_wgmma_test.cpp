// The FP8 wgmma indexer logits' logic on the CPU, CTA by CTA: the queries and
// each tile's keys copied by the kernel's own index functions
// (indexer_wgmma_tiles.h; partial copies zero-filled as cp.async does, the
// rest of the images poisoned), the keys widened into the swizzled tile with
// their scales folded in, each wgmma step read through its descriptors as
// the hardware addresses a 128-byte swizzle, and each thread's epilogue (its
// head weights, ReLU, its quad's two shuffles, the key's scale, the lane
// that stores) replayed. It must reproduce the CPU reference, with a partial
// CTA of queries, a partial last tile and a CTA of fewer tiles. What this
// cannot show: the hardware's own reading of the descriptors, the cp.async,
// wgmma and mbarrier ordering (the device check does).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/common/compare.h"
#include "kernels/common/random_values.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/common/wgmma_layout.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/indexer/indexer_wgmma_decode_tiles.h"
#include "kernels/indexer/indexer_wgmma_tiles.h"
#include "kernels/indexer/pool_slots.h"
#include "tests/kernels/device_check_support.h"

namespace v41sim::kernels {
namespace {

using namespace indexer_wgmma;

struct Inputs {
  int64_t queries, positions;
  std::vector<uint8_t> q, keys;
  std::vector<float> w;
};

void place(std::vector<uint8_t>& image, const PartialCopy& copy, const std::vector<uint8_t>& source) {
  for (int b = 0; b < kChunk; ++b)
    image[static_cast<std::size_t>(copy.smem + b)] =
        b < copy.bytes ? source[static_cast<std::size_t>(copy.global + b)] : 0;
}

// A stage as the producer leaves it: a tile's keys of a key set (`keys`
// from `base` on), chunk c from copy_of(c) (key_copy, pool_key_copy),
// copied as stored, the rest of the image poisoned, then widened into the
// swizzled tile.
template <typename CopyOf>
std::vector<uint8_t> staged_tile(const std::vector<uint8_t>& keys, int64_t base, CopyOf&& copy_of) {
  static const std::vector<E2m1ToE4m3Table> tables = [] {
    std::vector<E2m1ToE4m3Table> t;
    for (int s = 0; s < kFoldingTables; ++s) t.push_back(e2m1_to_e4m3_table(s));
    return t;
  }();
  std::vector<uint8_t> stage(kStageBytes, 0xEE);
  for (int c = 0; c < kRawChunks; ++c) {
    PartialCopy copy = copy_of(c);
    copy.global += base;
    place(stage, copy, keys);
  }
  for (int q = 0; q < kWidenedChunks; ++q) {
    const WidenedChunk chunk = widen_key_chunk(stage.data(), q, tables.data());
    std::memcpy(&stage[static_cast<std::size_t>(chunk.tile_offset)], chunk.words, sizeof chunk.words);
  }
  return stage;
}

// A wgmma's product over the 128 dimensions, keys x columns, each step's
// operands read through its descriptors: the stage's keys (A) and the
// query image's rows from `query_offset` on (B).
std::vector<std::vector<float>> tile_product(const std::vector<uint8_t>& stage,
                                             const std::vector<uint8_t>& query_tile, int query_offset,
                                             int columns) {
  std::vector<std::vector<float>> d(wgmma::kM, std::vector<float>(static_cast<std::size_t>(columns), 0.0f));
  for (int step = 0; step < wgmma::kRowBytes / wgmma::kK; ++step) {
    const uint64_t a = wgmma::descriptor(static_cast<uint32_t>(step * wgmma::kK)),
                   b = wgmma::descriptor(static_cast<uint32_t>(query_offset + step * wgmma::kK));
    for (int row = 0; row < wgmma::kM; ++row) {
      for (int col = 0; col < columns; ++col) {
        for (int byte = 0; byte < wgmma::kK; ++byte)
          d[static_cast<std::size_t>(row)][static_cast<std::size_t>(col)] +=
              decode_e4m3(stage[wgmma::read_address(a, row, byte)]) *
              decode_e4m3(query_tile[wgmma::read_address(b, col, byte)]);
      }
    }
  }
  return d;
}

// One CTA: queries first_query.., positions first_key.. (up to kTilesPerCta tiles).
void run_cta(const Inputs& in, int64_t first_query, int64_t first_key, std::vector<float>& logits) {
  std::vector<uint8_t> query_tile(kQueryTileBytes, 0xEE);
  for (int c = 0; c < kQueryChunks; ++c) place(query_tile, query_copy(c, first_query, in.queries), in.q);
  const int64_t tiles = cta_tiles(first_key, in.positions, kTilesPerCta);
  for (int64_t kb = 0; kb < tiles; ++kb) {
    const std::vector<uint8_t> stage =
        staged_tile(in.keys, 0, [&](int c) { return key_copy(c, first_key + kb * kKeys, in.positions); });
    for (int warpgroup = 0; warpgroup < 2; ++warpgroup) {
      const auto d = tile_product(stage, query_tile, warpgroup * kGroupTileBytes, kColumns);
      // Each thread's sums per (its two key rows, query), then its quad's.
      static float sums[wgmma::kThreads][2][kGroupQueries];
      std::memset(sums, 0, sizeof sums);
      for (int t = 0; t < wgmma::kThreads; ++t) {
        for (int i = 0; i < 64; ++i) {
          const int64_t query = first_query + warpgroup * kGroupQueries + query_of(t, i);
          const float weight =
              query < in.queries ? in.w[static_cast<std::size_t>(query * kHeads + head_of(t, i))] : 0.0f;
          sums[t][(i % 4) / 2][i / 16] +=
              weight * std::fmax(d[static_cast<std::size_t>(wgmma::accumulator_row(t, i))]
                                  [static_cast<std::size_t>(wgmma::accumulator_col(t, i))],
                                 0.0f);
        }
      }
      for (int t = 0; t < wgmma::kThreads; ++t) {
        const int quad = t - t % 4, my_query = t % 4;
        const int row = wgmma::accumulator_row(t, 0);
        for (int r = 0; r < 2; ++r) {
          float v = 0;
          for (int lane = quad; lane < quad + 4; ++lane) v += sums[lane][r][my_query];
          const int64_t query = first_query + warpgroup * kGroupQueries + my_query,
                        position = first_key + kb * kKeys + row + 8 * r;
          if (query < in.queries && position < in.positions)
            logits[static_cast<std::size_t>(query * in.positions + position)] =
                v * key_scale(stage.data(), row + 8 * r);
        }
      }
    }
  }
}

TEST(IndexerWgmma, CtasReproduceTheReference) {
  // Queries: a CTA of 8 and one of 2 (its second warpgroup's all past the
  // last); keys: a CTA of 16 tiles, then one of 3 (the last of 48 keys).
  Inputs in{10, 1200, {}, {}, {}};
  in.q = index_queries_e4m3(normal_values(static_cast<std::size_t>(in.queries * kHeads * kIndexDim), 31));
  in.w = normal_values(static_cast<std::size_t>(in.queries * kHeads), 32);
  in.keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(in.positions * kIndexDim), 33), in.positions);
  std::vector<float> logits(static_cast<std::size_t>(in.queries * in.positions), NAN);
  for (int64_t first_query = 0; first_query < in.queries; first_query += kQueries) {
    for (int64_t first_key = 0; first_key < in.positions; first_key += kTilesPerCta * kKeys)
      run_cta(in, first_query, first_key, logits);
  }
  const std::vector<float> want =
      indexer_logits_reference(in.q, in.w, in.keys, in.queries, kHeads, in.positions);
  EXPECT_LT(relative_norm_error(logits, want), 1e-5);
}

// One decode CTA (indexer_wgmma_decode_tiles.h): request `request`'s
// `request_queries` queries (in a row from request x request_queries) over
// its own keys, slots first_slot.. (up to kTilesPerCta tiles): the
// positions, or with a pool (pool_blocks block ids a query, one query a
// request) the pool's slots. The queries' tiles are placed side by side as
// the producer copies them, each tile staged once and multiplied by each
// query's tile in turn; each thread's epilogue with its quad's shuffles in
// their order, the lanes that store, and (no pool) the block maxima over the
// lanes 4 apart. Every logit and block max is written once.
void run_decode_cta(const Inputs& in, const std::vector<int32_t>* pool, int64_t request, int request_queries,
                    int64_t first_slot, std::vector<float>& logits, std::vector<float>& block_max) {
  namespace dec = indexer_wgmma_decode;
  constexpr int kThreads = wgmma::kThreads;
  const int64_t first_query = request * request_queries;
  const int64_t pool_blocks = pool != nullptr ? static_cast<int64_t>(pool->size()) / in.queries : 0;
  const int64_t slots = pool != nullptr ? pool_blocks * kV41PoolBlockSize : in.positions;
  std::vector<uint8_t> query_tiles(static_cast<std::size_t>(request_queries * dec::kQueryTileBytes), 0xEE);
  for (int c = 0; c < request_queries * dec::kQueryChunks; ++c) {
    const int j = c / dec::kQueryChunks;
    place(query_tiles, dec::query_copy(c % dec::kQueryChunks, j, first_query + j), in.q);
  }
  const int64_t tiles = cta_tiles(first_slot, slots, dec::kTilesPerCta);
  const int64_t blocks = (in.positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  for (int64_t kb = 0; kb < tiles; ++kb) {
    const int64_t tile_first = first_slot + kb * kKeys;
    const std::vector<uint8_t> stage =
        staged_tile(in.keys, dec::key_set_offset(request, in.positions), [&](int c) {
          return pool != nullptr ? dec::pool_key_copy(c, tile_first, pool->data() + first_query * pool_blocks,
                                                      pool_blocks, in.positions)
                                 : key_copy(c, tile_first, in.positions);
        });
    for (int j = 0; j < request_queries; ++j) {
      const int64_t query = first_query + j;
      const auto position_of = [&](int64_t slot) {
        return pool != nullptr ? pool_position(pool->data(), query, pool_blocks, slot) : slot;
      };
      const auto d = tile_product(stage, query_tiles, j * dec::kQueryTileBytes, kHeads);
      float sums[kThreads][2] = {};
      for (int t = 0; t < kThreads; ++t) {
        for (int i = 0; i < dec::kAccumulators; ++i) {
          const float s =
              d[static_cast<std::size_t>(dec::key_row(t, i))][static_cast<std::size_t>(dec::head_of(t, i))];
          sums[t][dec::row_half(i)] +=
              in.w[static_cast<std::size_t>(query * kHeads + dec::head_of(t, i))] * std::fmax(s, 0.0f);
        }
      }
      float out[kThreads][2];  // after the xor-1 and xor-2 shuffles, times the key's scale
      bool valid[kThreads][2];
      for (int t = 0; t < kThreads; ++t) {
        for (int r = 0; r < 2; ++r) {
          const float pair = sums[t][r] + sums[t ^ 1][r], other = sums[t ^ 2][r] + sums[t ^ 3][r];
          out[t][r] = (pair + other) * key_scale(stage.data(), dec::key_row(t, 0) + 8 * r);
          const int64_t slot = tile_first + dec::key_row(t, 0) + 8 * r;
          valid[t][r] = slot < slots && position_of(slot) < in.positions;
        }
      }
      for (int t = 0; t < kThreads; ++t) {
        for (int r = 0; r < 2; ++r) {
          const int64_t slot = tile_first + dec::key_row(t, 0) + 8 * r;
          if (slot < slots && dec::stores_logit(t, r)) {
            float& logit = logits[static_cast<std::size_t>(query * slots + slot)];
            EXPECT_TRUE(std::isnan(logit)) << "logit " << slot << " of query " << query << " written twice";
            logit = valid[t][r] ? out[t][r] : -INFINITY;
          }
          if (pool != nullptr) continue;
          float m = -INFINITY;
          for (int lane = 0; lane < 32; ++lane) {
            const int u = t - t % 32 + lane;
            if (lane % 4 == t % 4) m = std::fmax(m, valid[u][r] ? out[u][r] : -INFINITY);  // xor 4, 8 and 16
          }
          const int64_t block_first = tile_first + 16 * (t / 32) + 8 * r;
          if (block_first < in.positions && dec::stores_block_max(t, r)) {
            float& slot_max =
                block_max[static_cast<std::size_t>(query * blocks + block_first / kV41PoolBlockSize)];
            EXPECT_TRUE(std::isnan(slot_max))
                << "block " << block_first / kV41PoolBlockSize << " of query " << query << " written twice";
            slot_max = m;
          }
        }
      }
    }
  }
}

// Every logit of `got` where `want` has one, to FP32's reach, and -inf where
// `want` has -inf (a pool slot past the last position).
void expect_logits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  std::vector<float> got_finite, want_finite;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "slot " << i;
    } else {
      got_finite.push_back(got[i]);
      want_finite.push_back(want[i]);
    }
  }
  EXPECT_LT(relative_norm_error(got_finite, want_finite), 1e-5);
}

// A decode batch: 3 requests over their own 1,203 keys each (a CTA of 16
// tiles, then one of 3 whose last holds 51 keys; a last pool block of 3),
// first one query a request, then 6 (a token and 5 drafts) sharing each
// tile: the logits match the reference and the block maxima are the maxima
// of the logits written, every one written. Then a Reindex layer's logits in
// a pool of 21 blocks a query (two tiles and 5 blocks: a tile with blocks
// past the pool's end), the short last block among them: -inf for its slots
// past the last position.
TEST(IndexerWgmma, DecodeCtasReproduceTheReferenceAndTheBlockMaxima) {
  namespace dec = indexer_wgmma_decode;
  const int64_t requests = 3, positions = 1203;
  const std::vector<uint8_t> keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(requests * positions * kIndexDim), 36), requests * positions);
  const int64_t blocks = (positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
  for (const int request_queries : {1, 6}) {
    Inputs in{requests * request_queries, positions, {}, keys, {}};
    in.q = index_queries_e4m3(normal_values(static_cast<std::size_t>(in.queries * kHeads * kIndexDim), 34));
    in.w = normal_values(static_cast<std::size_t>(in.queries * kHeads), 35);
    std::vector<float> logits(static_cast<std::size_t>(in.queries * in.positions), NAN);
    std::vector<float> block_max(static_cast<std::size_t>(in.queries * blocks), NAN);
    for (int64_t request = 0; request < requests; ++request) {
      for (int64_t first = 0; first < in.positions; first += dec::kTilesPerCta * kKeys)
        run_decode_cta(in, nullptr, request, request_queries, first, logits, block_max);
    }
    EXPECT_TRUE(std::none_of(logits.begin(), logits.end(), [](float v) { return std::isnan(v); }));
    const std::vector<uint8_t> query_keys = key_set_a_query(keys, in.queries, request_queries, positions);
    expect_logits(logits,
                  indexer_logits_reference(in.q, in.w, query_keys, in.queries, kHeads, in.positions, true));
    EXPECT_EQ(block_max, block_max_reference(logits, in.queries, in.positions, kV41PoolBlockSize));
  }

  Inputs in{requests, positions, {}, keys, {}};
  in.q = index_queries_e4m3(normal_values(static_cast<std::size_t>(in.queries * kHeads * kIndexDim), 37));
  in.w = normal_values(static_cast<std::size_t>(in.queries * kHeads), 38);
  const int64_t pool_blocks = 21;
  std::vector<int32_t> pool;
  for (int64_t query = 0; query < in.queries; ++query) {
    for (int64_t b = 0; b < pool_blocks; ++b)
      pool.push_back(static_cast<int32_t>(b == 7 ? blocks - 1 : (b * 13 + query * 5) % (blocks - 1)));
  }
  std::vector<float> unused;
  std::vector<float> pooled(static_cast<std::size_t>(in.queries * pool_blocks * kV41PoolBlockSize), NAN);
  for (int64_t query = 0; query < in.queries; ++query) run_decode_cta(in, &pool, query, 1, 0, pooled, unused);
  EXPECT_TRUE(std::none_of(pooled.begin(), pooled.end(), [](float v) { return std::isnan(v); }));
  expect_logits(pooled, pool_logits_reference(in.q, in.w, in.keys, pool, in.queries, kHeads, in.positions,
                                              kV41PoolBlockSize, true));
}

// A tile's key copies cover its 4,352 bytes once, the last key's bytes where
// the positions end mid-chunk read up to the end and no further.
TEST(IndexerWgmma, KeyCopiesStopAtTheLastPosition) {
  std::vector<int> covered(kRawBytes, 0);
  int64_t read = 0;
  for (int c = 0; c < kRawChunks; ++c) {
    const PartialCopy copy = key_copy(c, 128, 128 + 45);  // 45 of 64 keys: 3,060 bytes, mid-chunk
    for (int b = 0; b < kChunk; ++b) ++covered[static_cast<std::size_t>(copy.smem - kRawOffset + b)];
    if (copy.bytes > 0) {
      EXPECT_EQ(copy.global, 128 * kIndexKeyBytes + c * kChunk);
      EXPECT_LE(copy.global + copy.bytes, (128 + 45) * kIndexKeyBytes);
    }
    read += copy.bytes;
  }
  EXPECT_EQ(read, 45 * kIndexKeyBytes);
  for (int n : covered) EXPECT_EQ(n, 1);
  EXPECT_EQ(kStagesOffset % wgmma::kAtomBytes, 0);
  EXPECT_EQ(kStageBytes % wgmma::kAtomBytes, 0);
}

// A Reindex tile's copies: block by block from the pool's ids, each chunk
// where key_copy puts it; a block straddling the last position read up to
// it and no further, blocks past the pool's end not read.
TEST(IndexerWgmma, PoolKeyCopiesReadThePoolsBlocksUpToTheLastPosition) {
  namespace dec = indexer_wgmma_decode;
  const int64_t positions = 8 * 10 + 3;             // block 10 holds 3 positions
  const std::vector<int32_t> pool{4, 10, 2, 7, 0};  // one tile: 5 of its 8 blocks
  int64_t read = 0;
  for (int c = 0; c < kRawChunks; ++c) {
    const PartialCopy copy = dec::pool_key_copy(c, 0, pool.data(), 5, positions);
    EXPECT_EQ(copy.smem, key_copy(c, 0, positions).smem);
    const int block = c / dec::kPoolBlockChunks;
    if (block >= 5) {
      EXPECT_EQ(copy.bytes, 0) << "chunk " << c;
      continue;
    }
    if (copy.bytes > 0) {
      EXPECT_EQ(copy.global, int64_t{pool[static_cast<std::size_t>(block)]} * dec::kPoolBlockBytes +
                                 (c % dec::kPoolBlockChunks) * kChunk);
      EXPECT_LE(copy.global + copy.bytes, positions * kIndexKeyBytes);
    }
    read += copy.bytes;
  }
  EXPECT_EQ(read, (4 * 8 + 3) * kIndexKeyBytes);
}

TEST(IndexerWgmmaCuda, MatchesTheReference) { expect_sm90a_device_checks({"indexer_wgmma"}); }

TEST(IndexerWgmmaDecodeCuda, MatchesTheReference) { expect_sm90a_device_checks({"indexer_wgmma_decode"}); }

}  // namespace
}  // namespace v41sim::kernels

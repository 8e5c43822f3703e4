// Lightning indexer: the CPU reference against its definition, and the CUDA
// kernels against the reference where a GPU exists.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include "kernels/common/mma_fragments.h"
#include "kernels/common/random_values.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/indexer/topk_tiles.h"
#include "sim/cost/cost_params.h"
#include "tests/kernels/device_check_support.h"
#include "tests/test_data.h"

namespace v41sim::kernels {
namespace {

TEST(IndexKey, EntrySizeMatchesTheModelFile) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  EXPECT_EQ(kIndexKeyBytes, v41.spec.cache(v41.spec.attention.indexer->key_cache).bytes);
  EXPECT_EQ(kIndexDim, v41.spec.attention.indexer->head_dim);
}

TEST(IndexKey, QuantizationErrorIsBounded) {
  const auto values = normal_values(kIndexDim * 64, 3);
  const auto keys = quantize_index_keys_reference(values, 64);
  for (int64_t j = 0; j < 64; ++j) {
    for (int g = 0; g < kIndexDim / kIndexScaleGroup; ++g) {
      float amax = 0;
      for (int i = 0; i < kIndexScaleGroup; ++i)
        amax = std::max(amax, std::fabs(values[j * kIndexDim + g * 32 + i]));
      for (int i = g * 32; i < g * 32 + 32; ++i) {
        // Power-of-two scale: the E2M1 grid spacing near the top is at most amax * 2/3 (step 2 of 6, scale <=
        // 2x).
        EXPECT_LE(std::fabs(values[j * kIndexDim + i] - index_key_value(keys.data() + j * kIndexKeyBytes, i)),
                  amax * (1.0f / 3.0f) + 1e-6f);
      }
    }
  }
}

// The tensor-core kernel's widening of index keys, two halves per key as its
// two threads per key do it: each value the per-value decode rounded to BF16
// (keys of spread magnitudes, so scales range widely); a missing key is zeros.
TEST(IndexKey, WidenedHalvesMatchTheValues) {
  auto values = normal_values(kIndexDim * 64, 9);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] *= std::ldexp(1.0f, static_cast<int>(i / 32 % 41) - 20);
  const auto keys = quantize_index_keys_reference(values, 64);
  uint32_t row[kIndexDim / 2];
  for (int64_t j = 0; j < 64; ++j) {
    const uint8_t* entry = keys.data() + j * kIndexKeyBytes;
    for (int half = 0; half < 2; ++half) widen_index_key_half(entry, half, row + half * kIndexDim / 4);
    for (int i = 0; i < kIndexDim; ++i) {
      const auto got = static_cast<uint16_t>(row[i / 2] >> (16 * (i % 2)));
      ASSERT_EQ(got, mma::to_bf16(index_key_value(entry, i))) << "key " << j << " dim " << i;
    }
  }
  widen_index_key_half(nullptr, 1, row);
  for (int w = 0; w < kIndexDim / 4; ++w) EXPECT_EQ(row[w], 0u);
  // Every scale code, the byte-permute path (2..252) and the float path (the rest) alike.
  uint8_t key[kIndexKeyBytes] = {};
  for (int i = 0; i < kIndexDim / 2; ++i) key[i] = static_cast<uint8_t>(17 * i + 3);
  for (int scale = 0; scale < 255; ++scale) {
    for (int g = 0; g < kIndexDim / kIndexScaleGroup; ++g)
      key[kIndexDim / 2 + g] = static_cast<uint8_t>(scale);
    for (int half = 0; half < 2; ++half) widen_index_key_half(key, half, row + half * kIndexDim / 4);
    for (int i = 0; i < kIndexDim; ++i) {
      ASSERT_EQ(static_cast<uint16_t>(row[i / 2] >> (16 * (i % 2))), mma::to_bf16(index_key_value(key, i)))
          << "scale " << scale << " dim " << i;
    }
  }
}

TEST(IndexerReference, LogitsFollowTheDefinition) {
  const int64_t queries = 3, heads = 4, positions = 50;
  const auto q = index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 5));
  auto w = normal_values(static_cast<std::size_t>(queries * heads), 6);
  const auto keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(positions * kIndexDim), 7), positions);
  const auto logits = indexer_logits_reference(q, w, keys, queries, heads, positions);
  // One entry by hand.
  const int64_t t = 2, j = 17;
  double expected = 0;
  for (int64_t h = 0; h < heads; ++h) {
    double dot = 0;
    for (int i = 0; i < kIndexDim; ++i)
      dot += decode_e4m3(q[(t * heads + h) * kIndexDim + i]) *
             index_key_value(keys.data() + j * kIndexKeyBytes, i);
    expected += w[t * heads + h] * std::max(dot, 0.0);
  }
  EXPECT_NEAR(logits[t * positions + j], expected, 1e-3 * std::max(1.0, std::fabs(expected)));
}

TEST(IndexerReference, TopkSelectsTheLargestAndBreaksTiesByPosition) {
  const std::vector<float> row{1.0f, 5.0f, 3.0f, 5.0f, 3.0f, 3.0f, -1.0f, 4.0f};
  const auto top = topk_reference(row, 1, 8, 4);
  EXPECT_EQ(top, (std::vector<int32_t>{1, 2, 3, 7}));  // 5, 5, 4, then the first 3
  const auto logits = normal_values(4 * 10000, 9);
  const auto selected = topk_reference(logits, 4, 10000, 512);
  for (int64_t t = 0; t < 4; ++t) {
    const std::set<int32_t> chosen(selected.begin() + t * 512, selected.begin() + (t + 1) * 512);
    ASSERT_EQ(chosen.size(), 512u);
    float min_chosen = INFINITY, max_other = -INFINITY;
    for (int32_t j = 0; j < 10000; ++j) {
      const float x = logits[t * 10000 + j];
      if (chosen.count(j)) {
        min_chosen = std::min(min_chosen, x);
      } else {
        max_other = std::max(max_other, x);
      }
    }
    EXPECT_GE(min_chosen, max_other);
    EXPECT_TRUE(std::is_sorted(selected.begin() + t * 512, selected.begin() + (t + 1) * 512));
  }
}

// The tiled top-k's design on the CPU: each tile's own top-k (the reference
// on the tile), the candidates laid out as topk_tiles.h says, then the top-k
// of the candidates mapped back to positions, equals the top-k of the row,
// ties across tiles included; and the sizes the kernels allocate.
TEST(TopkTiles, TheCandidatesHoldTheRowsTopK) {
  for (const int64_t positions : {8193, 16484, 40000}) {
    for (const int64_t topk : {512, 2048}) {
      ASSERT_TRUE(topk_in_tiles(positions, topk));
      std::vector<float> row = normal_values(static_cast<std::size_t>(positions), 61);
      for (float& v : row) v = std::round(v * 8.0f) / 8.0f;  // ties across tiles
      const int64_t tiles = topk_tiles(positions);
      std::vector<float> values;
      std::vector<int32_t> slots;
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t first = t * kTopkTilePositions;
        const int64_t count = std::min(kTopkTilePositions, positions - first);
        const std::vector<float> tile(row.begin() + first, row.begin() + first + count);
        const std::vector<int32_t> chosen =
            count <= topk ? [&] { std::vector<int32_t> all(static_cast<std::size_t>(count)); std::iota(all.begin(), all.end(), 0); return all; }()
                          : topk_reference(tile, 1, count, topk);
        for (const int32_t i : chosen) {
          values.push_back(tile[static_cast<std::size_t>(i)]);
          slots.push_back(static_cast<int32_t>(first + i));
        }
      }
      ASSERT_EQ(static_cast<int64_t>(values.size()), topk_candidates(positions, topk));
      std::vector<int32_t> got;
      for (const int32_t c : topk_reference(values, 1, static_cast<int64_t>(values.size()), topk))
        got.push_back(slots[static_cast<std::size_t>(c)]);
      EXPECT_EQ(got, topk_reference(row, 1, positions, topk)) << positions << " positions, k " << topk;
    }
  }
  // The kernel's tile is the kernel model's top-k tile.
  const CostParams priors =
      load_cost_params_file(std::string(V41SIM_SOURCE_DIR) + "/validation/calibration/defaults.yaml");
  EXPECT_EQ(kTopkTilePositions, priors.of(KernelClass::kTopK).tile_n);
  EXPECT_FALSE(topk_in_tiles(8192, 512));    // one tile: one pass
  EXPECT_FALSE(topk_in_tiles(40000, 5000));  // k too near the tile to shrink it
  EXPECT_EQ(topk_tiles(262144), 32);
  EXPECT_EQ(topk_candidates(16484, 512), 2 * 512 + 100);
  EXPECT_EQ(topk_workspace_entries(4, 262144, 512), 4 * 32 * 512);
  EXPECT_EQ(topk_workspace_entries(4, 8192, 512), 0);
  EXPECT_EQ(topk_row_pass_values(262144, 512), 32 * 512);
  EXPECT_EQ(topk_row_pass_values(40000, 4500), 40000);
  // Candidates past the row pass's shared memory cut into tiles again.
  EXPECT_EQ(topk_tile_levels(262144, 512), (std::vector<int64_t>{262144}));
  EXPECT_EQ(topk_tile_levels(int64_t{1} << 20, 512), (std::vector<int64_t>{int64_t{1} << 20, 65536}));
  EXPECT_EQ(topk_row_pass_values(int64_t{1} << 20, 512), 4096);
  EXPECT_EQ(topk_tile_levels(140000, 2048), (std::vector<int64_t>{140000, 35552}));
  EXPECT_EQ(topk_row_pass_values(140000, 2048), 10240);
  EXPECT_EQ(topk_workspace_entries(3, 140000, 2048), 3 * (18 + 5) * 2048);
  EXPECT_TRUE(topk_tile_levels(40000, 4500).empty());
}

// The row pass holds its row in shared memory for every top-k V4.1 makes in
// a context of up to 1M tokens: each layer that selects its own, over its
// compressed positions or the Reindex pool, and the pool's top blocks where
// a layer builds it.
TEST(TopkTiles, V41sRowPassesUpTo1MTokensAreHeldInSharedMemory) {
  const ModelAnalysis v41 = testing::analyze("deepseek_v4_1_flash");
  const int64_t tokens = int64_t{1} << 20;
  int rows = 0;
  for (const LayerPlanEntry& layer : v41.plan) {
    if (!layer.selects_topk()) continue;
    const int64_t positions =
        layer.scores_in_candidate_pool ? kV41PoolTopBlocks * kV41PoolBlockSize : tokens / layer.ratio;
    EXPECT_LE(topk_row_pass_values(positions, kV41TopK), kTopkStagedValues) << "layer " << layer.layer;
    if (layer.builds_candidate_pool) {
      EXPECT_LE(topk_row_pass_values(positions / kV41PoolBlockSize, kV41PoolTopBlocks), kTopkStagedValues)
          << "layer " << layer.layer;
    }
    ++rows;
  }
  EXPECT_GT(rows, 0);
}

TEST(CandidatePoolReference, BlockMaximaAndTopBlocks) {
  // 20 positions in blocks of 8: the last block is short (4 positions).
  std::vector<float> row(20);
  for (int j = 0; j < 20; ++j) row[j] = static_cast<float>(j % 7) - (j == 9 ? 10.0f : 0.0f);
  row[18] = 9.0f;
  const auto maxima = block_max_reference(row, 1, 20, 8);
  EXPECT_EQ(maxima, (std::vector<float>{6.0f, 6.0f, 9.0f}));
  EXPECT_EQ(candidate_pool_reference(maxima, 1, 3, 2),
            (std::vector<int32_t>{0, 2}));  // ties to the lower block
  EXPECT_EQ(candidate_pool_reference(maxima, 1, 3, 2048), (std::vector<int32_t>{0, 1, 2}));
}

TEST(CandidatePoolReference, ReindexScoresOnlyThePoolAndSelectsInsideIt) {
  const int64_t queries = 2, heads = 4, positions = 205, block = 8, top_blocks = 6, topk = 12;
  const auto keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(positions * kIndexDim), 41), positions);
  const auto q = index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 42));
  const auto w = normal_values(static_cast<std::size_t>(queries * heads), 43);
  const auto layer20 = indexer_logits_reference(q, w, keys, queries, heads, positions);
  const int64_t blocks = (positions + block - 1) / block;
  const auto pool = candidate_pool_reference(block_max_reference(layer20, queries, positions, block), queries,
                                             blocks, top_blocks);
  ASSERT_EQ(pool.size(), static_cast<std::size_t>(queries * top_blocks));
  // A Reindex query: its full logits, masked to the pool, are what the pool path must reproduce.
  const auto q2 =
      index_queries_e4m3(normal_values(static_cast<std::size_t>(queries * heads * kIndexDim), 44));
  const auto w2 = normal_values(static_cast<std::size_t>(queries * heads), 45);
  const auto full = indexer_logits_reference(q2, w2, keys, queries, heads, positions);
  const auto pooled = pool_logits_reference(q2, w2, keys, pool, queries, heads, positions, block);
  std::vector<float> masked(full.size(), -INFINITY);
  for (int64_t t = 0; t < queries; ++t) {
    for (int64_t s = 0; s < top_blocks * block; ++s) {
      const int64_t position = pool[t * top_blocks + s / block] * block + s % block;
      const float got = pooled[t * top_blocks * block + s];
      if (position >= positions) {
        EXPECT_EQ(got, -INFINITY) << "slot past the last position";
        continue;
      }
      EXPECT_EQ(got, full[t * positions + position]);
      masked[t * positions + position] = full[t * positions + position];
    }
  }
  EXPECT_EQ(pool_topk_reference(pooled, pool, queries, block, topk),
            topk_reference(masked, queries, positions, topk));
  // When every block fits in the pool, pooled selection is plain selection.
  const auto whole = candidate_pool_reference(block_max_reference(layer20, queries, positions, block),
                                              queries, blocks, 2048);
  EXPECT_EQ(pool_topk_reference(pool_logits_reference(q2, w2, keys, whole, queries, heads, positions, block),
                                whole, queries, block, topk),
            topk_reference(full, queries, positions, topk));
}

TEST(CandidatePoolCuda, MatchesTheReference) {
  expect_device_checks({"candidate_pool_fp32", "candidate_pool_tensor_cores"});
}

TEST(IndexerCuda, MatchesTheReference) { expect_device_checks({"indexer_fp32", "indexer_tensor_cores"}); }

TEST(TopkCuda, MatchesTheReferenceOnTiesAcrossTiles) { expect_device_checks({"topk"}); }

}  // namespace
}  // namespace v41sim::kernels

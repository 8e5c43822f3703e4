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
#include "kernels/common/wgmma_layout.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/indexer/indexer_wgmma_tiles.h"
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

// One CTA: queries first_query.., positions first_key.. (up to kTilesPerCta tiles).
void run_cta(const Inputs& in, int64_t first_query, int64_t first_key, std::vector<float>& logits) {
  E2m1ToE4m3Table tables[kFoldingTables];
  for (int s = 0; s < kFoldingTables; ++s) tables[s] = e2m1_to_e4m3_table(s);
  std::vector<uint8_t> query_tile(kQueryTileBytes, 0xEE);
  for (int c = 0; c < kQueryChunks; ++c) place(query_tile, query_copy(c, first_query, in.queries), in.q);
  const int64_t tiles = std::min<int64_t>(kTilesPerCta, (in.positions - first_key + kKeys - 1) / kKeys);
  for (int64_t kb = 0; kb < tiles; ++kb) {
    std::vector<uint8_t> stage(kStageBytes, 0xEE);
    for (int c = 0; c < kRawChunks; ++c)
      place(stage, key_copy(c, first_key + kb * kKeys, in.positions), in.keys);
    for (int q = 0; q < kWidenedChunks; ++q) {
      const WidenedChunk chunk = widen_key_chunk(stage.data(), q, tables);
      std::memcpy(&stage[static_cast<std::size_t>(chunk.tile_offset)], chunk.words, sizeof chunk.words);
    }
    for (int warpgroup = 0; warpgroup < 2; ++warpgroup) {
      static float d[wgmma::kM][kColumns];  // keys x (query, head)
      std::memset(d, 0, sizeof d);
      for (int step = 0; step < wgmma::kRowBytes / wgmma::kK; ++step) {
        const uint64_t a = wgmma::descriptor(static_cast<uint32_t>(step * wgmma::kK)),
                       b = wgmma::descriptor(
                           static_cast<uint32_t>(warpgroup * kGroupTileBytes + step * wgmma::kK));
        for (int row = 0; row < wgmma::kM; ++row) {
          for (int col = 0; col < kColumns; ++col) {
            for (int byte = 0; byte < wgmma::kK; ++byte)
              d[row][col] += decode_e4m3(stage[wgmma::read_address(a, row, byte)]) *
                             decode_e4m3(query_tile[wgmma::read_address(b, col, byte)]);
          }
        }
      }
      // Each thread's sums per (its two key rows, query), then its quad's.
      static float sums[wgmma::kThreads][2][kGroupQueries];
      std::memset(sums, 0, sizeof sums);
      for (int t = 0; t < wgmma::kThreads; ++t) {
        for (int i = 0; i < 64; ++i) {
          const int64_t query = first_query + warpgroup * kGroupQueries + query_of(t, i);
          const float weight =
              query < in.queries ? in.w[static_cast<std::size_t>(query * kHeads + head_of(t, i))] : 0.0f;
          sums[t][(i % 4) / 2][i / 16] +=
              weight * std::fmax(d[wgmma::accumulator_row(t, i)][wgmma::accumulator_col(t, i)], 0.0f);
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

TEST(IndexerWgmmaCuda, MatchesTheReference) { expect_sm90a_device_checks({"indexer_wgmma"}); }

}  // namespace
}  // namespace v41sim::kernels

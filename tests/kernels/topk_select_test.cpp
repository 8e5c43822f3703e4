// The top-k kernels' selection on the CPU, CTA by CTA: the radix select's
// four histogram passes and digit choices, each warp's span counted and
// compacted 32 keys a step with the ballots' bit masks, by the kernels' own
// functions (topk_select.h); a long row in two passes, tiles' candidates
// then the row's, as launch_topk runs them. It must reproduce the reference
// exactly (ties to the lower position) on rows full of ties, one tile and
// many, short rows where most warps hold nothing, k equal to the row, and a
// Reindex pool's slots mapped to positions. What this cannot show: the
// shared-memory atomics and barriers (the device check does).
#include "kernels/indexer/topk_select.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/random_values.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/indexer/pool_slots.h"
#include "kernels/indexer/topk_tiles.h"

namespace v41sim::kernels {
namespace {

using namespace topk_select;

Threshold radix_select(const float* row, int64_t length, int64_t topk) {
  Threshold t{0, static_cast<int>(topk)};
  uint32_t mask = 0;
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    int histogram[kDigits] = {};
    for (int64_t i = 0; i < length; ++i) {
      const int bin = digit_bin(ordered_bits(row[i]), t.key, mask, shift);
      if (bin >= 0) ++histogram[bin];
    }
    t = choose_digit(histogram, t.key, t.ties_needed, shift);
    mask |= static_cast<uint32_t>(kDigits - 1) << shift;
  }
  return t;
}

// One CTA: the indices of the row's top-k, output n at [n]; each output
// written once.
std::vector<int64_t> select_cta(const float* row, int64_t length, int64_t topk) {
  const Threshold t = radix_select(row, length, topk);
  int above_before[kWarps], ties_before[kWarps];
  int above = 0, ties = 0;
  for (int warp = 0; warp < kWarps; ++warp) {  // the counts' exclusive scans
    above_before[warp] = above;
    ties_before[warp] = ties;
    const Span span = warp_span(warp, length);
    for (int64_t i = span.begin; i < span.end; ++i) {
      above += ordered_bits(row[i]) > t.key;
      ties += ordered_bits(row[i]) == t.key;
    }
  }
  std::vector<int64_t> out(static_cast<std::size_t>(topk), -1);
  for (int warp = 0; warp < kWarps; ++warp) {
    const Span span = warp_span(warp, length);
    int ties_seen = ties_before[warp];
    int written = first_output(above_before[warp], ties_seen, t);
    for (int64_t base = span.begin; base < span.end; base += 32) {
      uint32_t keys[32];
      unsigned tie_lanes = 0, take_lanes = 0;
      for (int lane = 0; lane < 32; ++lane) {
        keys[lane] = base + lane < span.end ? ordered_bits(row[base + lane]) : 0u;
        if (base + lane < span.end && keys[lane] == t.key) tie_lanes |= 1u << lane;
      }
      for (int lane = 0; lane < 32; ++lane) {
        if (lane_takes(base + lane < span.end, keys[lane], t,
                       ties_seen + std::popcount(tie_lanes & lanes_below(lane))))
          take_lanes |= 1u << lane;
      }
      for (int lane = 0; lane < 32; ++lane) {
        if (!(take_lanes & (1u << lane))) continue;
        const int n = written + std::popcount(take_lanes & lanes_below(lane));
        EXPECT_TRUE(n < topk && out[static_cast<std::size_t>(n)] == -1) << "output " << n;
        if (n < topk) out[static_cast<std::size_t>(n)] = base + lane;
      }
      written += std::popcount(take_lanes);
      ties_seen += std::popcount(tie_lanes);
    }
  }
  for (std::size_t n = 0; n < out.size(); ++n) EXPECT_GE(out[n], 0) << "output " << n << " not written";
  return out;
}

// launch_topk's CTAs for every row: one pass, or tiles' candidates then the
// row's; positions, or (a pool) the positions the slots stand for.
std::vector<int32_t> replay_topk(const std::vector<float>& logits, int64_t queries, int64_t length,
                                 int64_t topk, const std::vector<int32_t>* pool = nullptr) {
  std::vector<int32_t> selected;
  for (int64_t query = 0; query < queries; ++query) {
    const float* row = logits.data() + query * length;
    std::vector<float> values;
    std::vector<int64_t> slots;
    if (!topk_in_tiles(length, topk)) {
      values.assign(row, row + length);
      for (int64_t i = 0; i < length; ++i) slots.push_back(i);
    } else {
      for (int64_t tile = 0; tile < topk_tiles(length); ++tile) {
        const int64_t first = tile * kTopkTilePositions;
        const int64_t count = std::min(kTopkTilePositions, length - first);
        std::vector<int64_t> chosen;
        if (count <= topk) {
          for (int64_t i = 0; i < count; ++i) chosen.push_back(i);
        } else {
          chosen = select_cta(row + first, count, topk);
        }
        for (const int64_t i : chosen) {
          values.push_back(row[first + i]);
          slots.push_back(first + i);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(values.size()), topk_candidates(length, topk));
    }
    for (const int64_t i : select_cta(values.data(), static_cast<int64_t>(values.size()), topk)) {
      const int64_t slot = slots[static_cast<std::size_t>(i)];
      selected.push_back(static_cast<int32_t>(
          pool == nullptr
              ? slot
              : pool_position(pool->data(), query, length / static_cast<int64_t>(kV41PoolBlockSize), slot)));
    }
  }
  return selected;
}

// Rows on a coarse grid, so the k-th largest is shared by many positions
// (across tiles too): one pass (8,192), a last tile of one position, a last
// tile shorter than k, 32 tiles (a 1M-token context), a pool-sized k; a
// short row whose last warps hold nothing; k the whole row.
TEST(TopkSelect, CtasReproduceTheReferenceOnTies) {
  struct Case {
    int64_t positions, topk;
  };
  for (const Case& c : {Case{8192, 512}, Case{8193, 512}, Case{16484, 512}, Case{262144, 512},
                        Case{40000, 2048}, Case{600, 512}, Case{700, 700}}) {
    const int64_t queries = 2;
    std::vector<float> logits = normal_values(static_cast<std::size_t>(queries * c.positions), 51);
    for (float& v : logits) v = std::round(v * 8.0f) / 8.0f;
    EXPECT_EQ(replay_topk(logits, queries, c.positions, c.topk),
              topk_reference(logits, queries, c.positions, c.topk))
        << c.positions << " positions, k " << c.topk;
  }
}

// Distinct values (no ties at the threshold), and -inf where a pool slot
// stands past the last position: a Reindex layer's top-512 of its pool,
// returned as positions.
TEST(TopkSelect, PoolSlotsMapToPositions) {
  const int64_t queries = 2, pool_blocks = 2048,
                slots = pool_blocks * static_cast<int64_t>(kV41PoolBlockSize);
  std::vector<int32_t> pool;
  for (int64_t q = 0; q < queries; ++q) {
    for (int64_t b = 0; b < pool_blocks; ++b) pool.push_back(static_cast<int32_t>(3 * b + q));
  }
  std::vector<float> logits = normal_values(static_cast<std::size_t>(queries * slots), 52);
  for (int64_t q = 0; q < queries; ++q) logits[static_cast<std::size_t>((q + 1) * slots - 1)] = -INFINITY;
  EXPECT_EQ(replay_topk(logits, queries, slots, 512, &pool),
            pool_topk_reference(logits, pool, queries, kV41PoolBlockSize, 512));
}

// The warps' spans cover a row once, in order, each a multiple of 32 but the last.
TEST(TopkSelect, WarpSpansCoverTheRowInOrder) {
  for (const int64_t length : {1, 31, 600, 1024, 8192, 8193, 40000}) {
    int64_t next = 0;
    for (int warp = 0; warp < kWarps; ++warp) {
      const Span span = warp_span(warp, length);
      if (span.begin >= length) continue;
      EXPECT_EQ(span.begin, next) << length;
      EXPECT_TRUE(span.end == length || (span.end - span.begin) % 32 == 0) << length;
      next = span.end;
    }
    EXPECT_EQ(next, length);
  }
}

}  // namespace
}  // namespace v41sim::kernels

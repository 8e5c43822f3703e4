// The top-k kernels' selection on the CPU, CTA by CTA: the radix select's
// four histogram passes and digit choices, each warp's span counted and
// compacted 32 keys a step with the ballots' bit masks, by the kernels' own
// functions (topk_select.h); a long row in two passes, tiles' candidates
// then the row's, as launch_topk runs them. It must reproduce the reference
// exactly (ties to the lower position) on rows full of ties, one tile and
// many, short rows where most warps hold nothing, k equal to the row, and a
// Reindex pool's slots mapped to positions. The histograms are counted here
// key by key: the warps' counting (count_bin_by_warp) adds the same integers,
// shown step by step below. What this cannot show: the shared-memory atomics
// and barriers (the device check does).
#include "kernels/indexer/topk_select.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <vector>

#include "kernels/common/random_values.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_reference.h"
#include "kernels/indexer/pool_slots.h"
#include "kernels/indexer/topk_tiles.h"
#include "tests/kernels/lockstep_lanes.h"

namespace v41sim::kernels {
namespace {

using namespace topk_select;

// The first warp's choice of a pass's digit, its 32 lanes meeting at every
// shuffle; exactly one lane chooses.
Threshold choose_by_warp(const int* histogram, uint32_t prefix, int remaining, int shift) {
  testing::LockstepLanes<int> lanes(kLanes);
  std::atomic<int> choosers{0};
  Threshold chosen{};
  lanes.run([&](int lane) {
    Threshold mine{};
    if (choose_digit_by_lane(
            histogram, prefix, remaining, shift, lane,
            [&](int value, int delta) { return lanes.exchange_up(lane, value, delta); }, mine)) {
      ++choosers;
      chosen = mine;
    }
  });
  EXPECT_EQ(choosers.load(), 1);
  return chosen;
}

// The counts' exclusive scan over the warps, a lane a warp.
std::vector<int> counts_before_warps(const std::vector<int>& counts) {
  std::vector<int> before(counts.size());
  testing::LockstepLanes<int> lanes(kWarps);
  lanes.run([&](int warp) {
    before[static_cast<std::size_t>(warp)] =
        count_before_warp(counts[static_cast<std::size_t>(warp)], warp,
                          [&](int value, int delta) { return lanes.exchange_up(warp, value, delta); });
  });
  return before;
}

Threshold radix_select(const float* row, int64_t length, int64_t topk) {
  Threshold t{0, static_cast<int>(topk)};
  uint32_t mask = 0;
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    int histogram[kDigits] = {};
    for (int64_t i = 0; i < length; ++i) {
      const int bin = digit_bin(ordered_bits(row[i]), t.key, mask, shift);
      if (bin >= 0) ++histogram[bin];
    }
    t = choose_by_warp(histogram, t.key, t.ties_needed, shift);
    mask |= static_cast<uint32_t>(kDigits - 1) << shift;
  }
  return t;
}

// One CTA: the indices of the row's top-k, output n at [n]; each output
// written once.
std::vector<int64_t> select_cta(const float* row, int64_t length, int64_t topk) {
  const Threshold t = radix_select(row, length, topk);
  std::vector<int> above(kWarps, 0), ties(kWarps, 0);
  for (int warp = 0; warp < kWarps; ++warp) {
    const Span span = warp_span(warp, length);
    for (int64_t i = span.begin; i < span.end; ++i) {
      above[static_cast<std::size_t>(warp)] += ordered_bits(row[i]) > t.key;
      ties[static_cast<std::size_t>(warp)] += ordered_bits(row[i]) == t.key;
    }
  }
  const std::vector<int> above_before = counts_before_warps(above), ties_before = counts_before_warps(ties);
  std::vector<int64_t> out(static_cast<std::size_t>(topk), -1);
  for (int warp = 0; warp < kWarps; ++warp) {
    const Span span = warp_span(warp, length);
    int ties_seen = ties_before[static_cast<std::size_t>(warp)];
    int written = first_output(above_before[static_cast<std::size_t>(warp)], ties_seen, t);
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

// launch_topk's CTAs for every row: the tile passes level by level, each
// over the candidates the one before left, then the row pass; positions, or
// (a pool) the positions the slots stand for.
std::vector<int32_t> replay_topk(const std::vector<float>& logits, int64_t queries, int64_t length,
                                 int64_t topk, const std::vector<int32_t>* pool = nullptr) {
  std::vector<int32_t> selected;
  for (int64_t query = 0; query < queries; ++query) {
    const float* row = logits.data() + query * length;
    std::vector<float> values(row, row + length);
    std::vector<int64_t> slots(static_cast<std::size_t>(length));
    std::iota(slots.begin(), slots.end(), 0);
    for (const int64_t level : topk_tile_levels(length, topk)) {
      EXPECT_EQ(static_cast<int64_t>(values.size()), level);
      std::vector<float> kept;
      std::vector<int64_t> kept_slots;
      for (int64_t tile = 0; tile < topk_tiles(level); ++tile) {
        const int64_t first = tile * kTopkTilePositions;
        const int64_t count = std::min(kTopkTilePositions, level - first);
        std::vector<int64_t> chosen;
        if (count <= topk) {
          for (int64_t i = 0; i < count; ++i) chosen.push_back(i);
        } else {
          chosen = select_cta(values.data() + first, count, topk);
        }
        for (const int64_t i : chosen) {
          kept.push_back(values[static_cast<std::size_t>(first + i)]);
          kept_slots.push_back(slots[static_cast<std::size_t>(first + i)]);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(kept.size()), topk_candidates(level, topk));
      values.swap(kept);
      slots.swap(kept_slots);
    }
    EXPECT_EQ(static_cast<int64_t>(values.size()), topk_row_pass_values(length, topk));
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
// tile shorter than k, 32 tiles (a 512K-token context at ratio 2), a
// pool-sized k, candidates too many for the row pass cut into tiles again
// (140,000 positions, k 2,048: 35,552 candidates, then 10,240); a short row
// whose last warps hold nothing; k the whole row.
TEST(TopkSelect, CtasReproduceTheReferenceOnTies) {
  struct Case {
    int64_t positions, topk;
  };
  for (const Case& c : {Case{8192, 512}, Case{8193, 512}, Case{16484, 512}, Case{262144, 512},
                        Case{40000, 2048}, Case{140000, 2048}, Case{600, 512}, Case{700, 700}}) {
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

// The rule a pass's digit follows, one bin at a time from the top: the
// digit where the count reaches `remaining`, digit 0 where none does.
Threshold one_thread_digit(const int* histogram, uint32_t prefix, int remaining, int shift) {
  int above = 0;
  int digit = kDigits - 1;
  for (; digit > 0 && above + histogram[digit] < remaining; --digit) above += histogram[digit];
  return {prefix | (static_cast<uint32_t>(digit) << shift), remaining - above};
}

// The warp's choice is the one-bin-at-a-time rule's, wherever the crossing
// falls: inside a lane's 8 bins, on either side of a lane's edge, in bin
// 255 or bin 0, past every bin (digit 0), on random histograms.
TEST(TopkSelect, AWarpChoosesTheDigitTheRuleGives) {
  std::vector<std::vector<int>> histograms;
  std::vector<int> h(kDigits, 0);
  for (const int bin : {255, 248, 247, 200, 8, 7, 0}) {
    std::fill(h.begin(), h.end(), 0);
    h[static_cast<std::size_t>(bin)] = 5;
    h[0] += 1;
    histograms.push_back(h);
  }
  const auto random = normal_values(8 * kDigits, 53);
  for (int r = 0; r < 8; ++r) {
    for (int d = 0; d < kDigits; ++d)
      h[static_cast<std::size_t>(d)] =
          static_cast<int>(std::fabs(random[static_cast<std::size_t>(r * kDigits + d)]) * (r % 2 ? 40 : 2));
    histograms.push_back(h);
  }
  for (const std::vector<int>& histogram : histograms) {
    const int total = std::accumulate(histogram.begin(), histogram.end(), 0);
    for (const int remaining : {1, 2, 5, 6, total / 3 + 1, total / 2, total - 1, total, total + 3}) {
      if (remaining < 1) continue;
      const Threshold want = one_thread_digit(histogram.data(), 0x5A000000u, remaining, 16);
      const Threshold got = choose_by_warp(histogram.data(), 0x5A000000u, remaining, 16);
      EXPECT_EQ(got.key, want.key) << "remaining " << remaining << " of " << total;
      EXPECT_EQ(got.ties_needed, want.ties_needed) << "remaining " << remaining << " of " << total;
    }
  }
}

TEST(TopkSelect, AWarpScansTheWarpsCountsInOrder) {
  std::vector<int> counts(kWarps);
  for (int w = 0; w < kWarps; ++w) counts[static_cast<std::size_t>(w)] = (w * 37) % 11;
  const std::vector<int> before = counts_before_warps(counts);
  int sum = 0;
  for (int w = 0; w < kWarps; ++w) {
    EXPECT_EQ(before[static_cast<std::size_t>(w)], sum) << "warp " << w;
    sum += counts[static_cast<std::size_t>(w)];
  }
}

// Warp steps of a pass's histogram as count_bin_by_warp makes them, the 32
// lanes meeting at every match (step after step, as a warp walks its row):
// the counts it adds to each bin, and how many adds (shared-memory atomics on
// the device) it makes.
struct WarpCount {
  std::map<int, int> bins;
  int adds = 0;
};
WarpCount count_by_warp(const std::vector<int>& bins) {
  testing::LockstepLanes<int> lanes(kLanes);
  std::mutex added;
  WarpCount count;
  lanes.run([&](int lane) {
    for (std::size_t base = 0; base < bins.size(); base += kLanes) {
      count_bin_by_warp(
          bins[base + static_cast<std::size_t>(lane)], lane,
          [&](int value) { return lanes.match_any(lane, value); },
          [&](int bin, int n) {
            const std::lock_guard<std::mutex> hold(added);
            count.bins[bin] += n;
            ++count.adds;
          });
    }
  });
  return count;
}

// What an atomic a lane would count; and the adds one a bin a step makes.
WarpCount lane_counts(const std::vector<int>& bins) {
  WarpCount count;
  for (std::size_t base = 0; base < bins.size(); base += kLanes) {
    std::set<int> step;
    for (std::size_t l = base; l < base + kLanes; ++l) {
      if (bins[l] < 0) continue;
      ++count.bins[bins[l]];
      step.insert(bins[l]);
    }
    count.adds += static_cast<int>(step.size());
  }
  return count;
}

// Each lane's key counted once in its bin, lanes without a bin (-1) never,
// one add a bin a step: all in one bin, none, every lane its own, lane 0
// without a bin and the rest in two interleaved bins and four of their own.
TEST(TopkSelect, AWarpCountsEachBinOnceAStep) {
  std::vector<int> bins(kLanes, 7);
  bins.insert(bins.end(), kLanes, -1);
  for (int l = 0; l < kLanes; ++l) bins.push_back(255 - l);
  for (int l = 0; l < kLanes; ++l)
    bins.push_back(l == 0 ? -1 : l >= 26 && l < 30 ? 100 + l : l % 3 == 2 ? 9 : 3);
  const WarpCount got = count_by_warp(bins), want = lane_counts(bins);
  EXPECT_EQ(got.bins, want.bins);
  EXPECT_EQ(got.adds, 1 + 0 + kLanes + 6);
  EXPECT_EQ(got.adds, want.adds);
}

// The first pass over rows of indexer logits (random queries and keys; head
// weights of one sign and of both): the counts are the lanes', an add a bin
// a step; the crowding it spares (the most lanes a step would send to one
// word) is printed.
TEST(TopkSelect, AnIndexerRowsFirstPassIsCountedAnAddABin) {
  const int64_t heads = kV41IndexHeads, positions = 4096;
  const auto q = index_queries_e4m3(normal_values(static_cast<std::size_t>(heads * kIndexDim), 61));
  const auto keys = quantize_index_keys_reference(
      normal_values(static_cast<std::size_t>(positions * kIndexDim), 62), positions);
  std::vector<float> weights = normal_values(static_cast<std::size_t>(heads), 63);
  for (const bool one_sign : {false, true}) {
    if (one_sign) {
      for (float& w : weights) w = std::fabs(w);
    }
    const auto logits = indexer_logits_reference(q, weights, keys, 1, heads, positions);
    std::vector<int> bins;
    for (const float v : logits) bins.push_back(digit_bin(ordered_bits(v), 0, 0, 32 - kDigitBits));
    const WarpCount got = count_by_warp(bins), want = lane_counts(bins);
    EXPECT_EQ(got.bins, want.bins);
    EXPECT_EQ(got.adds, want.adds);
    double crowd = 0;
    for (std::size_t base = 0; base < bins.size(); base += kLanes) {
      std::map<int, int> step;
      for (std::size_t l = base; l < base + kLanes; ++l) ++step[bins[l]];
      int most = 0;
      for (const auto& [bin, lanes] : step) most = std::max(most, lanes);
      crowd += most;
    }
    std::printf(
        "head weights of %s: %zu first-pass bins; %.1f adds a warp step, where the lanes' atomics "
        "would send up to %.1f to one word\n",
        one_sign ? "one sign" : "both signs", want.bins.size(),
        static_cast<double>(got.adds) / (positions / kLanes), crowd / (positions / kLanes));
  }
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

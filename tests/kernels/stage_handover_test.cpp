// The warp-specialized kernels' handover of shared-memory stages
// (kernels/common/stage_handover.h), run on the CPU as a model of its
// mbarriers, for each kernel's ring depth and load-ahead.
#include "kernels/common/stage_handover.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/gemm/expert_gemm_w4a8_wgmma_tiling.h"
#include "kernels/indexer/indexer_wgmma_decode_tiles.h"
#include "kernels/indexer/indexer_wgmma_tiles.h"

namespace v41sim::kernels {
namespace {

// A warp-specialized handover as a model of its mbarriers (a phase
// completes when all its arrivals came; a wait by parity passes while the
// barrier's current phase has the other parity, as try_wait.parity does),
// run under many random interleavings of the producer and the kConsumers
// computing warpgroups (two in the expert GEMM and the prefill indexer, one
// in the decode indexer): none deadlocks, a waiter is never two phases behind (where
// parity could no longer tell them apart), the computing warpgroups read
// each block's stage after it was widened and before it is loaded again.
template <class Handover, int kLoadAhead, int kConsumers = 2>
void expect_handover_keeps_each_block_until_released() {
  constexpr int kStages = Handover::stages;
  struct Barrier {
    int needed, arrived = 0, completed = 0;
    void arrive() {
      if (++arrived == needed) {
        arrived = 0;
        ++completed;
      }
    }
    // Passes once the phase of `parity` completed; `phase` is the one the
    // waiter means, which parity alone must not confuse with a later one.
    bool passes(uint32_t parity, int64_t phase) const {
      const bool open = static_cast<uint32_t>(completed & 1) != parity;
      EXPECT_FALSE(open && completed != phase + 1) << "waiter for phase " << phase << " at " << completed;
      return open;
    }
  };
  for (const int64_t blocks : {1, 2, 3, 4, 5, 9, 14}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      std::mt19937 rng(seed);
      std::vector<Barrier> full(kStages, Barrier{1}), empty(kStages, Barrier{kConsumers});
      std::vector<int64_t> loaded(kStages, -1), widened(kStages, -1);
      int64_t produced = 0;                          // the producer's next j
      std::vector<int64_t> computed(kConsumers, 0);  // each computing warpgroup's next block
      const auto producer_step = [&]() {
        const int64_t j = produced;
        if (j < blocks) {
          const int s = Handover::stage_of(j);
          if (Handover::load_waits_for_release(j) &&
              !empty[s].passes(Handover::release_parity(j), j / kStages - 1))
            return false;
          EXPECT_GE(*std::min_element(computed.begin(), computed.end()), j - kStages + 1)
              << "block " << j << " loaded early";
          loaded[s] = j;
        }
        const int64_t kb = j - kLoadAhead;
        if (kb >= 0) {
          EXPECT_EQ(loaded[Handover::stage_of(kb)], kb)
              << "block " << kb << " overwritten before it was widened";
          widened[Handover::stage_of(kb)] = kb;
          full[Handover::stage_of(kb)].arrive();
        }
        ++produced;
        return true;
      };
      const auto compute_step = [&](int w) {
        const int64_t kb = computed[static_cast<std::size_t>(w)];
        const int s = Handover::stage_of(kb);
        if (!full[s].passes(Handover::full_parity(kb), kb / kStages)) return false;
        EXPECT_EQ(widened[s], kb) << "warpgroup " << w << " read a stage not holding block " << kb;
        EXPECT_EQ(loaded[s], kb) << "warpgroup " << w << " read a stage reloaded before its release";
        empty[s].arrive();
        ++computed[static_cast<std::size_t>(w)];
        return true;
      };
      const auto all_done = [&] {
        return produced >= blocks + kLoadAhead &&
               std::all_of(computed.begin(), computed.end(), [&](int64_t c) { return c >= blocks; });
      };
      while (!all_done()) {
        std::vector<int> ready;  // the computing warpgroups, then the producer (kConsumers)
        for (int actor = 0; actor <= kConsumers; ++actor) {
          const bool done = actor == kConsumers ? produced >= blocks + kLoadAhead
                                                : computed[static_cast<std::size_t>(actor)] >= blocks;
          if (!done) ready.push_back(actor);
        }
        std::shuffle(ready.begin(), ready.end(), rng);
        bool moved = false;
        for (int actor : ready) {
          if (actor == kConsumers ? producer_step() : compute_step(actor)) {
            moved = true;
            break;
          }
        }
        ASSERT_TRUE(moved) << "deadlock at " << blocks << " blocks, seed " << seed;
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

TEST(StageHandover, TheExpertGemmKeepsEachBlockUntilReleased) {
  namespace ws = w4a8::wgmma_tiles::warp_specialized;
  expect_handover_keeps_each_block_until_released<ws::Handover, ws::kLoadAhead>();
}

TEST(StageHandover, TheIndexerKeepsEachTileUntilReleased) {
  expect_handover_keeps_each_block_until_released<indexer_wgmma::Handover, indexer_wgmma::kLoadAhead>();
  // Decode: one computing warpgroup, the empty barriers completed by its arrivals alone.
  static_assert(indexer_wgmma_decode::kComputeThreads == wgmma::kThreads, "one computing warpgroup");
  expect_handover_keeps_each_block_until_released<indexer_wgmma::Handover, indexer_wgmma::kLoadAhead, 1>();
}

// Deeper and shallower rings than the kernels use hold the same way.
TEST(StageHandover, RingsOfOtherDepthsKeepEachBlockUntilReleased) {
  expect_handover_keeps_each_block_until_released<StageHandover<2>, 1>();
  expect_handover_keeps_each_block_until_released<StageHandover<3>, 1>();
  expect_handover_keeps_each_block_until_released<StageHandover<6>, 4>();
}

}  // namespace
}  // namespace v41sim::kernels

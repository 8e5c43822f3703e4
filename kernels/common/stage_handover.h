// The phases of a warp-specialized pipeline's handover (kernels/common/
// mbarrier.cuh): a producer fills a ring of kStages shared-memory stages for
// consumers. Block b lives in stage b % kStages; a stage's "full" and
// "empty" barriers complete once per block it holds, so the n-th block a
// stage holds is their n-th phase, of parity n % 2. Consumers wait for block
// b's full phase; the producer, before loading block b into a stage that held
// a block before, waits for the empty phase of that block, b - kStages.
// Plain host-and-device functions, so a CPU test runs the handover as a
// model of the barriers (tests/kernels/expert_gemm_w4a8_wgmma_test.cpp).
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"

namespace v41sim::kernels {

template <int kStages>
struct StageHandover {
  static_assert(kStages >= 2, "a ring of at least two stages");
  static constexpr int stages = kStages;
  V41_HD static int stage_of(int64_t block) { return static_cast<int>(block % kStages); }
  V41_HD static uint32_t full_parity(int64_t block) { return static_cast<uint32_t>((block / kStages) & 1); }
  V41_HD static bool load_waits_for_release(int64_t block) { return block >= kStages; }
  V41_HD static uint32_t release_parity(int64_t block) { return full_parity(block - kStages); }
};

}  // namespace v41sim::kernels

// The candidate pool's slots: a Reindex layer's logits row holds the pooled
// positions block after block, so slot s stands for position
// pool[s / 8] * 8 + s % 8 (the pool's blocks, kV41PoolBlockSize positions each).
#pragma once

#include <cstdint>

#include "kernels/common/host_device.h"
#include "kernels/common/v41_shapes.h"

namespace v41sim::kernels {

V41_HD int64_t pool_position(const int32_t* pool, int64_t query, int64_t pool_blocks, int64_t slot) {
  return static_cast<int64_t>(pool[query * pool_blocks + slot / kV41PoolBlockSize]) * kV41PoolBlockSize +
         slot % kV41PoolBlockSize;
}

}  // namespace v41sim::kernels

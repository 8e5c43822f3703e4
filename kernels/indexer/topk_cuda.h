// Host API of the top-k over the indexer's logits (plain C++; topk_cuda.cu).
// Results equal topk_reference's and pool_topk_reference's exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/indexer/topk_tiles.h"

namespace v41sim::kernels {

// How a radix pass counts its histogram: a warp's lanes that share a bin
// added at once where they crowd (topk_select.h, count_bin_by_warp), or a
// shared-memory atomic a lane (the baseline the harness times beside it, so
// the measured rows say what the crowding cost).
enum class HistogramCounting { kWarpAggregated, kPerLane };

std::vector<int32_t> topk_cuda(const std::vector<float>& logits, int64_t queries, int64_t positions,
                               int64_t topk, HistogramCounting counting = HistogramCounting::kWarpAggregated);
// Top-k of pool logits, written as positions (pool_topk_reference's result).
std::vector<int32_t> pool_topk_cuda(const std::vector<float>& pool_logits, const std::vector<int32_t>& pool,
                                    int64_t queries, int64_t topk);

// Device memory for a long row's candidates: topk_workspace_entries(queries,
// positions, topk) values and as many slots (none for a row of one pass).
struct TopkWorkspace {
  float* values = nullptr;
  int32_t* slots = nullptr;
};

// Device-pointer launcher for the harness (no copies, no sync). With a pool
// (queries x positions / block ids), the row is pool slots and the output
// holds the positions they stand for.
void launch_topk(const float* logits, int32_t* selected, int64_t queries, int64_t positions, int64_t topk,
                 const int32_t* pool = nullptr, const TopkWorkspace& workspace = {},
                 HistogramCounting counting = HistogramCounting::kWarpAggregated);

}  // namespace v41sim::kernels

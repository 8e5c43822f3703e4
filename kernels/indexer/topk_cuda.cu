// Top-k of the indexer's logits rows: the k largest, returned as positions in
// ascending order, ties to the lower position (indexer_reference.h).
//
// Selection (topk_select.h): a radix select over order-preserving keys (four
// 8-bit digits, a shared histogram each, a warp's lanes that share a bin
// counted by one atomic) finds the k-th largest key; then each warp compacts
// its contiguous span with ballots, so the output keeps index order and ties
// go to the lower position.
//
// A long row runs in two passes (topk_tiles.h): one CTA per tile of 8,192
// positions loads the tile into shared memory once and selects its own top-k
// there, writing values and slots in index order; then one CTA per row
// selects from those candidates, which lie contiguous and in index order, so
// the same selection gives the same answer as over the whole row. A short row
// runs the second pass alone, over the logits themselves. The row pass
// copies its row into shared memory first (up to kTopkStagedValues), as the
// tiles do, so its six walks do not each wait on L2 loads; candidates more
// than that are cut into tiles again, level after level (topk_tile_levels).
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/dynamic_shared_memory.cuh"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/pool_slots.h"
#include "kernels/indexer/topk_cuda.h"
#include "kernels/indexer/topk_select.h"
#include "kernels/indexer/topk_tiles.h"

namespace v41sim::kernels {
namespace {

using namespace topk_select;
constexpr unsigned kFullMask = 0xffffffffu;

// What lane - delta of the warp passed (topk_select.h's lane functions take it).
__device__ int shuffle_up(int value, int delta) { return __shfl_up_sync(kFullMask, value, delta); }

// Counts a lane's key in bin `bin` (none where -1); every lane of the warp calls it.
template <HistogramCounting kCounting>
__device__ void count_bin(int* histogram, int bin, int lane) {
  if constexpr (kCounting == HistogramCounting::kPerLane) {
    if (bin >= 0) atomicAdd(&histogram[bin], 1);
  } else {
    count_bin_by_warp(
        bin, lane, [](int value) { return __match_any_sync(kFullMask, value); },
        [histogram](int b, int count) { atomicAdd(&histogram[b], count); });
  }
}

template <HistogramCounting kCounting>
__device__ Threshold radix_select(const float* row, int64_t positions, int64_t topk) {
  __shared__ int histogram[kDigits];
  __shared__ Threshold chosen;
  Threshold t{0, static_cast<int>(topk)};
  uint32_t mask = 0;
  const int lane = threadIdx.x % kLanes;
  for (int shift = 32 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    for (int i = threadIdx.x; i < kDigits; i += blockDim.x) histogram[i] = 0;
    __syncthreads();
    // Whole warps step together (the warp's counting matches its lanes), lanes past the row counting nothing.
    for (int64_t base = threadIdx.x - lane; base < positions; base += blockDim.x) {
      const int64_t i = base + lane;
      count_bin<kCounting>(histogram,
                           i < positions ? digit_bin(ordered_bits(row[i]), t.key, mask, shift) : -1, lane);
    }
    __syncthreads();
    if (threadIdx.x < kLanes) {  // the first warp chooses
      Threshold choice;
      if (choose_digit_by_lane(histogram, t.key, t.ties_needed, shift, lane, shuffle_up, choice))
        chosen = choice;
    }
    __syncthreads();
    t = chosen;
    mask |= static_cast<uint32_t>(kDigits - 1) << shift;
    __syncthreads();  // everyone has read the choice before the next pass overwrites it
  }
  return t;
}

// Calls emit(n, i) for the n-th selected index i of `row` (n ascending with
// i): every key above the threshold and its first ties. All threads take part.
template <typename Emit>
__device__ void select_in_order(const float* row, int64_t positions, const Threshold& t, Emit&& emit) {
  // Each warp owns a contiguous span (a multiple of 32), so counting then
  // writing span by span keeps index order.
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const auto [begin, end] = warp_span(warp, positions);
  int above = 0;
  int equal = 0;
  for (int64_t base = begin; base < end; base += 32) {
    const int64_t i = base + lane;
    const uint32_t key = i < end ? ordered_bits(row[i]) : 0u;
    above += __popc(__ballot_sync(kFullMask, i < end && key > t.key));
    equal += __popc(__ballot_sync(kFullMask, i < end && key == t.key));
  }
  __shared__ int above_before[kWarps];
  __shared__ int equal_before[kWarps];
  if (lane == 0) {
    above_before[warp] = above;
    equal_before[warp] = equal;
  }
  __syncthreads();
  if (warp == 0) {  // the counts' exclusive scans over the warps, lane w for warp w
    const int a = count_before_warp(above_before[lane], lane, shuffle_up);
    const int e = count_before_warp(equal_before[lane], lane, shuffle_up);
    above_before[lane] = a;
    equal_before[lane] = e;
  }
  __syncthreads();
  const unsigned below = lanes_below(lane);
  int ties_seen = equal_before[warp];
  int written = first_output(above_before[warp], ties_seen, t);
  for (int64_t base = begin; base < end; base += 32) {
    const int64_t i = base + lane;
    const uint32_t key = i < end ? ordered_bits(row[i]) : 0u;
    const unsigned ties = __ballot_sync(kFullMask, i < end && key == t.key);
    const bool take = lane_takes(i < end, key, t, ties_seen + __popc(ties & below));
    const unsigned takes = __ballot_sync(kFullMask, take);
    if (take) emit(written + __popc(takes & below), i);
    written += __popc(takes);
    ties_seen += __popc(ties);
  }
}

// A CTA's copy of a row's `count` values into shared memory, read from
// memory once before the radix passes walk them.
__device__ void stage_values(float* shared, const float* values, int64_t count) {
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) shared[i] = values[i];
  __syncthreads();
}

// One tile pass over rows of `length` values `stride` apart, value i
// standing for slot i (or slots[i], the candidates of a pass before): each
// tile's top-k (or the whole tile where it holds no more) as candidates,
// values and slots in index order, tile t's at t x k in the output row.
struct TileRows {
  const float* values;
  const int32_t* slots;  // null: value i is slot i
  int64_t stride;
  int64_t length;
  float* candidate_values;
  int32_t* candidate_slots;
  int64_t topk;
};

// Two CTAs an SM (34 KB of shared memory each, 32 registers a thread; left
// unbounded, ptxas for sm_100 took 55 and so one CTA an SM).
template <HistogramCounting kCounting>
__global__ void __launch_bounds__(kThreads, 2) topk_tile_kernel(TileRows r) {
  __shared__ float tile_values[kTopkTilePositions];
  const int64_t query = blockIdx.y, tile = blockIdx.x;
  const int64_t first = tile * kTopkTilePositions;
  const int64_t count = r.length - first < kTopkTilePositions ? r.length - first : kTopkTilePositions;
  stage_values(tile_values, r.values + query * r.stride + first, count);
  const int64_t out = (query * gridDim.x + tile) * r.topk;
  const auto slot = [&](int64_t i) {
    return r.slots != nullptr ? r.slots[query * r.stride + first + i] : static_cast<int32_t>(first + i);
  };
  if (count <= r.topk) {
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
      r.candidate_values[out + i] = tile_values[i];
      r.candidate_slots[out + i] = slot(i);
    }
    return;
  }
  const Threshold t = radix_select<kCounting>(tile_values, count, r.topk);
  select_in_order(tile_values, count, t, [&](int64_t n, int64_t i) {
    r.candidate_values[out + n] = tile_values[i];
    r.candidate_slots[out + n] = slot(i);
  });
}

// A row's top-k: over `length` values `stride` apart from row to row, each
// standing for slot i (or slots[i] where a tile pass left candidates),
// written as the slot or, with a pool, the position it stands for.
struct SelectRows {
  const float* values;
  const int32_t* slots;  // null: value i is slot i
  int64_t stride;
  int64_t length;
  const int32_t* pool;  // null: slots are positions
  int64_t pool_blocks;
  int32_t* selected;
  int64_t topk;
  bool staged;  // the row copied into the CTA's dynamic shared memory first
};

// One CTA an SM (its row in up to 128 KB of shared memory; and, unbounded,
// ptxas for sm_100 would keep it to 32 registers and spill).
template <HistogramCounting kCounting>
__global__ void __launch_bounds__(kThreads, 1) topk_kernel(SelectRows r) {
  extern __shared__ float staged_row[];
  const int64_t query = blockIdx.x;
  const float* row = r.values + query * r.stride;
  if (r.staged) {
    stage_values(staged_row, row, r.length);
    row = staged_row;
  }
  int32_t* out = r.selected + query * r.topk;
  const Threshold t = radix_select<kCounting>(row, r.length, r.topk);
  select_in_order(row, r.length, t, [&](int64_t n, int64_t i) {
    const int64_t slot = r.slots != nullptr ? r.slots[query * r.stride + i] : i;
    out[n] =
        static_cast<int32_t>(r.pool != nullptr ? pool_position(r.pool, query, r.pool_blocks, slot) : slot);
  });
}

// The values the row pass holds in shared memory on this device: up to
// kTopkStagedValues, as far as its opt-in shared memory goes (allowed once).
template <HistogramCounting kCounting>
int64_t staged_capacity() {
  static const int64_t values = [] {
    const int64_t fits =
        dynamic_shared_memory_limit(topk_kernel<kCounting>) / static_cast<int64_t>(sizeof(float));
    const int64_t capacity = fits < kTopkStagedValues ? fits : kTopkStagedValues;
    allow_shared_memory<topk_kernel<kCounting>>(
        static_cast<int>(capacity * static_cast<int64_t>(sizeof(float))));
    return capacity;
  }();
  return values;
}

// The row pass, a CTA a row, its row staged in shared memory where it fits.
template <HistogramCounting kCounting>
void launch_row_pass(SelectRows r, int64_t queries) {
  r.staged = r.length <= staged_capacity<kCounting>();
  const std::size_t bytes = r.staged ? static_cast<std::size_t>(r.length) * sizeof(float) : 0;
  topk_kernel<kCounting><<<static_cast<unsigned>(queries), kThreads, bytes>>>(r);
}

// The tile passes level by level (topk_tile_levels), each over the
// candidates the one before left, then the row pass (the checks done).
template <HistogramCounting kCounting>
void launch_passes(const float* logits, int32_t* selected, int64_t queries, int64_t positions, int64_t topk,
                   const int32_t* pool, const TopkWorkspace& workspace) {
  SelectRows row{logits,   nullptr, positions, positions, pool, positions / kV41PoolBlockSize,
                 selected, topk,    false};
  float* values = workspace.values;
  int32_t* slots = workspace.slots;
  for (const int64_t length : topk_tile_levels(positions, topk)) {
    const int64_t tiles = topk_tiles(length);
    topk_tile_kernel<kCounting>
        <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(queries)), kThreads>>>(
            {row.values, row.slots, row.stride, length, values, slots, topk});
    row.values = values;
    row.slots = slots;
    row.stride = tiles * topk;
    row.length = topk_candidates(length, topk);
    values += queries * tiles * topk;
    slots += queries * tiles * topk;
  }
  launch_row_pass<kCounting>(row, queries);
}

}  // namespace

void launch_topk(const float* logits, int32_t* selected, int64_t queries, int64_t positions, int64_t topk,
                 const int32_t* pool, const TopkWorkspace& workspace, HistogramCounting counting) {
  if (topk <= 0 || topk > positions || queries <= 0)
    throw std::invalid_argument("topk: need 0 < k <= positions");
  if (pool != nullptr && positions % kV41PoolBlockSize != 0)
    throw std::invalid_argument("topk over a pool: the row must be whole pool blocks");
  if (topk_in_tiles(positions, topk) && (workspace.values == nullptr || workspace.slots == nullptr))
    throw std::invalid_argument("topk: a row over 8192 positions needs a workspace (topk_workspace_entries)");
  if (counting == HistogramCounting::kPerLane) {
    launch_passes<HistogramCounting::kPerLane>(logits, selected, queries, positions, topk, pool, workspace);
  } else {
    launch_passes<HistogramCounting::kWarpAggregated>(logits, selected, queries, positions, topk, pool,
                                                      workspace);
  }
}

namespace {

std::vector<int32_t> run_topk(const std::vector<float>& logits, const int32_t* pool, int64_t queries,
                              int64_t positions, int64_t topk, HistogramCounting counting) {
  const auto entries = static_cast<std::size_t>(topk_workspace_entries(queries, positions, topk));
  const DeviceBuffer<float> d_logits(logits), values(entries);
  const DeviceBuffer<int32_t> slots(entries), d_out(static_cast<std::size_t>(queries * topk));
  launch_topk(d_logits.get(), d_out.get(), queries, positions, topk, pool, {values.get(), slots.get()},
              counting);
  CUDA_CHECK(cudaGetLastError());
  return d_out.download(static_cast<std::size_t>(queries * topk));
}

}  // namespace

std::vector<int32_t> topk_cuda(const std::vector<float>& logits, int64_t queries, int64_t positions,
                               int64_t topk, HistogramCounting counting) {
  return run_topk(logits, nullptr, queries, positions, topk, counting);
}

std::vector<int32_t> pool_topk_cuda(const std::vector<float>& pool_logits, const std::vector<int32_t>& pool,
                                    int64_t queries, int64_t topk) {
  const DeviceBuffer<int32_t> d_pool(pool);
  return run_topk(pool_logits, d_pool.get(), queries, static_cast<int64_t>(pool_logits.size()) / queries,
                  topk, HistogramCounting::kWarpAggregated);
}

}  // namespace v41sim::kernels

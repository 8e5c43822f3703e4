// The lightning indexer: decode (layer 20 with the candidate pool, Reindex
// inside it, the top-k passes) and prefill chunks, on both logits paths.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/checks/device_checks.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_timer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/harness/device_fill.h"
#include "kernels/harness/dispatched_names.h"
#include "kernels/harness/measure_groups.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/indexer/indexer_mma_tiles.h"
#include "kernels/indexer/indexer_wgmma_decode_tiles.h"
#include "kernels/indexer/indexer_wgmma_tiles.h"

namespace v41sim::kernels {

namespace {

// Index keys and queries for `queries` queries over `positions` positions.
// Decode: each query is its own request with its own keys; prefill: the
// queries are one sequence's chunk and share its keys.
struct IndexerInputs {
  DeviceBuffer<uint8_t> keys;
  DeviceBuffer<uint8_t> q;  // E4M3, each head's scale folded into its weight
  DeviceBuffer<float> w;
  IndexerInputs(int64_t key_sets, int64_t queries, int64_t positions, uint64_t seed)
      : keys(static_cast<std::size_t>(key_sets * positions * kIndexKeyBytes)),
        q(static_cast<std::size_t>(queries * kV41IndexHeads * kIndexDim)),
        w(static_cast<std::size_t>(queries * kV41IndexHeads)) {
    fill_index_keys(keys.get(), key_sets * positions, seed);
    fill_e4m3(q.get(), queries * kV41IndexHeads * kIndexDim, seed + 1);
    fill_uniform(w.get(), queries * kV41IndexHeads, seed + 2);
  }
};

// A logits path's CTA tile, queries x columns, as a row's tiling says it
// (csv_rows.h Row::tiling), so the fit predicts the row with the tiles the
// kernel ran: read off the kernels' own layouts.
std::string cta_tile(int64_t queries, int64_t columns) {
  return std::to_string(queries) + "x" + std::to_string(columns);
}
const std::string kMmaSharedKeysTile =
    cta_tile(indexer_mma::kSharedKeyQueries, indexer_mma::kKeys* indexer_mma::kTilesPerCta);
const std::string kMmaOwnKeysTile = cta_tile(1, indexer_mma::kKeys* indexer_mma::kTilesPerCta);
// A request's queries on mma.sync: up to 4 of them a CTA.
std::string mma_request_tile(int request_queries) {
  return cta_tile(indexer_mma::shared_key_queries_per_cta(request_queries),
                  indexer_mma::kKeys * indexer_mma::kTilesPerCta);
}
const std::string kWgmmaPrefillTile =
    cta_tile(indexer_wgmma::kQueries, indexer_wgmma::kKeys* indexer_wgmma::kTilesPerCta);
const std::string kWgmmaDecodeTile = cta_tile(indexer_wgmma_decode::kMaxRequestQueries,
                                              indexer_wgmma::kKeys* indexer_wgmma_decode::kTilesPerCta);
const std::string kWgmmaPoolTile = cta_tile(1, indexer_wgmma::kKeys* indexer_wgmma_decode::kTilesPerCta);

// The indexer's logits paths: tensor cores (what the simulator models; fitted)
// and the FP32-unit baseline (recorded, not fitted). Each is timed only if its
// check passed.
struct IndexerPath {
  const char* logits_name;
  const char* pool_logits_name;
  const char* math;
  const char* suffix;  // of its baseline name where it competes with FP8 wgmma (null: a fixed name)
  const char* shared_keys_tiling;  // a prefill chunk's rows (Row::tiling)
  const char* own_keys_tiling;     // a decode batch's rows, each query its own keys or pool
  // Their last argument: queries a request (kOneKeySet: a prefill chunk's).
  void (*logits)(const uint8_t*, const float*, const uint8_t*, float*, int64_t, int64_t, int64_t, float*,
                 int64_t);
  void (*pool_logits)(const uint8_t*, const float*, const uint8_t*, const int32_t*, float*, int64_t, int64_t,
                      int64_t, int64_t, int64_t);
};

std::vector<IndexerPath> indexer_paths() {
  const bool mma = passes("indexer (tensor cores)", check_indexer(IndexerMath::kTensorCores)) &&
                   passes("candidate pool (tensor cores)", check_candidate_pool(IndexerMath::kTensorCores));
  const bool fp32 = passes("indexer (fp32 baseline)", check_indexer(IndexerMath::kFp32Units)) &&
                    passes("candidate pool (fp32 baseline)", check_candidate_pool(IndexerMath::kFp32Units));
  std::vector<IndexerPath> paths;
  if (mma) {
    paths.push_back({"indexer_logits", "indexer_logits_in_pool", "bf16", "bf16_mma",
                     kMmaSharedKeysTile.c_str(), kMmaOwnKeysTile.c_str(), launch_indexer_logits_mma,
                     launch_indexer_pool_logits_mma});
  }
  if (fp32) {
    paths.push_back({"indexer_logits_fp32_baseline", "indexer_logits_in_pool_fp32_baseline", "fp32", nullptr,
                     "class", "class", launch_indexer_logits, launch_indexer_pool_logits});
  }
  return paths;
}

// A path to time: its row's name and math, the suffix of its baseline name
// where it competes for the simulator's name (null: a fixed name), and how
// it cuts its work into CTAs (Row::tiling).
struct TimedPath {
  std::string name;
  const char* math;
  const char* suffix;
  std::function<void()> launch;
  std::string tiling = "class";
};

// Times each path in order (the last one's outputs stay in the buffers),
// names them as an engine would dispatch the shape (the fastest competing
// path carries `name`) and writes `row` for each with its name, math and time.
void time_paths(const RowWriter& w, const std::string& name, const std::vector<TimedPath>& paths, Row row,
                const std::string& shape) {
  std::vector<TimedPathRow> timed;
  for (const TimedPath& p : paths)
    timed.push_back({p.name, p.math, time_kernel([&](int) { p.launch(); }, kWarmup, kRuns), p.suffix});
  name_competing_paths(name, timed);
  for (std::size_t i = 0; i < timed.size(); ++i) {
    const TimedPathRow& t = timed[i];
    row.kernel = t.name;
    row.math = t.math;
    row.time = t.time;
    row.tiling = paths[i].tiling;
    w.row(row);
    std::printf("%s (%s) %s: %.1f us\n", t.name.c_str(), t.math, shape.c_str(), t.time.median_us);
  }
}

// An indexer logits row (m queries x n positions or slots, k all heads'
// dimensions, over `batch` key sets: a decode row's requests, each its m
// queries, as the step model splits decode's logits; 1 for a prefill chunk):
// its FLOPs, bytes and the FP4 key values its math widens; time_paths names
// and times it.
Row logits_row(int64_t m, int64_t n, int64_t batch, int64_t context, double flops, double bytes,
               double fp4_values) {
  Row row{"", "indexer", "", m, n, kV41IndexHeads * kIndexDim, batch, context, flops, bytes};
  row.narrow_fp4_values = fp4_values;
  row.folded_values = flops / (2.0 * kIndexDim);  // a score a head a (query, position): its ReLU and weight
  return row;
}

// The top-k's ways of counting a pass's histogram, each timed only where its
// check passed; the faster carries the simulator's name, the other
// "<name>_<suffix>_baseline", so the rows say what crowded bins cost.
struct TopkCounting {
  HistogramCounting counting;
  const char* suffix;
};

std::vector<TopkCounting> topk_countings() {
  std::vector<TopkCounting> countings;
  if (passes("top-k (warp-aggregated counting)", check_topk(HistogramCounting::kWarpAggregated)))
    countings.push_back({HistogramCounting::kWarpAggregated, "warp_aggregated"});
  if (passes("top-k (an atomic a lane)", check_topk(HistogramCounting::kPerLane)))
    countings.push_back({HistogramCounting::kPerLane, "per_lane_atomics"});
  return countings;
}

// Times `launch(counting)` under each counting, as time_paths does, `row`
// naming the kernel.
template <typename Launch>
void time_topk(const RowWriter& w, const std::vector<TopkCounting>& countings, const Row& row,
               const std::string& shape, Launch&& launch) {
  std::vector<TimedPath> paths;
  for (const TopkCounting& c : countings)
    paths.push_back({"", "fp32", c.suffix, [&, c] { launch(c.counting); }});
  time_paths(w, row.kernel, paths, row, shape);
}

// Decode with drafts: each request's token and the drafts it verifies
// (request_queries in all) score its keys together, a key read once a
// request, as the simulator counts decode's index keys (its step model;
// DeepGEMM's paged logits take a request's next_n queries in one CTA). On
// the FP8 wgmma path (a request a CTA) and BF16 mma.sync (up to 4 of a
// request's queries a CTA, so 6 read its keys twice), each where its check
// passed (null or false: not), the faster named as time_paths names them;
// not the FP32 baseline. Over every position, with the block maxima where
// the pool is built. Rows named indexer_logits, m a request's queries, batch
// the requests; the top-k passes are the one-query rows' (a query's top-k
// does not depend on its request).
void measure_request_queries(const RowWriter& w, bool quick, bool wgmma, const IndexerPath* mma) {
  const int64_t heads = kV41IndexHeads, dims = heads * kIndexDim;
  const std::vector<int> request_queries = quick ? std::vector<int>{6} : std::vector<int>{2, 6};
  const std::vector<int64_t> batches = quick ? std::vector<int64_t>{8} : std::vector<int64_t>{8, 32};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{65536} : std::vector<int64_t>{65536, 1048576};
  for (const int n : request_queries) {
    for (const int64_t batch : batches) {
      for (const int64_t positions : contexts) {
        const int64_t queries = batch * n;
        const IndexerInputs in(batch, queries, positions, 11 + static_cast<uint64_t>(positions));
        const int64_t blocks = (positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
        const bool builds_pool = blocks > kV41PoolTopBlocks;
        const DeviceBuffer<float> logits(static_cast<std::size_t>(queries * positions));
        const DeviceBuffer<float> block_max(static_cast<std::size_t>(queries * blocks));
        float* maxima = builds_pool ? block_max.get() : nullptr;
        const double pairs = static_cast<double>(queries * positions);
        const double keys = static_cast<double>(batch * positions);
        const double block_bytes = builds_pool ? static_cast<double>(queries * blocks) * 4.0 : 0.0;
        std::vector<TimedPath> paths;
        if (wgmma) {
          paths.push_back({"indexer_logits", "fp8", "fp8_wgmma",
                           [&] {
                             launch_indexer_decode_logits_wgmma(in.q.get(), in.w.get(), in.keys.get(),
                                                                logits.get(), queries, heads, positions,
                                                                maxima, n);
                           },
                           kWgmmaDecodeTile});
        }
        if (mma != nullptr) {
          paths.push_back({mma->logits_name, mma->math, mma->suffix,
                           [&] {
                             mma->logits(in.q.get(), in.w.get(), in.keys.get(), logits.get(), queries, heads,
                                         positions, maxima, n);
                           },
                           mma_request_tile(n)});
        }
        time_paths(w, "indexer_logits", paths,
                   logits_row(n, positions, batch, positions, 2.0 * dims * pairs,
                              keys * kIndexKeyBytes + static_cast<double>(queries * dims) + pairs * 4.0 +
                                  block_bytes,
                              keys * kIndexDim),
                   "decode batch " + std::to_string(batch) + " x " + std::to_string(n) + " queries, " +
                       std::to_string(positions) + " positions");
        CUDA_CHECK(cudaGetLastError());
      }
    }
  }
}

// One decode shape: `batch` requests of one query, each over its own
// `positions` keys; layer 20's logits and block maxima, the top-k's
// selections and the candidates of its tiled passes (the widest of the
// shape's three passes).
struct DecodeShape {
  int64_t batch, positions, blocks;
  bool builds_pool;  // past 16,384 positions
  IndexerInputs in;
  DeviceBuffer<float> logits, block_max;
  DeviceBuffer<int32_t> selected;
  DeviceBuffer<float> candidate_values;
  DeviceBuffer<int32_t> candidate_slots;
  std::string name;

  DecodeShape(int64_t batch_size, int64_t position_count)
      : batch(batch_size),
        positions(position_count),
        blocks((positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize),
        builds_pool(blocks > kV41PoolTopBlocks),
        in(batch, batch, positions, 7 + static_cast<uint64_t>(positions)),
        logits(static_cast<std::size_t>(batch * positions)),
        block_max(static_cast<std::size_t>(batch * blocks)),
        selected(static_cast<std::size_t>(batch * kV41TopK)),
        candidate_values(candidate_entries()),
        candidate_slots(candidate_entries()),
        name("decode batch " + std::to_string(batch) + ", " + std::to_string(positions) + " positions") {}
  std::size_t candidate_entries() const {
    return static_cast<std::size_t>(
        std::max({topk_workspace_entries(batch, positions, kV41TopK),
                  topk_workspace_entries(batch, blocks, kV41PoolTopBlocks),
                  topk_workspace_entries(batch, kV41PoolTopBlocks * kV41PoolBlockSize, kV41TopK)}));
  }
  TopkWorkspace candidates() const { return {candidate_values.get(), candidate_slots.get()}; }
  float* maxima() const { return builds_pool ? block_max.get() : nullptr; }
  double block_bytes() const { return builds_pool ? static_cast<double>(batch * blocks) * 4.0 : 0.0; }
};

// Layer 20's logits over every position (with the block maxima where it
// builds the pool) on each path, the first path's logits left for its
// top-512, then that top-512.
void measure_layer20(const RowWriter& w, const DecodeShape& d, const std::vector<IndexerPath>& paths,
                     bool wgmma, const std::vector<TopkCounting>& countings) {
  const int64_t heads = kV41IndexHeads, dims = heads * kIndexDim;
  std::vector<TimedPath> logits_paths;
  if (wgmma) {
    logits_paths.push_back({"indexer_logits", "fp8", "fp8_wgmma",
                            [&] {
                              launch_indexer_decode_logits_wgmma(d.in.q.get(), d.in.w.get(), d.in.keys.get(),
                                                                 d.logits.get(), d.batch, heads, d.positions,
                                                                 d.maxima());
                            },
                            kWgmmaDecodeTile});
  }
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {  // the first path's logits stay for top-k
    logits_paths.push_back({it->logits_name, it->math, it->suffix,
                            [&, it] {
                              it->logits(d.in.q.get(), d.in.w.get(), d.in.keys.get(), d.logits.get(), d.batch,
                                         heads, d.positions, d.maxima(), 1);
                            },
                            it->own_keys_tiling});
  }
  const double pairs = static_cast<double>(d.batch * d.positions);
  time_paths(
      w, "indexer_logits", logits_paths,
      logits_row(1, d.positions, d.batch, d.positions, 2.0 * dims * pairs,
                 pairs * kIndexKeyBytes + static_cast<double>(d.batch * dims) + pairs * 4.0 + d.block_bytes(),
                 pairs * kIndexDim),
      d.name);
  time_topk(w, countings,
            {"topk_select", "topk", "fp32", d.batch, d.positions, 1, 1, d.positions, 2.0 * pairs,
             pairs * 4.0 + static_cast<double>(d.batch * kV41TopK) * 4.0},
            d.name, [&](HistogramCounting counting) {
              launch_topk(d.logits.get(), d.selected.get(), d.batch, d.positions, kV41TopK, nullptr,
                          d.candidates(), counting);
            });
}

// The candidate pool from layer 20's block maxima (their top 2,048 blocks),
// then a Reindex layer: its logits of the pooled positions on each path and
// its top-512 there.
void measure_reindex_in_pool(const RowWriter& w, const DecodeShape& d, const std::vector<IndexerPath>& paths,
                             bool wgmma, const std::vector<TopkCounting>& countings) {
  const int64_t heads = kV41IndexHeads, dims = heads * kIndexDim;
  const int64_t pool_blocks = kV41PoolTopBlocks, pool_slots = pool_blocks * kV41PoolBlockSize;
  const DeviceBuffer<int32_t> pool(static_cast<std::size_t>(d.batch * pool_blocks));
  time_topk(w, countings,
            {"candidate_pool_block_max_topk", "topk", "fp32", d.batch, d.blocks, 1, 1, d.positions,
             2.0 * static_cast<double>(d.batch * d.blocks),
             d.block_bytes() + static_cast<double>(d.batch * pool_blocks) * 4.0},
            d.name, [&](HistogramCounting counting) {
              launch_topk(d.block_max.get(), pool.get(), d.batch, d.blocks, pool_blocks, nullptr,
                          d.candidates(), counting);
            });
  const DeviceBuffer<float> pooled(static_cast<std::size_t>(d.batch * pool_slots));
  const double pooled_pairs = static_cast<double>(d.batch * pool_slots);
  std::vector<TimedPath> pool_paths;
  if (wgmma) {
    pool_paths.push_back({"indexer_logits_in_pool", "fp8", "fp8_wgmma",
                          [&] {
                            launch_indexer_decode_pool_logits_wgmma(d.in.q.get(), d.in.w.get(),
                                                                    d.in.keys.get(), pool.get(), pooled.get(),
                                                                    d.batch, heads, d.positions, pool_blocks);
                          },
                          kWgmmaPoolTile});
  }
  for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
    pool_paths.push_back({it->pool_logits_name, it->math, it->suffix,
                          [&, it] {
                            it->pool_logits(d.in.q.get(), d.in.w.get(), d.in.keys.get(), pool.get(),
                                            pooled.get(), d.batch, heads, d.positions, pool_blocks, 1);
                          },
                          it->own_keys_tiling});
  }
  time_paths(
      w, "indexer_logits_in_pool", pool_paths,
      logits_row(1, pool_slots, d.batch, d.positions, 2.0 * dims * pooled_pairs,
                 pooled_pairs * kIndexKeyBytes + static_cast<double>(d.batch * dims) + pooled_pairs * 4.0,
                 pooled_pairs * kIndexDim),
      "  pool of " + d.name);
  time_topk(w, countings,
            {"topk_select", "topk", "fp32", d.batch, pool_slots, 1, 1, d.positions, 2.0 * pooled_pairs,
             pooled_pairs * 4.0 + static_cast<double>(d.batch * kV41TopK) * 4.0},
            "  pool of " + d.name, [&](HistogramCounting counting) {
              launch_topk(pooled.get(), d.selected.get(), d.batch, pool_slots, kV41TopK, pool.get(),
                          d.candidates(), counting);
            });
}

}  // namespace

// Layer 20 in decode: logits over every position (and, past 16,384, the
// block maxima that build the pool), its own top-512, the pool's top-2048
// blocks; then a Reindex layer: logits of the 16,384 pooled positions and
// its top-512 there. Rows carry the simulator's kernel names. The logits
// on two tensor-core paths where the device has wgmma and its check passed
// (BF16 mma.sync and FP8 wgmma, DeepGEMM's paged mqa_logits kind): the
// faster carries the simulator's name, the other is "*_bf16_mma_baseline" or
// "*_fp8_wgmma_baseline", for the logits and for the pool's. The top-k
// passes run on the last path timed's logits (mma.sync where it passed).
// Then requests of a token and its drafts sharing their keys, on the
// tensor-core paths (measure_request_queries).
int measure_indexer_decode(const RowWriter& w, bool quick, bool wgmma_passed) {
  const std::vector<IndexerPath> paths = indexer_paths();
  const bool wgmma = wgmma_passed && passes("indexer decode logits (wgmma)", check_indexer_wgmma_decode());
  const std::vector<TopkCounting> countings = topk_countings();
  if (paths.empty() || countings.empty()) return 1;
  const std::vector<int64_t> batches = quick ? std::vector<int64_t>{8} : std::vector<int64_t>{1, 8, 32, 64};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{65536} : std::vector<int64_t>{4096, 16384, 65536, 262144, 1048576};
  for (const int64_t batch : batches) {
    for (const int64_t positions : contexts) {
      const DecodeShape d(batch, positions);
      measure_layer20(w, d, paths, wgmma, countings);
      if (d.builds_pool) measure_reindex_in_pool(w, d, paths, wgmma, countings);
      CUDA_CHECK(cudaGetLastError());
    }
  }
  // The mma.sync path where its checks passed (the paths competing with wgmma carry a suffix).
  const auto mma = std::find_if(paths.begin(), paths.end(), [](const IndexerPath& p) { return p.suffix; });
  if (wgmma || mma != paths.end())
    measure_request_queries(w, quick, wgmma, mma == paths.end() ? nullptr : &*mma);
  return 0;
}

// Prefill: a chunk of one sequence's queries against its keys. The kernel
// model counts keys as read once per 64-query tile (DeepGEMM's mqa_logits);
// the tensor-core paths read each key tile once per 4 queries and the FP32
// baseline once per query (the rest from L2); the rows say what the model
// counts, so the fit shows how far these kernels are from that, with the
// FP32 logits written for the top-k pass (as the model counts them). Two
// tensor-core paths where the device has wgmma and its check passed: BF16
// mma.sync and FP8 wgmma; the faster carries the simulator's name, the other
// is "*_bf16_mma_baseline" or "*_fp8_wgmma_baseline".
int measure_indexer_prefill(const RowWriter& w, bool quick, bool wgmma_passed) {
  const std::vector<IndexerPath> paths = indexer_paths();
  const std::vector<TopkCounting> countings = topk_countings();
  if (paths.empty() || countings.empty()) return 1;
  const bool wgmma = wgmma_passed && passes("indexer logits (wgmma)", check_indexer_wgmma());
  const int64_t heads = kV41IndexHeads, dims = heads * kIndexDim;
  const std::vector<int64_t> chunks = quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 512};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{16384} : std::vector<int64_t>{4096, 16384, 65536};
  for (const int64_t queries : chunks) {
    for (const int64_t positions : contexts) {
      const IndexerInputs in(1, queries, positions, 99 + static_cast<uint64_t>(positions));
      const DeviceBuffer<float> logits(static_cast<std::size_t>(queries * positions));
      const double pairs = static_cast<double>(queries * positions);
      std::vector<TimedPath> logits_paths;
      for (const IndexerPath& path : paths) {
        logits_paths.push_back({path.logits_name, path.math, path.suffix,
                                [&] {
                                  path.logits(in.q.get(), in.w.get(), in.keys.get(), logits.get(), queries,
                                              heads, positions, nullptr, kOneKeySet);
                                },
                                path.shared_keys_tiling});
      }
      if (wgmma) {
        logits_paths.push_back({"indexer_logits", "fp8", "fp8_wgmma",
                                [&] {
                                  launch_indexer_logits_wgmma(in.q.get(), in.w.get(), in.keys.get(),
                                                              logits.get(), queries, heads, positions);
                                },
                                kWgmmaPrefillTile});
      }
      const std::string shape =
          "prefill " + std::to_string(queries) + " queries, " + std::to_string(positions) + " positions";
      time_paths(w, "indexer_logits", logits_paths,
                 logits_row(queries, positions, 1, positions, 2.0 * dims * pairs,
                            pairs / 64.0 * kIndexKeyBytes + static_cast<double>(queries * dims) + pairs * 4.0,
                            pairs / 64.0 * kIndexDim),
                 shape);
      // The chunk's top-512 a query over the logits just written, as the step model charges it.
      const auto entries = static_cast<std::size_t>(topk_workspace_entries(queries, positions, kV41TopK));
      const DeviceBuffer<float> candidate_values(entries);
      const DeviceBuffer<int32_t> candidate_slots(entries),
          selected(static_cast<std::size_t>(queries * kV41TopK));
      time_topk(w, countings,
                {"topk_select", "topk", "fp32", queries, positions, 1, 1, positions, 2.0 * pairs,
                 pairs * 4.0 + static_cast<double>(queries * kV41TopK) * 4.0},
                shape, [&](HistogramCounting counting) {
                  launch_topk(logits.get(), selected.get(), queries, positions, kV41TopK, nullptr,
                              {candidate_values.get(), candidate_slots.get()}, counting);
                });
      CUDA_CHECK(cudaGetLastError());
    }
  }
  return 0;
}

}  // namespace v41sim::kernels

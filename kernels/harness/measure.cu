// v41sim_measure: the measuring harness. Built with the CUDA toolkit and
// CMake alone (the GPU machine reaches no package registry).
//
// First the device's own ceilings (streaming copy, dense FP8 GEMM, FP32 FMA
// chains); then, group by group, each kernel: its correctness check against
// the CPU reference (a kernel that fails is not timed), then CUDA-event
// timings after warm-up (median, min, max of many runs) over the shapes the
// simulator uses, on device-generated random inputs, rotating buffers larger
// than L2 where a kernel would otherwise re-read from it. Every group runs in
// its own child process (isolated_run.h), so one crash or hang costs one
// group. Output: <out>/kernels.csv (validation/measurements/README.md).
//
//   v41sim_measure --out validation/measurements/h200 [--quick] [--only g1,g2] [--group-timeout S]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/checks/device_checks.h"
#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_timer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/compress/compress_pool.h"
#include "kernels/engram/engram_gather.h"
#include "kernels/gemm/expert_gemm.h"
#include "kernels/harness/csv_rows.h"
#include "kernels/harness/device_copy.cuh"
#include "kernels/harness/device_fill.cuh"
#include "kernels/harness/fp32_ceiling.cuh"
#include "kernels/harness/isolated_run.h"
#include "kernels/indexer/index_key_block.h"
#include "kernels/indexer/indexer_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"
#include "kernels/mhc/mhc_mixing.h"

#ifndef V41SIM_GIT_COMMIT
#define V41SIM_GIT_COMMIT "unknown"
#endif

namespace v41sim::kernels {
namespace {

constexpr int kWarmup = 5;
constexpr int kRuns = 50;
constexpr int64_t kDim = kLatentDim;  // V4.1 compressed KV latent

struct Device {
  cudaDeviceProp props{};
  int sms = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int l2_bytes = 0;
  int driver = 0;
  int runtime = 0;
};

Device query_device() {
  Device d;
  CUDA_CHECK(cudaGetDeviceProperties(&d.props, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.memory_clock_khz, cudaDevAttrMemoryClockRate, 0));
  CUDA_CHECK(cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, 0));
  CUDA_CHECK(cudaDriverGetVersion(&d.driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime));
  return d;
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

void write_metadata(const RowWriter& w, const Device& d) {
  w.meta("gpu", d.props.name);
  w.meta("sm_count", std::to_string(d.sms));
  w.meta("sm_clock_mhz", std::to_string(d.clock_khz / 1000));
  w.meta("memory_clock_mhz", std::to_string(d.memory_clock_khz / 1000));
  w.meta("memory_bytes", std::to_string(d.props.totalGlobalMem));
  w.meta("memory_bus_bits", std::to_string(d.props.memoryBusWidth));
  w.meta("l2_bytes", std::to_string(d.l2_bytes));
  w.meta("driver", std::to_string(d.driver));
  w.meta("cuda", std::to_string(d.runtime));
  w.meta("date", utc_now());
  w.meta("git_commit", V41SIM_GIT_COMMIT);
}

// Enough copies of a working set that rotating through them defeats L2.
int rotation_for(int64_t bytes, const Device& d) {
  const int64_t needed = 4LL * d.l2_bytes / std::max<int64_t>(bytes, 1) + 1;
  return static_cast<int>(std::min<int64_t>(needed, 64));
}

template <typename T>
std::vector<DeviceBuffer<T>> rotated(int copies, std::size_t count) {
  std::vector<DeviceBuffer<T>> buffers;
  buffers.reserve(static_cast<std::size_t>(copies));
  for (int i = 0; i < copies; ++i) buffers.emplace_back(count);
  return buffers;
}

template <typename T>
T* pick(const std::vector<DeviceBuffer<T>>& buffers, int run) {
  return buffers[static_cast<std::size_t>(run) % buffers.size()].get();
}

bool passes(const char* what, const CheckResult& check) {
  if (check.ok) return true;
  std::fprintf(stderr, "%s: %s; not timed\n", what, check.detail.c_str());
  return false;
}

// ---- ceilings ------------------------------------------------------------

// Runs first; writes the metadata and the three ceiling rows, and the
// ceilings as metadata lines the parent hands to every later group.
int measure_ceilings(int fd) {
  const Device d = query_device();
  RowWriter w(fd, {});
  write_metadata(w, d);
  Ceilings c;

  const int64_t bytes = 1LL << 30;  // HBM: a float4 streaming copy of 1 GiB
  const DeviceBuffer<float4> in(static_cast<std::size_t>(bytes / 16)),
      out(static_cast<std::size_t>(bytes / 16));
  fill_uniform(reinterpret_cast<float*>(in.get()), bytes / 4, 1);
  const TimingStats copy =
      time_kernel([&](int) { launch_copy(in.get(), out.get(), bytes / 16, d.sms); }, kWarmup, kRuns);
  c.copy_gbps = 2.0 * static_cast<double>(bytes) / copy.median_us / 1e3;

  const DeviceBuffer<float> sink(1);
  const TimingStats fma = time_kernel([&](int) { launch_fma_chains(sink.get(), d.sms); }, kWarmup, kRuns);
  c.fp32_fma_tflops = fma_chain_flops(d.sms) / fma.median_us / 1e6;

  const int64_t n = 8192;  // dense FP8 GEMM on cuBLASLt, the tensor-core ceiling
  const DeviceBuffer<uint8_t> a(static_cast<std::size_t>(n * n)), b(static_cast<std::size_t>(n * n));
  const DeviceBuffer<float> dst(static_cast<std::size_t>(n * n)), scales(std::vector<float>{1.0f, 1.0f});
  fill_e4m3(a.get(), n * n, 2);
  fill_e4m3(b.get(), n * n, 3);
  const GemmPlan plan(GemmOperands::kFp8E4M3, b.get(), a.get(), dst.get(), scales.get(), scales.get() + 1, n,
                      n, n);
  const TimingStats gemm = time_kernel([&](int) { plan.run(); }, kWarmup, kRuns);
  const double gemm_flops = 2.0 * static_cast<double>(n * n) * static_cast<double>(n);
  c.fp8_dense_tflops = gemm_flops / gemm.median_us / 1e6;
  const DeviceBuffer<uint16_t> a16(static_cast<std::size_t>(n * n)), b16(static_cast<std::size_t>(n * n));
  fill_bf16(a16.get(), n * n, 4);
  fill_bf16(b16.get(), n * n, 5);
  const GemmPlan plan16(GemmOperands::kBf16, b16.get(), a16.get(), dst.get(), nullptr, nullptr, n, n, n);
  const TimingStats gemm16 = time_kernel([&](int) { plan16.run(); }, kWarmup, kRuns);
  c.bf16_dense_tflops = gemm_flops / gemm16.median_us / 1e6;
  CUDA_CHECK(cudaGetLastError());

  char text[64];
  std::snprintf(text, sizeof text, "%.1f", c.copy_gbps);
  w.meta("copy_gbps", text);
  std::snprintf(text, sizeof text, "%.1f", c.fp8_dense_tflops);
  w.meta("fp8_dense_tflops", text);
  std::snprintf(text, sizeof text, "%.1f", c.bf16_dense_tflops);
  w.meta("bf16_dense_tflops", text);
  std::snprintf(text, sizeof text, "%.2f", c.fp32_fma_tflops);
  w.meta("fp32_fma_tflops", text);
  const RowWriter rows(fd, c);
  rows.row({"device_copy", "elementwise", "fp32", bytes / 4096, 4096, 1, 1, 0, 0, 2.0 * bytes, copy});
  rows.row({"fp32_fma_chains", "elementwise", "fp32", 1, 1, 1, 1, 0, fma_chain_flops(d.sms), 0, fma});
  rows.row(
      {"dense_fp8_gemm", "gemm", "fp8", n, n, n, 1, 0, gemm_flops, 3.0 * static_cast<double>(n * n), gemm});
  rows.row({"dense_bf16_gemm", "gemm", "bf16", n, n, n, 1, 0, gemm_flops, 4.0 * static_cast<double>(n * n),
            gemm16});
  std::printf(
      "%s: %d SMs; copy %.0f GB/s, FP32 FMA %.1f TFLOP/s, FP8 GEMM %.0f TFLOP/s, BF16 GEMM %.0f TFLOP/s\n",
      d.props.name, d.sms, c.copy_gbps, c.fp32_fma_tflops, c.fp8_dense_tflops, c.bf16_dense_tflops);
  return 0;
}

// ---- kernel groups ---------------------------------------------------------

int measure_mxfp4(const RowWriter& w, const Device& d, bool quick) {
  if (!passes("mxfp4 kv", check_mxfp4_kv())) return 1;
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{4096, 262144}
            : std::vector<int64_t>{1024, 4096, 16384, 65536, 262144, 1048576};
  for (const int64_t tokens : token_counts) {
    const int64_t in_bytes = tokens * kDim * static_cast<int64_t>(sizeof(float));
    const int64_t out_bytes = tokens * mxfp4_entry_bytes(kDim);
    const int copies = rotation_for(in_bytes + out_bytes, d);
    const auto kv = rotated<float>(copies, static_cast<std::size_t>(tokens * kDim));
    const auto cache = rotated<uint8_t>(copies, static_cast<std::size_t>(out_bytes));
    for (int i = 0; i < copies; ++i) fill_uniform(pick(kv, i), tokens * kDim, 10 + static_cast<uint64_t>(i));
    const TimingStats q = time_kernel(
        [&](int i) { launch_quantize_mxfp4_kv(pick(kv, i), pick(cache, i), tokens, kDim); }, kWarmup, kRuns);
    const TimingStats dq =
        time_kernel([&](int i) { launch_dequantize_mxfp4_kv(pick(cache, i), pick(kv, i), tokens, kDim); },
                    kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double bytes = static_cast<double>(in_bytes + out_bytes);
    const double values = static_cast<double>(tokens * kDim);
    w.row({"mxfp4_kv_quantize", "elementwise", "fp32", tokens, kDim, 1, 1, 0, values * 4.0, bytes, q});
    w.row({"mxfp4_kv_dequantize", "elementwise", "fp32", tokens, kDim, 1, 1, 0, values * 2.0, bytes, dq});
    std::printf("mxfp4 kv %8lld tokens: quantize %.1f us (%.0f%% of copy), dequantize %.1f us (%.0f%%)\n",
                static_cast<long long>(tokens), q.median_us,
                100.0 * bytes / q.median_us / 1e3 / w.ceilings().copy_gbps, dq.median_us,
                100.0 * bytes / dq.median_us / 1e3 / w.ceilings().copy_gbps);
  }
  return 0;
}

// Index keys and queries for `queries` queries over `positions` positions.
// Decode: each query is its own request with its own keys; prefill: the
// queries are one sequence's chunk and share its keys.
struct IndexerInputs {
  DeviceBuffer<uint8_t> keys;
  DeviceBuffer<float> q, w;
  IndexerInputs(int64_t key_sets, int64_t queries, int64_t positions, uint64_t seed)
      : keys(static_cast<std::size_t>(key_sets * positions * kIndexKeyBytes)),
        q(static_cast<std::size_t>(queries * kV41IndexHeads * kIndexDim)),
        w(static_cast<std::size_t>(queries * kV41IndexHeads)) {
    fill_index_keys(keys.get(), key_sets * positions, seed);
    fill_uniform(q.get(), queries * kV41IndexHeads * kIndexDim, seed + 1);
    fill_uniform(w.get(), queries * kV41IndexHeads, seed + 2);
  }
};

// The indexer's logits paths: tensor cores (what the simulator models; fitted)
// and the FP32-unit baseline (recorded, not fitted). Each is timed only if its
// check passed.
struct IndexerPath {
  const char* logits_name;
  const char* pool_logits_name;
  const char* math;
  void (*logits)(const float*, const float*, const uint8_t*, float*, int64_t, int64_t, int64_t, float*, bool);
  void (*pool_logits)(const float*, const float*, const uint8_t*, const int32_t*, float*, int64_t, int64_t,
                      int64_t, int64_t, bool);
};

std::vector<IndexerPath> indexer_paths() {
  const bool mma = passes("indexer (tensor cores)", check_indexer(IndexerMath::kTensorCores)) &&
                   passes("candidate pool (tensor cores)", check_candidate_pool(IndexerMath::kTensorCores));
  const bool fp32 = passes("indexer (fp32 baseline)", check_indexer(IndexerMath::kFp32Units)) &&
                    passes("candidate pool (fp32 baseline)", check_candidate_pool(IndexerMath::kFp32Units));
  std::vector<IndexerPath> paths;
  if (mma) {
    paths.push_back({"indexer_logits", "indexer_logits_in_pool", "bf16", launch_indexer_logits_mma,
                     launch_indexer_pool_logits_mma});
  }
  if (fp32) {
    paths.push_back({"indexer_logits_fp32_baseline", "indexer_logits_in_pool_fp32_baseline", "fp32",
                     launch_indexer_logits, launch_indexer_pool_logits});
  }
  return paths;
}

// Layer 20 in decode: logits over every position (and, past 16,384, the
// block maxima that build the pool), its own top-512, the pool's top-2048
// blocks; then a Reindex layer: logits of the 16,384 pooled positions and
// its top-512 there. Rows carry the simulator's kernel names. The top-k
// passes run on the first path's logits (tensor cores where they passed).
int measure_indexer_decode(const RowWriter& w, bool quick) {
  const std::vector<IndexerPath> paths = indexer_paths();
  if (paths.empty()) return 1;
  const int64_t heads = kV41IndexHeads, dims = heads * kIndexDim;
  const int64_t pool_blocks = kV41PoolTopBlocks, pool_slots = pool_blocks * kV41PoolBlockSize;
  const std::vector<int64_t> batches = quick ? std::vector<int64_t>{8} : std::vector<int64_t>{1, 8, 32, 64};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{65536} : std::vector<int64_t>{4096, 16384, 65536, 262144, 1048576};
  for (const int64_t batch : batches) {
    for (const int64_t positions : contexts) {
      const IndexerInputs in(batch, batch, positions, 7 + static_cast<uint64_t>(positions));
      const int64_t blocks = (positions + kV41PoolBlockSize - 1) / kV41PoolBlockSize;
      const bool builds_pool = blocks > pool_blocks;
      const DeviceBuffer<float> logits(static_cast<std::size_t>(batch * positions));
      const DeviceBuffer<float> block_max(static_cast<std::size_t>(batch * blocks));
      const DeviceBuffer<int32_t> selected(static_cast<std::size_t>(batch * kV41TopK));
      const double pairs = static_cast<double>(batch * positions);
      const double block_bytes = builds_pool ? static_cast<double>(batch * blocks) * 4.0 : 0.0;
      for (auto it = paths.rbegin(); it != paths.rend(); ++it) {  // the first path's logits stay for top-k
        const TimingStats t = time_kernel(
            [&](int) {
              it->logits(in.q.get(), in.w.get(), in.keys.get(), logits.get(), batch, heads, positions,
                         builds_pool ? block_max.get() : nullptr, true);
            },
            kWarmup, kRuns);
        w.row({it->logits_name, "indexer", it->math, batch, positions, dims, 1, positions, 2.0 * dims * pairs,
               pairs * kIndexKeyBytes + static_cast<double>(batch * dims) + pairs * 4.0 + block_bytes, t});
        std::printf("%s decode batch %lld, %lld positions: %.1f us, %.1f TFLOP/s\n", it->logits_name,
                    static_cast<long long>(batch), static_cast<long long>(positions), t.median_us,
                    2.0 * dims * pairs / t.median_us / 1e6);
      }
      const TimingStats s =
          time_kernel([&](int) { launch_topk(logits.get(), selected.get(), batch, positions, kV41TopK); },
                      kWarmup, kRuns);
      w.row({"topk_select", "topk", "fp32", batch, positions, 1, 1, positions, 2.0 * pairs,
             pairs * 4.0 + static_cast<double>(batch * kV41TopK) * 4.0, s});
      std::printf("  top-512 over %lld positions: %.1f us\n", static_cast<long long>(positions), s.median_us);
      if (builds_pool) {
        const DeviceBuffer<int32_t> pool(static_cast<std::size_t>(batch * pool_blocks));
        const TimingStats b =
            time_kernel([&](int) { launch_topk(block_max.get(), pool.get(), batch, blocks, pool_blocks); },
                        kWarmup, kRuns);
        w.row({"candidate_pool_block_max_topk", "topk", "fp32", batch, blocks, 1, 1, positions,
               2.0 * static_cast<double>(batch * blocks),
               block_bytes + static_cast<double>(batch * pool_blocks) * 4.0, b});
        const DeviceBuffer<float> pooled(static_cast<std::size_t>(batch * pool_slots));
        const double pooled_pairs = static_cast<double>(batch * pool_slots);
        for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
          const TimingStats r = time_kernel(
              [&](int) {
                it->pool_logits(in.q.get(), in.w.get(), in.keys.get(), pool.get(), pooled.get(), batch, heads,
                                positions, pool_blocks, true);
              },
              kWarmup, kRuns);
          w.row({it->pool_logits_name, "indexer", it->math, batch, pool_slots, dims, 1, positions,
                 2.0 * dims * pooled_pairs,
                 pooled_pairs * kIndexKeyBytes + static_cast<double>(batch * dims) + pooled_pairs * 4.0, r});
          std::printf("  %s: %.1f us\n", it->pool_logits_name, r.median_us);
        }
        const TimingStats rs = time_kernel(
            [&](int) { launch_topk(pooled.get(), selected.get(), batch, pool_slots, kV41TopK, pool.get()); },
            kWarmup, kRuns);
        w.row({"topk_select", "topk", "fp32", batch, pool_slots, 1, 1, positions, 2.0 * pooled_pairs,
               pooled_pairs * 4.0 + static_cast<double>(batch * kV41TopK) * 4.0, rs});
        std::printf("  pool top-2048 blocks %.1f us; reindex top-512 %.1f us\n", b.median_us, rs.median_us);
      }
      CUDA_CHECK(cudaGetLastError());
    }
  }
  return 0;
}

// Prefill: a chunk of one sequence's queries against its keys. The kernel
// model counts keys as read once per 64-query tile (DeepGEMM's mqa_logits);
// the tensor-core path reads each key tile once per 4 queries and the FP32
// baseline once per query (the rest from L2); the rows say what the model
// counts, so the fit shows how far these kernels are from that.
int measure_indexer_prefill(const RowWriter& w, bool quick) {
  const std::vector<IndexerPath> paths = indexer_paths();
  if (paths.empty()) return 1;
  const int64_t heads = kV41IndexHeads, dims = heads * kIndexDim;
  const std::vector<int64_t> chunks = quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 512};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{16384} : std::vector<int64_t>{4096, 16384, 65536};
  for (const int64_t queries : chunks) {
    for (const int64_t positions : contexts) {
      const IndexerInputs in(1, queries, positions, 99 + static_cast<uint64_t>(positions));
      const DeviceBuffer<float> logits(static_cast<std::size_t>(queries * positions));
      const double pairs = static_cast<double>(queries * positions);
      for (const IndexerPath& path : paths) {
        const TimingStats t = time_kernel(
            [&](int) {
              path.logits(in.q.get(), in.w.get(), in.keys.get(), logits.get(), queries, heads, positions,
                          nullptr, false);
            },
            kWarmup, kRuns);
        w.row({path.logits_name, "indexer", path.math, queries, positions, dims, 1, positions,
               2.0 * dims * pairs, pairs / 64.0 * kIndexKeyBytes + static_cast<double>(queries * dims), t});
        std::printf("%s prefill %lld queries, %lld positions: %.1f us, %.1f TFLOP/s\n", path.logits_name,
                    static_cast<long long>(queries), static_cast<long long>(positions), t.median_us,
                    2.0 * dims * pairs / t.median_us / 1e6);
      }
      CUDA_CHECK(cudaGetLastError());
    }
  }
  return 0;
}

// Decode batches over contexts of 16K to 1M compressed positions: each
// request gathers its top-512 entries (spread over its own context) and its
// 128-token window. Index sets and windows rotate, so no run finds the
// previous run's entries in L2. The main KV is at most ~16 GB: past that,
// requests' contexts overlap (still far beyond L2).
int measure_sparse_decode(const RowWriter& w, const Device& dev, bool quick) {
  const bool baseline_ok = passes("sparse decode (fp32 baseline)", check_sparse_decode());
  const bool mma_ok = passes("sparse decode (tensor cores)", check_sparse_decode_mma());
  if (!baseline_ok && !mma_ok) return 1;
  const int64_t max_entries = std::min<int64_t>(
      (16LL << 30) / kMainEntryBytes, static_cast<int64_t>(dev.props.totalGlobalMem / 4 / kMainEntryBytes));
  const std::vector<int64_t> batches =
      quick ? std::vector<int64_t>{32} : std::vector<int64_t>{1, 8, 32, 64, 128};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{262144} : std::vector<int64_t>{16384, 65536, 262144, 1048576};
  // One pool of real MXFP4 entries, quantized on the device chunk by chunk.
  const DeviceBuffer<uint8_t> main_kv(static_cast<std::size_t>(max_entries * kMainEntryBytes));
  {
    const int64_t chunk = 65536;
    const DeviceBuffer<float> latent(static_cast<std::size_t>(chunk * kDim));
    for (int64_t first = 0; first < max_entries; first += chunk) {
      const int64_t count = std::min(chunk, max_entries - first);
      fill_uniform(latent.get(), count * kDim, 1000 + static_cast<uint64_t>(first));
      launch_quantize_mxfp4_kv(latent.get(), main_kv.get() + first * kMainEntryBytes, count, kDim);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  for (const int64_t batch : batches) {
    // Queries, windows and sink from the reference's generator; its own main KV is unused (one entry).
    const SparseDecodeInputs host = make_sparse_decode_inputs({batch, kV41QueryHeads, kV41TopK, 1}, 41);
    const DeviceBuffer<float> q(host.q), sink(host.sink), out(host.q.size());
    const DeviceBuffer<int32_t> window_len(host.window_len);
    const int64_t gathered = batch * (kV41TopK * kMainEntryBytes + kWindowTokens * kWindowEntryBytes);
    const int copies = rotation_for(gathered, dev);
    std::vector<DeviceBuffer<uint8_t>> windows;
    for (int i = 0; i < copies; ++i) windows.emplace_back(host.window);
    for (const int64_t context : contexts) {
      if (context > max_entries) continue;
      const SparseDecodeShape shape{batch, kV41QueryHeads, kV41TopK, max_entries};
      const int splits = sparse_decode_splits(shape, dev.sms);
      const DeviceBuffer<float> workspace(
          static_cast<std::size_t>(sparse_decode_workspace_floats(shape, splits)));
      std::mt19937 rng(static_cast<uint32_t>(context + batch));
      std::vector<DeviceBuffer<int32_t>> index_sets;
      for (int i = 0; i < copies; ++i) {
        std::vector<int32_t> topk(static_cast<std::size_t>(batch * kV41TopK));
        for (int64_t b = 0; b < batch; ++b) {
          const int64_t base = (b * context) % (max_entries - context + 1);
          std::uniform_int_distribution<int64_t> pick_entry(base, base + context - 1);
          for (int64_t j = 0; j < kV41TopK; ++j)
            topk[static_cast<std::size_t>(b * kV41TopK + j)] = static_cast<int32_t>(pick_entry(rng));
        }
        index_sets.emplace_back(topk);
      }
      const double keys = static_cast<double>(kV41TopK + kWindowTokens);
      const double flops = 2.0 * static_cast<double>(batch * kV41QueryHeads) * keys * 2.0 * kLatentDim;
      const double bytes =
          static_cast<double>(gathered) + 2.0 * static_cast<double>(host.q.size() * sizeof(float));
      struct Variant {
        bool ok;
        const char* name;
        const char* math;
        void (*launch)(const SparseDecodeDevice&);
      };
      for (const Variant& v :
           {Variant{mma_ok, "sparse_attention_decode", "bf16", launch_sparse_decode_mma},
            Variant{baseline_ok, "sparse_attention_decode_fp32_baseline", "fp32", launch_sparse_decode}}) {
        if (!v.ok) continue;
        const TimingStats t = time_kernel(
            [&](int run) {
              v.launch({shape, q.get(), main_kv.get(), pick(index_sets, run), pick(windows, run),
                        window_len.get(), sink.get(), out.get(), workspace.get(), splits});
            },
            kWarmup, kRuns);
        CUDA_CHECK(cudaGetLastError());
        w.row({v.name, "attention", v.math, batch * kV41QueryHeads, static_cast<int64_t>(keys),
               2 * kLatentDim, 1, context, flops, bytes, t});
        std::printf("%s batch %lld, context %lld: %.1f us, %.0f GB/s (%.0f%% of copy), %.1f TFLOP/s\n",
                    v.name, static_cast<long long>(batch), static_cast<long long>(context), t.median_us,
                    bytes / t.median_us / 1e3, 100.0 * bytes / t.median_us / 1e3 / w.ceilings().copy_gbps,
                    flops / t.median_us / 1e6);
      }
    }
  }
  return 0;
}

// Ratio-2 compressor: pool pairs of tokens and write MXFP4 entries.
int measure_compress(const RowWriter& w, const Device& d, bool quick) {
  if (!passes("compress", check_compress())) return 1;
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{65536} : std::vector<int64_t>{4096, 65536, 524288};
  for (const int64_t tokens : token_counts) {
    const int64_t in_bytes = 2 * tokens * kDim * static_cast<int64_t>(sizeof(float));
    const int64_t out_bytes = tokens / 2 * mxfp4_entry_bytes(kDim);
    const int copies = rotation_for(in_bytes + out_bytes, d);
    const auto kv = rotated<float>(copies, static_cast<std::size_t>(tokens * kDim));
    const auto score = rotated<float>(copies, static_cast<std::size_t>(tokens * kDim));
    const auto entries = rotated<uint8_t>(copies, static_cast<std::size_t>(out_bytes));
    const DeviceBuffer<float> ape(static_cast<std::size_t>(2 * kDim));
    for (int i = 0; i < copies; ++i) {
      fill_uniform(pick(kv, i), tokens * kDim, 20 + static_cast<uint64_t>(i));
      fill_uniform(pick(score, i), tokens * kDim, 40 + static_cast<uint64_t>(i));
    }
    fill_uniform(ape.get(), 2 * kDim, 60);
    const TimingStats t = time_kernel(
        [&](int i) {
          launch_compress_ratio2(pick(kv, i), pick(score, i), ape.get(), pick(entries, i), tokens);
        },
        kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double bytes = static_cast<double>(in_bytes + out_bytes);
    w.row({"compress_ratio2", "elementwise", "fp32", tokens / 2, kDim, 1, 1, 0,
           static_cast<double>(tokens * kDim) * 8.0, bytes, t});
    std::printf("compress ratio 2, %lld tokens: %.1f us (%.0f%% of copy)\n", static_cast<long long>(tokens),
                t.median_us, 100.0 * bytes / t.median_us / 1e3 / w.ceilings().copy_gbps);
  }
  return 0;
}

// Engram rows gathered from mapped pinned host memory (the host link's rate for 264-byte rows).
int measure_engram(const RowWriter& w, bool quick) {
  if (!passes("engram gather", check_engram())) return 1;
  const int64_t table_rows = quick ? (1LL << 20) : (8LL << 20);  // 264 MB or 2.1 GB of pinned host memory
  uint8_t* pinned = nullptr;
  CUDA_CHECK(cudaHostAlloc(&pinned, table_rows * kEngramRowBytes, cudaHostAllocMapped));
  std::memset(pinned, 0x5a, table_rows * kEngramRowBytes);
  uint8_t* mapped = nullptr;
  CUDA_CHECK(cudaHostGetDevicePointer(&mapped, pinned, 0));
  for (const int64_t count : {4096LL, 65536LL, 1048576LL}) {
    std::vector<int64_t> rows(static_cast<std::size_t>(count));
    std::mt19937_64 rng(61);
    for (auto& r : rows) r = static_cast<int64_t>(rng() % static_cast<uint64_t>(table_rows));
    const DeviceBuffer<int64_t> d_rows(rows);
    const DeviceBuffer<uint8_t> d_out(static_cast<std::size_t>(count * kEngramRowBytes));
    const TimingStats t =
        time_kernel([&](int) { launch_engram_gather(mapped, d_rows.get(), d_out.get(), count); }, 2, 10);
    CUDA_CHECK(cudaGetLastError());
    const double bytes = static_cast<double>(count * kEngramRowBytes);
    w.row({"engram_host_gather", "host_copy", "fp32", count, kEngramRowBytes, 1, 1, 0, 0, bytes, t});
    std::printf("engram gather %lld rows: %.1f us, %.1f GB/s over the host link\n",
                static_cast<long long>(count), t.median_us, bytes / t.median_us / 1e3);
  }
  CUDA_CHECK(cudaFreeHost(pinned));
  return 0;
}

// mHC: the three-kernel form against the single pass, same tokens, so the
// traffic halving is measured rather than assumed.
int measure_mhc(const RowWriter& w, bool quick) {
  if (!passes("mhc", check_mhc())) return 1;
  constexpr int64_t kHidden = kV41Hidden;
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{4096} : std::vector<int64_t>{1024, 8192, 32768};
  for (const int64_t tokens : token_counts) {
    const auto streams = static_cast<std::size_t>(tokens * kStreams * kHidden);
    const auto hidden = static_cast<std::size_t>(tokens * kHidden);
    const auto coefficients = static_cast<std::size_t>(tokens * kCoefficients);
    const DeviceBuffer<float> X(streams), Xo(streams), y(hidden), x_in(hidden), c(coefficients),
        c_next(coefficients);
    fill_uniform(X.get(), static_cast<int64_t>(streams), 70);
    fill_uniform(y.get(), static_cast<int64_t>(hidden), 71);
    launch_mhc_coefficients(X.get(), c.get(), tokens, kHidden);  // coefficients as the model makes them
    const TimingStats three = time_kernel(
        [&](int) {
          launch_mhc_coefficients(X.get(), c_next.get(), tokens, kHidden);
          launch_mhc_pre_mix(X.get(), c_next.get(), x_in.get(), tokens, kHidden);
          launch_mhc_post_merge(X.get(), y.get(), c.get(), Xo.get(), tokens, kHidden);
        },
        kWarmup, kRuns);
    const TimingStats fused = time_kernel(
        [&](int) {
          launch_mhc_fused(X.get(), y.get(), c.get(), Xo.get(), x_in.get(), c_next.get(), tokens, kHidden);
        },
        kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    const double h = static_cast<double>(hidden) * sizeof(float);
    const double three_bytes = (4.0 * kStreams + 2.0) * h;  // as the simulator counts the three-kernel form
    const double fused_bytes = (2.0 * kStreams + 2.0) * h;
    w.row({"mhc_three_kernel", "elementwise", "fp32", tokens, kStreams * kHidden, 1, 1, 0, 0, three_bytes,
           three});
    w.row({"mhc_single_pass", "elementwise", "fp32", tokens, kStreams * kHidden, 1, 1, 0, 0, fused_bytes,
           fused});
    std::printf(
        "mhc %lld tokens: three kernels %.1f us, single pass %.1f us (%.2fx; %.0f%% / %.0f%% of copy)\n",
        static_cast<long long>(tokens), three.median_us, fused.median_us, three.median_us / fused.median_us,
        100.0 * three_bytes / three.median_us / 1e3 / w.ceilings().copy_gbps,
        100.0 * fused_bytes / fused.median_us / 1e3 / w.ceilings().copy_gbps);
  }
  return 0;
}

// Expert GEMMs (FP8 activations x MXFP4 weights widened to FP8 at load, on
// cuBLASLt) at V4.1's shapes: a rank's experts as one batched launch with
// uniform routing, as the simulator's grouped GEMM counts them (m rows per
// expert, batch = experts). Decode: the 48 local experts of EP 8 with a few
// rows each (padded to cuBLASLt's 16); prefill: fewer, fuller groups.
int measure_gemm(const RowWriter& w, bool quick) {
  if (!passes("expert gemm", check_expert_gemm())) return 1;
  struct Group {
    int64_t experts, rows;
  };
  const std::vector<Group> groups =
      quick ? std::vector<Group>{{48, 16}, {8, 512}}
            : std::vector<Group>{{48, 16}, {48, 32}, {48, 64}, {48, 128}, {8, 512}, {8, 2048}, {1, 8192}};
  const DeviceBuffer<float> scales(std::vector<float>{1.0f, 1.0f});
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  for (const Group& g : groups) {
    for (const Shape& s : {Shape{"expert_gate_up", 2 * kV41ExpertWidth, kV41Hidden},
                           Shape{"expert_down", kV41Hidden, kV41ExpertWidth}}) {
      const int64_t e = g.experts, m = g.rows;
      const DeviceBuffer<uint8_t> w8(static_cast<std::size_t>(e * s.n * s.k)),
          a(static_cast<std::size_t>(e * m * s.k));
      const DeviceBuffer<float> d(static_cast<std::size_t>(e * m * s.n));
      fill_e4m3(w8.get(), e * s.n * s.k, 80);
      fill_e4m3(a.get(), e * m * s.k, 81);
      const GemmPlan plan(GemmOperands::kFp8E4M3, w8.get(), a.get(), d.get(), scales.get(), scales.get() + 1,
                          m, s.n, s.k, e);
      const TimingStats t = time_kernel([&](int) { plan.run(); }, kWarmup, kRuns);
      CUDA_CHECK(cudaGetLastError());
      const double flops =
          2.0 * static_cast<double>(e * m) * static_cast<double>(s.n) * static_cast<double>(s.k);
      const double bytes =
          static_cast<double>(e * (s.n * s.k + m * s.k)) + 4.0 * static_cast<double>(e * m * s.n);
      w.row({s.name, "grouped_gemm", "fp8", m, s.n, s.k, e, 0, flops, bytes, t});
      std::printf(
          "%s %lld experts x %lld rows (%lldx%lld): %.1f us, %.0f TFLOP/s (%.0f%% of dense FP8), %.0f GB/s\n",
          s.name, static_cast<long long>(e), static_cast<long long>(m), static_cast<long long>(s.n),
          static_cast<long long>(s.k), t.median_us, flops / t.median_us / 1e6,
          100.0 * flops / t.median_us / 1e6 / w.ceilings().fp8_dense_tflops, bytes / t.median_us / 1e3);
    }
  }
  return 0;
}

// The dense FP8 projections of a V4.1 layer (the simulator's gemm class, by
// its kernel names), from decode batches to prefill chunks, on cuBLASLt.
// The grouped output projection runs its 8 groups as one strided batch.
int measure_dense_gemm(const RowWriter& w, bool quick) {
  if (!passes("expert gemm (the same cuBLASLt FP8 path)", check_expert_gemm()) ||
      !passes("bf16 gemm", check_bf16_gemm())) {
    return 1;
  }
  struct Shape {
    const char* name;
    int64_t n, k, groups;
    GemmOperands operands;
    int64_t max_tokens;  // the LM head sees a few tokens per sequence, not a prefill chunk
  };
  constexpr auto kFp8 = GemmOperands::kFp8E4M3;
  constexpr auto kBf16 = GemmOperands::kBf16;
  const int64_t heads_out = kV41QueryHeads * kV41HeadDim;
  const std::vector<Shape> shapes{
      {"q_down_proj", kV41QLoraRank, kV41Hidden, 1, kFp8, INT64_MAX},
      {"q_up_proj", heads_out, kV41QLoraRank, 1, kFp8, INT64_MAX},
      {"window_kv_proj", kV41HeadDim, kV41Hidden, 1, kFp8, INT64_MAX},
      {"kv_compress_proj", 2 * kV41HeadDim, kV41Hidden, 1, kFp8, INT64_MAX},  // ratio 2: KV and gate
      {"index_q_proj", kV41IndexHeads * kV41IndexHeadDim, kV41QLoraRank, 1, kFp8, INT64_MAX},
      {"out_group_proj", kV41OutputLoraRank, heads_out / kV41OutputGroups, kV41OutputGroups, kFp8, INT64_MAX},
      {"out_proj", kV41Hidden, kV41OutputGroups * kV41OutputLoraRank, 1, kFp8, INT64_MAX},
      {"shared_gate_up", 2 * kV41ExpertWidth, kV41Hidden, 1, kFp8, INT64_MAX},
      {"shared_down", kV41Hidden, kV41ExpertWidth, 1, kFp8, INT64_MAX},
      {"router", kV41RoutedExperts, kV41Hidden, 1, kBf16, INT64_MAX},
      {"index_head_weights", kV41IndexHeads, kV41Hidden, 1, kBf16, INT64_MAX},
      {"lm_head", kV41Vocab, kV41Hidden, 1, kBf16, 512},
  };
  const std::vector<int64_t> tokens =
      quick ? std::vector<int64_t>{32, 2048} : std::vector<int64_t>{32, 128, 512, 2048, 8192};
  const DeviceBuffer<float> scales(std::vector<float>{1.0f, 1.0f});
  for (const Shape& s : shapes) {
    const bool fp8 = s.operands == kFp8;
    const int64_t element = fp8 ? 1 : 2;
    for (const int64_t m : tokens) {
      if (m > s.max_tokens) continue;
      const int64_t g = s.groups;
      const DeviceBuffer<uint8_t> weights(static_cast<std::size_t>(g * s.n * s.k * element)),
          a(static_cast<std::size_t>(g * m * s.k * element));
      const DeviceBuffer<float> d(static_cast<std::size_t>(g * m * s.n));
      if (fp8) {
        fill_e4m3(weights.get(), g * s.n * s.k, 82);
        fill_e4m3(a.get(), g * m * s.k, 83);
      } else {
        fill_bf16(reinterpret_cast<uint16_t*>(weights.get()), g * s.n * s.k, 84);
        fill_bf16(reinterpret_cast<uint16_t*>(a.get()), g * m * s.k, 85);
      }
      const GemmPlan plan(s.operands, weights.get(), a.get(), d.get(), fp8 ? scales.get() : nullptr,
                          fp8 ? scales.get() + 1 : nullptr, m, s.n, s.k, g);
      const TimingStats t = time_kernel([&](int) { plan.run(); }, kWarmup, kRuns);
      CUDA_CHECK(cudaGetLastError());
      const double flops =
          2.0 * static_cast<double>(g * m) * static_cast<double>(s.n) * static_cast<double>(s.k);
      const double bytes =
          static_cast<double>(g * (s.n * s.k + m * s.k) * element) + 4.0 * static_cast<double>(g * m * s.n);
      const char* math = fp8 ? "fp8" : "bf16";
      w.row({s.name, "gemm", math, m, s.n, s.k, g, 0, flops, bytes, t});
      std::printf("%s %lldx%lldx%lld%s (%s): %.1f us, %.0f TFLOP/s (%.0f%% of dense %s), %.0f GB/s\n", s.name,
                  static_cast<long long>(m), static_cast<long long>(s.n), static_cast<long long>(s.k),
                  g > 1 ? (" x" + std::to_string(g)).c_str() : "", math, t.median_us,
                  flops / t.median_us / 1e6, 100.0 * flops / t.median_us / 1e6 / w.ceilings().for_math(math),
                  math, bytes / t.median_us / 1e3);
    }
  }
  return 0;
}

// ---- driver ----------------------------------------------------------------

struct Group {
  const char* name;
  int (*run)(const RowWriter&, const Device&, bool quick);
};

const std::vector<Group>& groups() {
  static const std::vector<Group> all{
      {"mxfp4_kv", [](const RowWriter& w, const Device& d, bool q) { return measure_mxfp4(w, d, q); }},
      {"indexer_decode",
       [](const RowWriter& w, const Device&, bool q) { return measure_indexer_decode(w, q); }},
      {"indexer_prefill",
       [](const RowWriter& w, const Device&, bool q) { return measure_indexer_prefill(w, q); }},
      {"sparse_decode",
       [](const RowWriter& w, const Device& d, bool q) { return measure_sparse_decode(w, d, q); }},
      {"compress", [](const RowWriter& w, const Device& d, bool q) { return measure_compress(w, d, q); }},
      {"engram", [](const RowWriter& w, const Device&, bool q) { return measure_engram(w, q); }},
      {"mhc", [](const RowWriter& w, const Device&, bool q) { return measure_mhc(w, q); }},
      {"expert_gemm", [](const RowWriter& w, const Device&, bool q) { return measure_gemm(w, q); }},
      {"dense_gemm", [](const RowWriter& w, const Device&, bool q) { return measure_dense_gemm(w, q); }},
  };
  return all;
}

double metadata_number(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string prefix = "# " + key + ": ";
    if (line.rfind(prefix, 0) == 0) return std::stod(line.substr(prefix.size()));
  }
  return 0;
}

struct Options {
  std::string out_dir;
  bool checks_only = false;
  bool quick = false;
  std::vector<std::string> only;
  unsigned group_timeout_s = 300;
};

int usage() {
  std::fprintf(stderr,
               "usage: v41sim_measure --out DIR [--quick] [--only GROUP[,GROUP...]] [--group-timeout S]\n"
               "       v41sim_measure --checks    (every kernel against its CPU reference; no timing)\n"
               "groups:");
  for (const Group& g : groups()) std::fprintf(stderr, " %s", g.name);
  std::fprintf(stderr, "\n");
  return 2;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      o.out_dir = argv[++i];
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--checks") {
      o.checks_only = true;
    } else if (arg == "--only" && i + 1 < argc) {
      std::stringstream names(argv[++i]);
      for (std::string name; std::getline(names, name, ',');) {
        const bool known =
            std::any_of(groups().begin(), groups().end(), [&](const Group& g) { return name == g.name; });
        if (!known) {
          std::fprintf(stderr, "--only: unknown group '%s'\n", name.c_str());
          return false;
        }
        o.only.push_back(name);
      }
    } else if (arg == "--group-timeout" && i + 1 < argc) {
      const int seconds = std::atoi(argv[++i]);
      if (seconds <= 0) {
        std::fprintf(stderr, "--group-timeout: expected a positive number of seconds\n");
        return false;
      }
      o.group_timeout_s = static_cast<unsigned>(seconds);
    } else {
      return false;
    }
  }
  return o.checks_only || !o.out_dir.empty();
}

// Every correctness check, each in its own process: PASS or FAIL with what differed.
int run_checks(const Options& o) {
  int failed = 0;
  for (const NamedCheck& check : all_checks()) {
    const GroupOutcome outcome = run_isolated(
        [&](int fd) {
          std::string why;
          if (!cuda_device_available(&why)) {
            std::fprintf(stderr, "no usable CUDA device: %s\n", why.c_str());
            return 1;
          }
          const CheckResult r = check.run();
          const std::string line = r.ok ? "" : r.detail;
          if (::write(fd, line.data(), line.size()) < 0) return 1;
          return r.ok ? 0 : 1;
        },
        o.group_timeout_s);
    const bool ok = outcome.ok;
    failed += ok ? 0 : 1;
    std::printf("%-28s %s%s%s\n", check.name, ok ? "PASS" : "FAIL", ok ? "" : ": ",
                ok ? "" : (outcome.text.empty() ? outcome.why : outcome.text).c_str());
  }
  std::printf("%d of %zu checks failed\n", failed, all_checks().size());
  return failed == 0 ? 0 : 1;
}

int run(const Options& o) {
  const GroupOutcome ceilings = run_isolated(
      [](int fd) {
        std::string why;
        if (!cuda_device_available(&why)) {
          std::fprintf(stderr, "no usable CUDA device: %s\n", why.c_str());
          return 1;
        }
        return measure_ceilings(fd);
      },
      o.group_timeout_s);
  if (!ceilings.ok) {
    std::fprintf(stderr, "v41sim_measure: measuring the device's ceilings failed (%s); nothing written\n",
                 ceilings.why.c_str());
    return 1;
  }
  Ceilings c;
  c.copy_gbps = metadata_number(ceilings.text, "copy_gbps");
  c.fp8_dense_tflops = metadata_number(ceilings.text, "fp8_dense_tflops");
  c.bf16_dense_tflops = metadata_number(ceilings.text, "bf16_dense_tflops");
  c.fp32_fma_tflops = metadata_number(ceilings.text, "fp32_fma_tflops");
  std::string metadata, rows, failed;
  auto split = [&](const std::string& text) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);)
      (line.rfind('#', 0) == 0 ? metadata : rows) += line + "\n";
  };
  split(ceilings.text);
  for (const Group& g : groups()) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), g.name) == o.only.end()) continue;
    std::printf("== %s\n", g.name);
    const GroupOutcome outcome = run_isolated(
        [&](int fd) { return g.run(RowWriter(fd, c), query_device(), o.quick); }, o.group_timeout_s);
    split(outcome.text);  // rows finished before a failure are kept
    if (!outcome.ok) {
      std::fprintf(stderr, "group %s failed: %s\n", g.name, outcome.why.c_str());
      failed += std::string(failed.empty() ? "" : "; ") + g.name + " (" + outcome.why + ")";
    }
  }
  std::filesystem::create_directories(o.out_dir);
  std::ofstream out(std::filesystem::path(o.out_dir) / "kernels.csv");
  out << metadata << "# failed_groups: " << (failed.empty() ? "none" : failed) << "\n"
      << kCsvHeader << "\n"
      << rows;
  std::printf("wrote %s%s\n", (std::filesystem::path(o.out_dir) / "kernels.csv").c_str(),
              failed.empty() ? "" : (" without the failed groups: " + failed).c_str());
  return failed.empty() ? 0 : 1;
}

}  // namespace
}  // namespace v41sim::kernels

int main(int argc, char** argv) {
  v41sim::kernels::Options options;
  if (!v41sim::kernels::parse(argc, argv, options)) return v41sim::kernels::usage();
  return options.checks_only ? v41sim::kernels::run_checks(options) : v41sim::kernels::run(options);
}

// V4.1 sparse attention decode over batches and contexts, on tensor cores
// (BF16 mma.sync, and BF16 wgmma where the device has it and its check
// passed) and on the FP32 baseline.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention/sparse_decode_cuda.h"
#include "kernels/checks/device_checks.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_timer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/harness/device_fill.h"
#include "kernels/harness/dispatched_names.h"
#include "kernels/harness/measure_groups.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"

namespace v41sim::kernels {

namespace {

// One pool of real MXFP4 entries, quantized on the device chunk by chunk.
DeviceBuffer<uint8_t> quantized_main_kv(int64_t entries) {
  DeviceBuffer<uint8_t> main_kv(static_cast<std::size_t>(entries * kMainEntryBytes));
  const int64_t chunk = 65536;
  const DeviceBuffer<uint16_t> latent(static_cast<std::size_t>(chunk * kDim));
  for (int64_t first = 0; first < entries; first += chunk) {
    const int64_t count = std::min(chunk, entries - first);
    fill_bf16(latent.get(), count * kDim, 1000 + static_cast<uint64_t>(first));
    launch_quantize_mxfp4_kv(latent.get(), main_kv.get() + first * kMainEntryBytes, count, kDim);
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return main_kv;
}

// `copies` top-512 index sets for a batch: each request's entries spread
// over its own `context` of the pool (requests' contexts overlap past the
// pool's end), a fresh set for each rotation.
std::vector<DeviceBuffer<int32_t>> rotating_index_sets(int64_t batch, int64_t context, int64_t pool_entries,
                                                       int copies) {
  std::mt19937 rng(static_cast<uint32_t>(context + batch));
  std::vector<DeviceBuffer<int32_t>> index_sets;
  for (int i = 0; i < copies; ++i) {
    std::vector<int32_t> topk(static_cast<std::size_t>(batch * kV41TopK));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t base = (b * context) % (pool_entries - context + 1);
      std::uniform_int_distribution<int64_t> pick_entry(base, base + context - 1);
      for (int64_t j = 0; j < kV41TopK; ++j)
        topk[static_cast<std::size_t>(b * kV41TopK + j)] = static_cast<int32_t>(pick_entry(rng));
    }
    index_sets.emplace_back(topk);
  }
  return index_sets;
}

// The paths whose check passed: each timed, named as time_paths names them
// (the faster tensor-core path carries the simulator's name).
struct SparseDecodePaths {
  bool mma, wgmma, baseline;
};
std::vector<TimedPathRow> time_sparse_decode_paths(const SparseDecodePaths& ok,
                                                   const std::function<SparseDecodeDevice(int)>& arguments) {
  struct Variant {
    bool ok;
    const char* math;
    void (*launch)(const SparseDecodeDevice&);
    const char* tensor_core_suffix;  // a tensor-core path's, in its baseline name; null: a fixed name
  };
  std::vector<TimedPathRow> timed;
  for (const Variant& v : {Variant{ok.mma, "bf16", launch_sparse_decode_mma, "bf16_mma"},
                           Variant{ok.wgmma, "bf16", launch_sparse_decode_wgmma, "bf16_wgmma"},
                           Variant{ok.baseline, "fp32", launch_sparse_decode, nullptr}}) {
    if (!v.ok) continue;
    const TimingStats t = time_kernel([&](int run) { v.launch(arguments(run)); }, kWarmup, kRuns);
    CUDA_CHECK(cudaGetLastError());
    timed.push_back({"sparse_attention_decode_fp32_baseline", v.math, t, v.tensor_core_suffix});
  }
  name_competing_paths("sparse_attention_decode", timed);
  return timed;
}

}  // namespace

// Decode batches over contexts of 16K to 1M compressed positions: each
// request gathers its top-512 entries (spread over its own context) and its
// 128-token window. Index sets and windows rotate, so no run finds the
// previous run's entries in L2. The main KV is at most ~16 GB: past that,
// requests' contexts overlap (still far beyond L2). Of the two tensor-core
// paths the faster at a shape carries the simulator's name, the other is
// "*_bf16_mma_baseline" or "*_bf16_wgmma_baseline".
int measure_sparse_decode(const RowWriter& w, const Device& dev, bool quick, bool wgmma_passed) {
  const bool baseline_ok = passes("sparse decode (fp32 baseline)", check_sparse_decode());
  const bool mma_ok = passes("sparse decode (tensor cores)", check_sparse_decode_mma());
  const bool wgmma_ok = wgmma_passed && passes("sparse decode (wgmma)", check_sparse_decode_wgmma());
  const SparseDecodePaths ok{mma_ok, wgmma_ok, baseline_ok};
  if (!ok.baseline && !ok.mma && !ok.wgmma) return 1;
  const int64_t max_entries = std::min<int64_t>(
      (16LL << 30) / kMainEntryBytes, static_cast<int64_t>(dev.props.totalGlobalMem / 4 / kMainEntryBytes));
  const std::vector<int64_t> batches =
      quick ? std::vector<int64_t>{32} : std::vector<int64_t>{1, 8, 32, 64, 128};
  const std::vector<int64_t> contexts =
      quick ? std::vector<int64_t>{262144} : std::vector<int64_t>{16384, 65536, 262144, 1048576};
  const DeviceBuffer<uint8_t> main_kv = quantized_main_kv(max_entries);
  for (const int64_t batch : batches) {
    // Queries, windows and sink from the reference's generator; its own main KV is unused (one entry).
    const SparseDecodeInputs host = make_sparse_decode_inputs({batch, kV41QueryHeads, kV41TopK, 1}, 41);
    const DeviceBuffer<uint16_t> q(host.q), out(host.q.size());
    const DeviceBuffer<float> sink(host.sink);
    // The queries in and the outputs out, BF16, outside the main loop.
    const double edge_bytes = 2.0 * static_cast<double>(host.q.size() * sizeof(uint16_t));
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
      const std::vector<DeviceBuffer<int32_t>> index_sets =
          rotating_index_sets(batch, context, max_entries, copies);
      const double keys = static_cast<double>(kV41TopK + kWindowTokens);
      const double flops = 2.0 * static_cast<double>(batch * kV41QueryHeads) * keys * 2.0 * kLatentDim;
      const double bytes = static_cast<double>(gathered) + edge_bytes;
      const std::vector<TimedPathRow> timed = time_sparse_decode_paths(ok, [&](int run) {
        return SparseDecodeDevice{shape,
                                  q.get(),
                                  main_kv.get(),
                                  pick(index_sets, run),
                                  pick(windows, run),
                                  window_len.get(),
                                  sink.get(),
                                  out.get(),
                                  workspace.get(),
                                  splits};
      });
      for (const TimedPathRow& t : timed) {
        // FP4 compressed entries and FP8 window entries, widened to BF16 in registers.
        w.row({t.name, "attention", t.math, batch * kV41QueryHeads, static_cast<int64_t>(keys),
               2 * kLatentDim, 1, context, flops, bytes, t.time, edge_bytes,
               static_cast<double>(batch * kWindowTokens * kLatentDim),
               static_cast<double>(batch * kV41TopK * kLatentDim)});
        std::printf("%s batch %lld, context %lld: %.1f us, %.0f GB/s (%.0f%% of copy), %.1f TFLOP/s\n",
                    t.name.c_str(), static_cast<long long>(batch), static_cast<long long>(context),
                    t.time.median_us, bytes / t.time.median_us / 1e3,
                    100.0 * bytes / t.time.median_us / 1e3 / w.ceilings().copy_gbps,
                    flops / t.time.median_us / 1e6);
      }
    }
  }
  return 0;
}

}  // namespace v41sim::kernels

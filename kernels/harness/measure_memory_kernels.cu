// The memory-bound kernels: MXFP4 KV quantize and dequantize, the ratio-2
// compressor, the Engram host gather and the two mHC forms.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/checks/device_checks.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/gpu_timer.h"
#include "kernels/common/v41_shapes.h"
#include "kernels/compress/compress_pool.h"
#include "kernels/engram/engram_gather.h"
#include "kernels/harness/device_fill.h"
#include "kernels/harness/measure_groups.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"
#include "kernels/mhc/mhc_mixing.h"
#include "kernels/mhc/mhc_projection_tiles.h"

namespace v41sim::kernels {

int measure_mxfp4(const RowWriter& w, const Device& d, bool quick) {
  if (!passes("mxfp4 kv", check_mxfp4_kv())) return 1;
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{4096, 262144}
            : std::vector<int64_t>{1024, 4096, 16384, 65536, 262144, 1048576};
  for (const int64_t tokens : token_counts) {
    const int64_t in_bytes = tokens * kDim * static_cast<int64_t>(sizeof(uint16_t));  // BF16 values
    const int64_t out_bytes = tokens * mxfp4_entry_bytes(kDim);
    const int copies = rotation_for(in_bytes + out_bytes, d);
    const auto kv = rotated<uint16_t>(copies, static_cast<std::size_t>(tokens * kDim));
    const auto cache = rotated<uint8_t>(copies, static_cast<std::size_t>(out_bytes));
    for (int i = 0; i < copies; ++i) fill_bf16(pick(kv, i), tokens * kDim, 10 + static_cast<uint64_t>(i));
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

// Ratio-2 compressor: pool pairs of tokens and write MXFP4 entries.
int measure_compress(const RowWriter& w, const Device& d, bool quick) {
  if (!passes("compress", check_compress())) return 1;
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{65536} : std::vector<int64_t>{4096, 65536, 524288};
  for (const int64_t tokens : token_counts) {
    const int64_t in_bytes = 2 * tokens * kDim * static_cast<int64_t>(sizeof(uint16_t));  // BF16 kv and score
    const int64_t out_bytes = tokens / 2 * mxfp4_entry_bytes(kDim);
    const int copies = rotation_for(in_bytes + out_bytes, d);
    const auto kv = rotated<uint16_t>(copies, static_cast<std::size_t>(tokens * kDim));
    const auto score = rotated<uint16_t>(copies, static_cast<std::size_t>(tokens * kDim));
    const auto entries = rotated<uint8_t>(copies, static_cast<std::size_t>(out_bytes));
    const DeviceBuffer<float> ape(static_cast<std::size_t>(2 * kDim));
    for (int i = 0; i < copies; ++i) {
      fill_bf16(pick(kv, i), tokens * kDim, 20 + static_cast<uint64_t>(i));
      fill_bf16(pick(score, i), tokens * kDim, 40 + static_cast<uint64_t>(i));
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
    std::printf("engram gather %lld rows: %.1f us, %.1f GB/s over the host link (%.0f%% of a pinned copy)\n",
                static_cast<long long>(count), t.median_us, bytes / t.median_us / 1e3,
                100.0 * bytes / t.median_us / 1e3 / w.ceilings().host_to_device_gbps);
  }
  CUDA_CHECK(cudaFreeHost(pinned));
  return 0;
}

// mHC: one site step by the three-kernel form and by the single pass on the
// same tokens (decode batches to prefill chunks), so the traffic halving is
// measured rather than assumed, the single pass's extra reads of fn included.
// Bytes are what a kernel moves from HBM: the streams as the simulator
// counts them (BF16), and for the projection and the single pass fn's one
// read (1 MB; the simulator leaves it out, 2 MB a site and step in FP32).
// fn's further reads from L2 (once a CTA) and the projection's tensor-core
// work are counted nowhere: the simulator takes them as hidden under the
// streams' traffic, and these rows test that.
int measure_mhc(const RowWriter& w, const Device& d, bool quick) {
  if (!passes("mhc", check_mhc())) return 1;
  constexpr int64_t kHidden = kV41Hidden;
  const MhcWeights site = random_mhc_weights(kHidden, 72);
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{256, 4096} : std::vector<int64_t>{64, 256, 1024, 8192, 32768};
  for (const int64_t tokens : token_counts) {
    const auto streams = static_cast<std::size_t>(tokens * kStreams * kHidden);
    const auto hidden = static_cast<std::size_t>(tokens * kHidden);
    const int splits = mhc_projection_splits_here(tokens, kHidden);
    const int per_cta = mhc_fused_tokens_per_cta_here(tokens, kHidden);
    const auto fn_bytes = static_cast<int64_t>(site.fn.size() * sizeof(uint16_t));
    const int copies =
        rotation_for(static_cast<int64_t>((2 * streams + 2 * hidden) * sizeof(uint16_t)) + fn_bytes, d);
    const auto X = rotated<uint16_t>(copies, streams), merged = rotated<uint16_t>(copies, streams);
    const auto y = rotated<uint16_t>(copies, hidden), input = rotated<uint16_t>(copies, hidden);
    const auto fn = rotated<uint16_t>(copies, site.fn.size());
    for (int i = 0; i < copies; ++i) {
      fill_bf16(pick(X, i), static_cast<int64_t>(streams), 70 + static_cast<uint64_t>(i));
      fill_bf16(pick(y, i), static_cast<int64_t>(hidden), 170 + static_cast<uint64_t>(i));
      CUDA_CHECK(cudaMemcpy(pick(fn, i), site.fn.data(), static_cast<std::size_t>(fn_bytes),
                            cudaMemcpyHostToDevice));
    }
    const auto coefficients = static_cast<std::size_t>(tokens * kCoefficients);
    const DeviceBuffer<float> c(coefficients), c_next(coefficients);
    const DeviceBuffer<float> workspace(
        static_cast<std::size_t>(mhc_projection_workspace_floats(tokens, splits)));
    // Block i's coefficients, as a site makes them.
    launch_mhc_projection(pick(X, 0), pick(fn, 0), workspace.get(), splits, tokens, kHidden);
    launch_mhc_pre_mix(pick(X, 0), workspace.get(), splits, site.scales, c.get(), pick(input, 0), tokens,
                       kHidden);
    // The three kernels each timed alone (one row a kernel, as the simulator
    // times them); the form's time is their sum.
    const TimingStats merge = time_kernel(
        [&](int i) {
          launch_mhc_post_merge(pick(X, i), pick(y, i), c.get(), pick(merged, i), tokens, kHidden);
        },
        kWarmup, kRuns);
    const TimingStats projection = time_kernel(
        [&](int i) {
          launch_mhc_projection(pick(merged, i), pick(fn, i), workspace.get(), splits, tokens, kHidden);
        },
        kWarmup, kRuns);
    const TimingStats block_input = time_kernel(
        [&](int i) {
          launch_mhc_pre_mix(pick(merged, i), workspace.get(), splits, site.scales, c_next.get(),
                             pick(input, i), tokens, kHidden);
        },
        kWarmup, kRuns);
    // The single pass at each tokens-a-CTA choice that fits, for the log (how
    // fn's L2 reads trade against CTAs resident a SM); the row is the
    // launcher's choice, as an engine would run it.
    const auto time_fused = [&](int tokens_per_cta) {
      return time_kernel(
          [&](int i) {
            launch_mhc_fused(pick(X, i), pick(y, i), c.get(), {pick(fn, i), site.scales}, pick(merged, i),
                             pick(input, i), c_next.get(), tokens_per_cta, tokens, kHidden);
          },
          kWarmup, kRuns);
    };
    const TimingStats fused = time_fused(per_cta);
    for (int other = 1; other <= kMaxFusedTokens; other *= 2) {
      if (other == per_cta || other > tokens || !mhc_fused_fits_here(other, kHidden)) continue;
      std::printf("mhc %6lld tokens: single pass at %d tokens a CTA %.1f us (the launcher's %d: %.1f us)\n",
                  static_cast<long long>(tokens), other, time_fused(other).median_us, per_cta,
                  fused.median_us);
    }
    CUDA_CHECK(cudaGetLastError());
    // The projection reads the streams and fn, the block input reads the
    // streams and writes one row, the merge reads them and the block output
    // and writes them; the single pass reads the streams, the block output
    // and fn, and writes the streams and one row.
    const double h = static_cast<double>(hidden) * sizeof(uint16_t);
    const double s = kStreams;
    const double fn_read = static_cast<double>(fn_bytes);
    w.row({"mhc_projection", "elementwise", "fp32", tokens, kStreams * kHidden, 1, 1, 0, 0, s * h + fn_read,
           projection});
    w.row({"mhc_pre_mix", "elementwise", "fp32", tokens, kStreams * kHidden, 1, 1, 0, 0, (s + 1) * h,
           block_input});
    w.row({"mhc_post_merge", "elementwise", "fp32", tokens, kStreams * kHidden, 1, 1, 0, 0, (2 * s + 1) * h,
           merge});
    w.row({"mhc_single_pass", "elementwise", "fp32", tokens, kStreams * kHidden, 1, 1, 0, 0,
           (2 * s + 2) * h + fn_read, fused});
    const double three_us = projection.median_us + block_input.median_us + merge.median_us;
    std::printf(
        "mhc %6lld tokens: three kernels %.1f us (projection %.1f, split %d ways; block input %.1f; merge "
        "%.1f), "
        "single pass %.1f us (%d tokens a CTA, fn read from L2 %.0f KB a token); %.2fx; %.0f%% / %.0f%% of "
        "copy\n",
        static_cast<long long>(tokens), three_us, projection.median_us, splits, block_input.median_us,
        merge.median_us, fused.median_us, per_cta, static_cast<double>(fn_bytes) / per_cta / 1e3,
        three_us / fused.median_us,
        100.0 * ((4 * s + 2) * h + fn_read) / three_us / 1e3 / w.ceilings().copy_gbps,
        100.0 * ((2 * s + 2) * h + fn_read) / fused.median_us / 1e3 / w.ceilings().copy_gbps);
  }
  return 0;
}

}  // namespace v41sim::kernels

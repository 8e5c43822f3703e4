// The memory-bound kernels: MXFP4 KV quantize and dequantize, the ratio-2
// compressor, the Engram host gather and the two mHC forms.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
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
#include "kernels/mhc/mhc_cluster_slices.h"
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
// The single pass runs in two forms, by token tiles (fn read from L2 once for
// every 1 to 4 tokens) and by clusters (fn's slices resident, read once a
// CTA); the faster carries the simulator's name, the other is a baseline row.
// Bytes are what a kernel moves from HBM: the streams as the simulator
// counts them (BF16), and for the projection and the single pass fn's one
// read (1 MB; the simulator leaves it out, 2 MB a site and step in FP32).
// fn's further reads from L2 and the projection's tensor-core work are
// counted nowhere: the simulator takes them as hidden under the streams'
// traffic, and these rows test that.
namespace {

constexpr int64_t kMhcHidden = kV41Hidden;

// One site's device buffers for `tokens` tokens, rotated against L2, with
// block i's coefficients made as a site makes them.
struct MhcSiteBuffers {
  int64_t tokens;
  int copies;
  std::vector<DeviceBuffer<uint16_t>> X, merged, y, input, fn;
  DeviceBuffer<float> c, c_next;

  MhcSiteBuffers(const MhcWeights& site, int64_t token_count, const Device& d)
      : tokens(token_count),
        copies(rotation_for(
            static_cast<int64_t>((2 * streams() + 2 * rows() + site.fn.size()) * sizeof(uint16_t)), d)),
        X(rotated<uint16_t>(copies, streams())),
        merged(rotated<uint16_t>(copies, streams())),
        y(rotated<uint16_t>(copies, rows())),
        input(rotated<uint16_t>(copies, rows())),
        fn(rotated<uint16_t>(copies, site.fn.size())),
        c(static_cast<std::size_t>(tokens * kCoefficients)),
        c_next(static_cast<std::size_t>(tokens * kCoefficients)) {
    for (int i = 0; i < copies; ++i) {
      fill_bf16(pick(X, i), static_cast<int64_t>(streams()), 70 + static_cast<uint64_t>(i));
      fill_bf16(pick(y, i), static_cast<int64_t>(rows()), 170 + static_cast<uint64_t>(i));
      CUDA_CHECK(
          cudaMemcpy(pick(fn, i), site.fn.data(), site.fn.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
    }
    const int splits = mhc_projection_splits_here(tokens, kMhcHidden);
    const DeviceBuffer<float> workspace(
        static_cast<std::size_t>(mhc_projection_workspace_floats(tokens, splits)));
    launch_mhc_projection(pick(X, 0), pick(fn, 0), workspace.get(), splits, tokens, kMhcHidden);
    launch_mhc_pre_mix(pick(X, 0), workspace.get(), splits, site.scales, c.get(), pick(input, 0), tokens,
                       kMhcHidden);
  }
  std::size_t streams() const { return static_cast<std::size_t>(tokens * kStreams * kMhcHidden); }
  std::size_t rows() const { return static_cast<std::size_t>(tokens * kMhcHidden); }
};

// The three-kernel form's kernels, each timed alone (one row a kernel, as
// the simulator times them; the form's time is their sum).
struct ThreeKernelTimes {
  TimingStats merge, projection, block_input;
  int splits;
  double total_us() const { return merge.median_us + projection.median_us + block_input.median_us; }
};
ThreeKernelTimes time_three_kernels(const MhcSiteBuffers& b, const MhcScales& scales) {
  ThreeKernelTimes t{};
  t.splits = mhc_projection_splits_here(b.tokens, kMhcHidden);
  const DeviceBuffer<float> workspace(
      static_cast<std::size_t>(mhc_projection_workspace_floats(b.tokens, t.splits)));
  t.merge = time_kernel(
      [&](int i) {
        launch_mhc_post_merge(pick(b.X, i), pick(b.y, i), b.c.get(), pick(b.merged, i), b.tokens, kMhcHidden);
      },
      kWarmup, kRuns);
  t.projection = time_kernel(
      [&](int i) {
        launch_mhc_projection(pick(b.merged, i), pick(b.fn, i), workspace.get(), t.splits, b.tokens,
                              kMhcHidden);
      },
      kWarmup, kRuns);
  t.block_input = time_kernel(
      [&](int i) {
        launch_mhc_pre_mix(pick(b.merged, i), workspace.get(), t.splits, scales, b.c_next.get(),
                           pick(b.input, i), b.tokens, kMhcHidden);
      },
      kWarmup, kRuns);
  return t;
}

// The token-tile single pass at `tokens_per_cta`.
TimingStats time_token_tiles(const MhcSiteBuffers& b, const MhcScales& scales, int tokens_per_cta) {
  return time_kernel(
      [&](int i) {
        launch_mhc_fused(pick(b.X, i), pick(b.y, i), b.c.get(), {pick(b.fn, i), scales}, pick(b.merged, i),
                         pick(b.input, i), b.c_next.get(), tokens_per_cta, b.tokens, kMhcHidden);
      },
      kWarmup, kRuns);
}

TimingStats time_clusters(const MhcSiteBuffers& b, const MhcScales& scales, const MhcClusterPlan& plan) {
  return time_kernel(
      [&](int i) {
        launch_mhc_cluster_pass(pick(b.X, i), pick(b.y, i), b.c.get(), {pick(b.fn, i), scales},
                                pick(b.merged, i), pick(b.input, i), b.c_next.get(), plan, b.tokens,
                                kMhcHidden);
      },
      kWarmup, kRuns);
}

// One token count's single pass by token tiles, and (later) by clusters.
struct SinglePassTimes {
  int64_t tokens;
  int tokens_per_cta;
  TimingStats token_tiles;
  double three_kernels_us;
  std::optional<TimingStats> clusters;
  MhcClusterPlan plan;
};

// Every token count's single pass by clusters, at each cluster size the
// device schedules (the faster kept), where its check passes. A launch the
// device refuses ends this form only; the rows already timed stand.
void time_cluster_form(const MhcWeights& site, const Device& d,
                       std::vector<SinglePassTimes>& passes_by_tokens) {
  try {
    if (!passes("mhc cluster pass", check_mhc_cluster())) return;
    for (SinglePassTimes& p : passes_by_tokens) {
      const MhcSiteBuffers b(site, p.tokens, d);
      for (const int ctas : kClusterSizes) {
        const MhcClusterPlan plan = mhc_cluster_plan_here(ctas, p.tokens, kMhcHidden);
        if (plan.clusters <= 0) {
          std::printf("mhc %6lld tokens: clusters of %d CTAs do not schedule here\n",
                      static_cast<long long>(p.tokens), ctas);
          continue;
        }
        const TimingStats t = time_clusters(b, site.scales, plan);
        CUDA_CHECK(cudaGetLastError());
        std::printf(
            "mhc %6lld tokens: single pass by clusters of %d CTAs %.1f us (%d clusters, %d token rows a "
            "tile)\n",
            static_cast<long long>(p.tokens), ctas, t.median_us, plan.clusters, plan.tile_rows);
        if (!p.clusters || t.median_us < p.clusters->median_us) {
          p.clusters = t;
          p.plan = plan;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mhc cluster pass: %s; not timed\n", e.what());
    for (SinglePassTimes& p : passes_by_tokens) p.clusters.reset();
  }
}

}  // namespace

// The three kernels and the token tiles first, their rows written (but for
// the single pass's, whose name waits on the cluster form); then the cluster
// form, newest and the likeliest to fail; then the single pass's rows.
int measure_mhc(const RowWriter& w, const Device& d, bool quick) {
  if (!passes("mhc", check_mhc())) return 1;
  const MhcWeights site = random_mhc_weights(kMhcHidden, 72);
  const std::vector<int64_t> token_counts =
      quick ? std::vector<int64_t>{256, 4096} : std::vector<int64_t>{64, 256, 1024, 8192, 32768};
  // The projection reads the streams and fn, the block input reads the
  // streams and writes one row, the merge reads them and the block output
  // and writes them; the single pass reads the streams, the block output
  // and fn, and writes the streams and one row.
  const double s = kStreams, fn_read = static_cast<double>(site.fn.size() * sizeof(uint16_t));
  const auto row_bytes = [](int64_t tokens) {
    return static_cast<double>(tokens * kMhcHidden) * sizeof(uint16_t);
  };
  std::vector<SinglePassTimes> single;
  for (const int64_t tokens : token_counts) {
    const MhcSiteBuffers b(site, tokens, d);
    const ThreeKernelTimes three = time_three_kernels(b, site.scales);
    const int per_cta = mhc_fused_tokens_per_cta_here(tokens, kMhcHidden);
    single.push_back({tokens, per_cta, time_token_tiles(b, site.scales, per_cta), three.total_us(), {}, {}});
    // The token tiles at each other choice that fits, for the log (how fn's
    // L2 reads trade against CTAs resident a SM); the row is the launcher's.
    for (int other = 1; other <= kMaxFusedTokens; other *= 2) {
      if (other == per_cta || other > tokens || !mhc_fused_fits_here(other, kMhcHidden)) continue;
      std::printf("mhc %6lld tokens: single pass at %d tokens a CTA %.1f us (the launcher's %d: %.1f us)\n",
                  static_cast<long long>(tokens), other, time_token_tiles(b, site.scales, other).median_us,
                  per_cta, single.back().token_tiles.median_us);
    }
    CUDA_CHECK(cudaGetLastError());
    const double h = row_bytes(tokens);
    w.row({"mhc_projection", "elementwise", "fp32", tokens, kStreams * kMhcHidden, 1, 1, 0, 0,
           s * h + fn_read, three.projection});
    w.row({"mhc_pre_mix", "elementwise", "fp32", tokens, kStreams * kMhcHidden, 1, 1, 0, 0, (s + 1) * h,
           three.block_input});
    w.row({"mhc_post_merge", "elementwise", "fp32", tokens, kStreams * kMhcHidden, 1, 1, 0, 0,
           (2 * s + 1) * h, three.merge});
    std::printf(
        "mhc %6lld tokens: three kernels %.1f us (projection %.1f, split %d ways; block input %.1f; merge "
        "%.1f), %.0f%% of copy\n",
        static_cast<long long>(tokens), three.total_us(), three.projection.median_us, three.splits,
        three.block_input.median_us, three.merge.median_us,
        100.0 * ((4 * s + 2) * h + fn_read) / three.total_us() / 1e3 / w.ceilings().copy_gbps);
  }
  time_cluster_form(site, d, single);
  for (const SinglePassTimes& p : single) {
    const double bytes = (2 * s + 2) * row_bytes(p.tokens) + fn_read;
    const bool clusters_win = p.clusters && p.clusters->median_us < p.token_tiles.median_us;
    w.row({clusters_win ? "mhc_single_pass_by_token_tiles_baseline" : "mhc_single_pass", "elementwise",
           "fp32", p.tokens, kStreams * kMhcHidden, 1, 1, 0, 0, bytes, p.token_tiles});
    if (p.clusters) {
      w.row({clusters_win ? "mhc_single_pass" : "mhc_single_pass_by_clusters_baseline", "elementwise", "fp32",
             p.tokens, kStreams * kMhcHidden, 1, 1, 0, 0, bytes, *p.clusters});
    }
    const TimingStats& fastest = clusters_win ? *p.clusters : p.token_tiles;
    std::printf(
        "mhc %6lld tokens: single pass by token tiles %.1f us (%d tokens a CTA, fn read from L2 %.0f KB "
        "a token)",
        static_cast<long long>(p.tokens), p.token_tiles.median_us, p.tokens_per_cta,
        fn_read / p.tokens_per_cta / 1e3);
    if (p.clusters) {
      std::printf(
          ", by clusters %.1f us (%d clusters of %d CTAs, %d token rows a tile, fn read from L2 %.1f MB "
          "in all)",
          p.clusters->median_us, p.plan.clusters, p.plan.ctas, p.plan.tile_rows,
          fn_read * p.plan.clusters / 1e6);
    }
    std::printf("; %.2fx the three kernels' speed, %.0f%% of copy\n", p.three_kernels_us / fastest.median_us,
                100.0 * bytes / fastest.median_us / 1e3 / w.ceilings().copy_gbps);
  }
  return 0;
}

}  // namespace v41sim::kernels

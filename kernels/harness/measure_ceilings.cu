// The device's own ceilings, measured before any kernel: the harness reports
// every row against them.
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
#include "kernels/gemm/expert_gemm.h"
#include "kernels/harness/device_copy.cuh"
#include "kernels/harness/device_fill.h"
#include "kernels/harness/fp32_ceiling.cuh"
#include "kernels/harness/measure_groups.h"

namespace v41sim::kernels {

namespace {

constexpr int64_t kCopyBytes = 1LL << 30;  // the copies: 1 GiB
constexpr int64_t kGemmSize = 8192;        // the dense GEMMs: 8192^3

// HBM: a float4 streaming copy of 1 GiB, device to device.
TimingStats time_device_copy(const Device& d) {
  const DeviceBuffer<float4> in(static_cast<std::size_t>(kCopyBytes / 16)),
      out(static_cast<std::size_t>(kCopyBytes / 16));
  fill_uniform(reinterpret_cast<float*>(in.get()), kCopyBytes / 4, 1);
  return time_kernel([&](int) { launch_copy(in.get(), out.get(), kCopyBytes / 16, d.sms); }, kWarmup, kRuns);
}

// The host link: one 1 GiB copy from pinned host memory (what Engram rows cross).
TimingStats time_host_copy() {
  const DeviceBuffer<uint8_t> out(static_cast<std::size_t>(kCopyBytes));
  uint8_t* pinned = nullptr;
  CUDA_CHECK(cudaHostAlloc(&pinned, static_cast<std::size_t>(kCopyBytes), cudaHostAllocDefault));
  std::memset(pinned, 0x5a, static_cast<std::size_t>(kCopyBytes));
  const TimingStats host = time_kernel(
      [&](int) {
        CUDA_CHECK(
            cudaMemcpyAsync(out.get(), pinned, static_cast<std::size_t>(kCopyBytes), cudaMemcpyHostToDevice));
      },
      2, 10);
  CUDA_CHECK(cudaFreeHost(pinned));
  return host;
}

// The tensor-core ceilings: dense 8192^3 GEMMs on cuBLASLt, FP8 and BF16.
struct DenseGemmTimes {
  TimingStats fp8, bf16;
};
DenseGemmTimes time_dense_gemms() {
  const int64_t n = kGemmSize;
  const DeviceBuffer<uint8_t> a(static_cast<std::size_t>(n * n)), b(static_cast<std::size_t>(n * n));
  const DeviceBuffer<float> dst(static_cast<std::size_t>(n * n)), scales(std::vector<float>{1.0f, 1.0f});
  fill_e4m3(a.get(), n * n, 2);
  fill_e4m3(b.get(), n * n, 3);
  const GemmPlan plan(GemmOperands::kFp8E4M3, b.get(), a.get(), dst.get(), scales.get(), scales.get() + 1, n,
                      n, n);
  DenseGemmTimes t;
  t.fp8 = time_kernel([&](int) { plan.run(); }, kWarmup, kRuns);
  const DeviceBuffer<uint16_t> a16(static_cast<std::size_t>(n * n)), b16(static_cast<std::size_t>(n * n));
  fill_bf16(a16.get(), n * n, 4);
  fill_bf16(b16.get(), n * n, 5);
  const GemmPlan plan16(GemmOperands::kBf16, b16.get(), a16.get(), dst.get(), nullptr, nullptr, n, n, n);
  t.bf16 = time_kernel([&](int) { plan16.run(); }, kWarmup, kRuns);
  CUDA_CHECK(cudaGetLastError());
  return t;
}

double dense_gemm_flops() { return 2.0 * static_cast<double>(kGemmSize * kGemmSize) * kGemmSize; }

// The ceilings as metadata lines, which the parent hands to every later group.
void write_ceilings(const RowWriter& w, const Ceilings& c) {
  char text[64];
  const auto meta = [&](const char* key, const char* format, double value) {
    std::snprintf(text, sizeof text, format, value);
    w.meta(key, text);
  };
  meta("copy_gbps", "%.1f", c.copy_gbps);
  meta("fp8_dense_tflops", "%.1f", c.fp8_dense_tflops);
  meta("bf16_dense_tflops", "%.1f", c.bf16_dense_tflops);
  meta("fp32_fma_tflops", "%.2f", c.fp32_fma_tflops);
  meta("host_to_device_gbps", "%.1f", c.host_to_device_gbps);
}

// A dense GEMM's row: both operands and the FP32 output (the epilogue's
// share) as its bytes, cuBLASLt's own tiling.
Row dense_gemm_row(const char* kernel, const char* math, double operand_bytes, const TimingStats& time) {
  const int64_t n = kGemmSize;
  const double output_bytes = 4.0 * static_cast<double>(n * n);
  Row row{kernel,
          "gemm",
          math,
          n,
          n,
          n,
          1,
          0,
          dense_gemm_flops(),
          2.0 * operand_bytes * static_cast<double>(n * n) + output_bytes,
          time,
          output_bytes};
  row.tiling = "split";
  return row;
}

}  // namespace

// Runs first; writes the metadata and the five ceiling rows, and the
// ceilings as metadata lines the parent hands to every later group.
int measure_ceilings(int fd) {
  const Device d = query_device();
  RowWriter w(fd, {});
  write_metadata(w, d);
  const TimingStats copy = time_device_copy(d);
  const TimingStats host = time_host_copy();
  const DeviceBuffer<float> sink(1);
  const TimingStats fma = time_kernel([&](int) { launch_fma_chains(sink.get(), d.sms); }, kWarmup, kRuns);
  const DenseGemmTimes gemms = time_dense_gemms();

  Ceilings c;
  c.copy_gbps = 2.0 * static_cast<double>(kCopyBytes) / copy.median_us / 1e3;
  c.host_to_device_gbps = static_cast<double>(kCopyBytes) / host.median_us / 1e3;
  c.fp32_fma_tflops = fma_chain_flops(d.sms) / fma.median_us / 1e6;
  c.fp8_dense_tflops = dense_gemm_flops() / gemms.fp8.median_us / 1e6;
  c.bf16_dense_tflops = dense_gemm_flops() / gemms.bf16.median_us / 1e6;
  write_ceilings(w, c);

  const RowWriter rows(fd, c);
  rows.row(
      {"device_copy", "elementwise", "fp32", kCopyBytes / 4096, 4096, 1, 1, 0, 0, 2.0 * kCopyBytes, copy});
  rows.row({"host_to_device_copy", "host_copy", "fp32", kCopyBytes / 4096, 4096, 1, 1, 0, 0,
            static_cast<double>(kCopyBytes), host});
  rows.row({"fp32_fma_chains", "elementwise", "fp32", 1, 1, 1, 1, 0, fma_chain_flops(d.sms), 0, fma});
  rows.row(dense_gemm_row("dense_fp8_gemm", "fp8", 1.0, gemms.fp8));
  rows.row(dense_gemm_row("dense_bf16_gemm", "bf16", 2.0, gemms.bf16));
  std::printf(
      "%s: %d SMs; copy %.0f GB/s, host to device %.1f GB/s, FP32 FMA %.1f TFLOP/s, FP8 GEMM %.0f TFLOP/s, "
      "BF16 GEMM %.0f TFLOP/s\n",
      d.props.name, d.sms, c.copy_gbps, c.host_to_device_gbps, c.fp32_fma_tflops, c.fp8_dense_tflops,
      c.bf16_dense_tflops);
  return 0;
}

}  // namespace v41sim::kernels

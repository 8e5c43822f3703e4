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

// Runs first; writes the metadata and the five ceiling rows, and the
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

  // The host link: one 1 GiB copy from pinned host memory (what Engram rows cross).
  uint8_t* pinned = nullptr;
  CUDA_CHECK(cudaHostAlloc(&pinned, static_cast<std::size_t>(bytes), cudaHostAllocDefault));
  std::memset(pinned, 0x5a, static_cast<std::size_t>(bytes));
  const TimingStats host = time_kernel(
      [&](int) {
        CUDA_CHECK(
            cudaMemcpyAsync(out.get(), pinned, static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice));
      },
      2, 10);
  CUDA_CHECK(cudaFreeHost(pinned));
  c.host_to_device_gbps = static_cast<double>(bytes) / host.median_us / 1e3;

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
  std::snprintf(text, sizeof text, "%.1f", c.host_to_device_gbps);
  w.meta("host_to_device_gbps", text);
  const RowWriter rows(fd, c);
  rows.row({"device_copy", "elementwise", "fp32", bytes / 4096, 4096, 1, 1, 0, 0, 2.0 * bytes, copy});
  rows.row({"host_to_device_copy", "host_copy", "fp32", bytes / 4096, 4096, 1, 1, 0, 0,
            static_cast<double>(bytes), host});
  rows.row({"fp32_fma_chains", "elementwise", "fp32", 1, 1, 1, 1, 0, fma_chain_flops(d.sms), 0, fma});
  // Bytes: both operands and the FP32 output (the epilogue's share).
  const double output_bytes = 4.0 * static_cast<double>(n * n);
  Row fp8{"dense_fp8_gemm",
          "gemm",
          "fp8",
          n,
          n,
          n,
          1,
          0,
          gemm_flops,
          2.0 * static_cast<double>(n * n) + output_bytes,
          gemm,
          output_bytes};
  Row bf16{"dense_bf16_gemm",
           "gemm",
           "bf16",
           n,
           n,
           n,
           1,
           0,
           gemm_flops,
           4.0 * static_cast<double>(n * n) + output_bytes,
           gemm16,
           output_bytes};
  fp8.tiling = bf16.tiling = "split";  // cuBLASLt
  rows.row(fp8);
  rows.row(bf16);
  std::printf(
      "%s: %d SMs; copy %.0f GB/s, host to device %.1f GB/s, FP32 FMA %.1f TFLOP/s, FP8 GEMM %.0f TFLOP/s, "
      "BF16 GEMM %.0f TFLOP/s\n",
      d.props.name, d.sms, c.copy_gbps, c.host_to_device_gbps, c.fp32_fma_tflops, c.fp8_dense_tflops,
      c.bf16_dense_tflops);
  return 0;
}

}  // namespace v41sim::kernels

// The harness's output: metadata lines and one CSV row per measured
// (kernel, shape), with the achieved rates and their fractions of the
// device's own measured ceilings (validation/measurements/README.md).
// Rows go straight to a file descriptor, so a group measured in a child
// process keeps every row it finished even if a later kernel crashes it.
// Plain C++ (no CUDA), so a CPU test checks that the simulator reads what
// this writes.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "kernels/common/timing_stats.h"

namespace v41sim::kernels {

inline constexpr const char* kCsvHeader =
    "kernel,class,math,m,n,k,batch,context,flops,hbm_bytes,median_us,min_us,max_us,achieved_gbps,"
    "achieved_tflops,fraction_of_copy,fraction_of_compute_ceiling,epilogue_bytes,narrow_fp8_values,"
    "narrow_fp4_values,folded_values,tiling";

// Measured on this device before any kernel is timed.
struct Ceilings {
  double copy_gbps = 0;            // streaming copy, read + write bytes
  double fp8_dense_tflops = 0;     // cuBLASLt FP8 GEMM, 8192^3
  double bf16_dense_tflops = 0;    // cuBLASLt BF16 GEMM, 8192^3
  double fp32_fma_tflops = 0;      // FMA chains on the FP32 units
  double host_to_device_gbps = 0;  // cudaMemcpy from pinned host memory (the host link)
  // The bandwidth a row's bytes are set against: the host link for the
  // host_copy class (its bytes cross the link), HBM otherwise.
  double copy_for_class(const std::string& kernel_class) const {
    return kernel_class == "host_copy" ? host_to_device_gbps : copy_gbps;
  }
  double for_math(const std::string& math) const {
    if (math == "fp32") return fp32_fma_tflops;
    if (math == "bf16") return bf16_dense_tflops;
    return fp8_dense_tflops;  // FP8, and FP4 operands that run on the FP8 path here
  }
};

// One measured (kernel, shape) in the kernel model's convention (sim/graph/kernel.h).
struct Row {
  std::string kernel;
  std::string kernel_class;
  std::string math;
  int64_t m = 1, n = 1, k = 1, batch = 1;
  int64_t context = 0;  // visible compressed positions drawn from; 0 where it does not apply
  double flops = 0;
  double hbm_bytes = 0;
  TimingStats time;
  double epilogue_bytes = 0;  // of hbm_bytes, the output a GEMM's epilogue writes
  // Values the kernel's math takes from FP8 / FP4 storage, per pass, as the
  // simulator counts them (sim/graph/kernel.h NarrowValues).
  double narrow_fp8_values = 0;
  double narrow_fp4_values = 0;
  // Accumulator values its CUDA cores fold into the output (sim/graph/kernel.h
  // Kernel::folded_values: the indexer's ReLU and head weight a value).
  double folded_values = 0;
  // How the kernel cut its work into CTA tiles, so the simulator predicts the
  // row with the tiles it ran: "class" (the kernel class's rule), "split" (a
  // library that splits K to fill the SMs: cuBLASLt), or "MxN" (fixed tiles,
  // never split: our own kernels where their tile is not the class's).
  std::string tiling = "class";
};

class RowWriter {
 public:
  RowWriter(int fd, const Ceilings& ceilings) : fd_(fd), ceilings_(ceilings) {}

  void meta(const std::string& key, const std::string& value) const { put("# " + key + ": " + value + "\n"); }
  void header() const { put(std::string(kCsvHeader) + "\n"); }

  void row(const Row& r) const {
    const double gbps = r.hbm_bytes / r.time.median_us / 1e3;
    const double tflops = r.flops / r.time.median_us / 1e6;
    const double compute_ceiling = ceilings_.for_math(r.math);
    const double copy_ceiling = ceilings_.copy_for_class(r.kernel_class);
    char line[704];
    std::snprintf(line, sizeof line,
                  "%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%.0f,%.0f,%.3f,%.3f,%.3f,%.3f,%.4f,%.4f,%.4f,%.0f,%.0f,%"
                  ".0f,%.0f,%s\n",
                  r.kernel.c_str(), r.kernel_class.c_str(), r.math.c_str(), static_cast<long long>(r.m),
                  static_cast<long long>(r.n), static_cast<long long>(r.k), static_cast<long long>(r.batch),
                  static_cast<long long>(r.context), r.flops, r.hbm_bytes, r.time.median_us, r.time.min_us,
                  r.time.max_us, gbps, tflops, copy_ceiling > 0 ? gbps / copy_ceiling : 0.0,
                  compute_ceiling > 0 ? tflops / compute_ceiling : 0.0, r.epilogue_bytes, r.narrow_fp8_values,
                  r.narrow_fp4_values, r.folded_values, r.tiling.c_str());
    put(line);
  }

  const Ceilings& ceilings() const { return ceilings_; }

 private:
  void put(const std::string& text) const {
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n <= 0) return;  // the parent went away; nothing useful left to do with the row
      done += static_cast<std::size_t>(n);
    }
  }

  int fd_;
  Ceilings ceilings_;
};

}  // namespace v41sim::kernels

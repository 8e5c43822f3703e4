#include "sim/cost/rate_transfer.h"

#include <cmath>

namespace v41sim {

double PerSmRateRatio::for_math(MathType math) const {
  switch (math) {
    case MathType::kFp8:
    case MathType::kFp4:
      return fp8;
    case MathType::kBf16:
      return bf16;
    case MathType::kFp32:
      return 1.0;
  }
  return 1.0;
}

std::optional<PerSmRateRatio> per_sm_rate_ratio(const GpuProfile& gpu, const GpuProfile& reference,
                                                const std::string& reference_stem) {
  if (gpu.architecture != reference.architecture) return std::nullopt;
  auto ratio = [&](const SourcedValue& mine, const SourcedValue& theirs) {
    return (mine.value() / gpu.sm_count.value()) / (theirs.value() / reference.sm_count.value());
  };
  const PerSmRateRatio r{reference_stem, ratio(gpu.tensor.fp8_tflops, reference.tensor.fp8_tflops),
                         ratio(gpu.tensor.bf16_tflops, reference.tensor.bf16_tflops)};
  constexpr double kSame = 1e-9;
  if (std::fabs(r.fp8 - 1.0) < kSame && std::fabs(r.bf16 - 1.0) < kSame) return std::nullopt;
  return r;
}

double transfer_compute_efficiency(double efficiency, double per_sm_rate_ratio) {
  return 1.0 / (1.0 + per_sm_rate_ratio * (1.0 / efficiency - 1.0));
}

}  // namespace v41sim

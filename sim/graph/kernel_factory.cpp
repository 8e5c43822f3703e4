#include "sim/graph/kernel_factory.h"

#include <algorithm>
#include <cmath>

namespace v41sim {
namespace {

int64_t rounded(double value) { return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(value))); }

}  // namespace

MathType gemm_math_for(const BlockScaledFormat& weights) {
  return bits_of(weights.values) <= 8 ? MathType::kFp8 : MathType::kBf16;
}

Kernel& KernelFactory::push(Kernel kernel) {
  out_.push_back(std::move(kernel));
  return out_.back();
}

Kernel& KernelFactory::gemm(std::string name, double tokens, double n, double k,
                            const BlockScaledFormat& weights, MathType math, double groups) {
  Kernel kernel;
  kernel.name = std::move(name);
  kernel.kernel_class = KernelClass::kGemm;
  kernel.math = math;
  kernel.shape = {rounded(tokens), rounded(n), rounded(k), rounded(groups)};
  kernel.flops = 2.0 * tokens * n * k * groups;
  kernel.epilogue_bytes = gemm_epilogue_bytes(tokens, n, groups);
  kernel.hbm_bytes =
      groups * (n * k * weights.bytes_per_value() + tokens * k * gemm_row_operand_bytes(math)) +
      kernel.epilogue_bytes;
  kernel.narrow.add(weights.values, groups * n * k);
  kernel.operands = {gemm_row_operand_bytes(math), weights.bytes_per_value()};
  return push(std::move(kernel));
}

Kernel& KernelFactory::grouped_gemm(std::string name, double tokens, double experts_touched, double n,
                                    double k, const BlockScaledFormat& weights,
                                    std::optional<MathType> math) {
  Kernel kernel;
  kernel.name = std::move(name);
  kernel.kernel_class = KernelClass::kGroupedGemm;
  kernel.math = math.value_or(gemm_math_for(weights));
  const double row_bytes = gemm_row_operand_bytes(kernel.math);
  const double per_expert = experts_touched > 0 ? tokens / experts_touched : 0;
  kernel.shape = {rounded(per_expert), rounded(n), rounded(k), rounded(experts_touched)};
  kernel.flops = 2.0 * tokens * n * k;
  kernel.epilogue_bytes = gemm_epilogue_bytes(tokens, n);
  kernel.hbm_bytes =
      experts_touched * n * k * weights.bytes_per_value() + tokens * k * row_bytes + kernel.epilogue_bytes;
  kernel.narrow.add(weights.values, experts_touched * n * k);
  kernel.operands = {row_bytes, weights.bytes_per_value()};
  return push(std::move(kernel));
}

Kernel& KernelFactory::elementwise(std::string name, double rows, double width, double bytes, double ops) {
  Kernel kernel;
  kernel.name = std::move(name);
  kernel.kernel_class = KernelClass::kElementwise;
  kernel.math = MathType::kFp32;
  kernel.shape = {rounded(rows), rounded(width), 1, 1};
  kernel.flops = ops;
  kernel.hbm_bytes = bytes;
  return push(std::move(kernel));
}

Kernel& KernelFactory::topk(std::string name, int64_t rows, int64_t width, double values, double selected) {
  Kernel kernel;
  kernel.name = std::move(name);
  kernel.kernel_class = KernelClass::kTopK;
  kernel.math = MathType::kFp32;
  kernel.shape = {rows, width, 1, 1};  // a row a query
  kernel.flops = values * 2.0;
  kernel.hbm_bytes = values * kFp32Bytes + selected * kFp32Bytes;
  return push(std::move(kernel));
}

}  // namespace v41sim

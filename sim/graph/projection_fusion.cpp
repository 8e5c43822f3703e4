#include "sim/graph/projection_fusion.h"

#include <string_view>

namespace v41sim {
namespace {

constexpr std::string_view kProjSuffix = "_proj";

bool fusable(const Kernel& a, const Kernel& b) {
  // The numbers first: most pairs differ there, and they are cheaper to compare than names.
  return a.kernel_class == KernelClass::kGemm && b.kernel_class == KernelClass::kGemm && a.math == b.math &&
         a.shape.m == b.shape.m && a.shape.k == b.shape.k && a.shape.batch == 1 && b.shape.batch == 1 &&
         a.operands == b.operands && !a.input.empty() && a.input == b.input;
}

// "q_down_proj" + "window_kv_proj" -> "q_down+window_kv_proj".
std::string joined(const std::string& a, const std::string& b) {
  const bool suffixed = a.size() > kProjSuffix.size() && a.ends_with(kProjSuffix);
  return (suffixed ? a.substr(0, a.size() - kProjSuffix.size()) : a) + "+" + b;
}

// b's weights appended to a's along N; the shared input is read once.
void absorb(Kernel& a, const Kernel& b) {
  const double input_bytes =
      static_cast<double>(b.shape.m) * static_cast<double>(b.shape.k) * b.operands.row_bytes;
  a.name = joined(a.name, b.name);
  a.shape.n += b.shape.n;
  a.flops += b.flops;
  a.hbm_bytes += b.hbm_bytes - input_bytes;
  a.epilogue_bytes += b.epilogue_bytes;
  a.narrow.fp8 += b.narrow.fp8;
  a.narrow.fp4 += b.narrow.fp4;
}

}  // namespace

void fuse_same_input_gemms(std::vector<Kernel>& kernels, std::size_t first) {
  for (std::size_t i = first; i < kernels.size(); ++i) {
    for (std::size_t j = i + 1; j < kernels.size();) {
      if (fusable(kernels[i], kernels[j])) {
        absorb(kernels[i], kernels[j]);
        kernels.erase(kernels.begin() + static_cast<std::ptrdiff_t>(j));
      } else {
        ++j;
      }
    }
  }
}

}  // namespace v41sim

#include "sim/graph/kernel.h"

namespace v41sim {

std::string_view class_key(KernelClass kernel_class) {
  switch (kernel_class) {
    case KernelClass::kGemm:
      return "gemm";
    case KernelClass::kGroupedGemm:
      return "grouped_gemm";
    case KernelClass::kAttention:
      return "attention";
    case KernelClass::kIndexer:
      return "indexer";
    case KernelClass::kTopK:
      return "topk";
    case KernelClass::kElementwise:
      return "elementwise";
    case KernelClass::kAllToAll:
      return "all_to_all";
    case KernelClass::kHostCopy:
      return "host_copy";
  }
  return "?";
}

bool timed_on_links(KernelClass kernel_class) {
  return kernel_class == KernelClass::kAllToAll || kernel_class == KernelClass::kHostCopy;
}

void NarrowValues::add(ElementFormat format, double count) {
  if (format == ElementFormat::kFp8E4M3 || format == ElementFormat::kFp8E5M2) fp8 += count;
  if (format == ElementFormat::kFp4E2M1) fp4 += count;
}

std::string_view math_name(MathType math) {
  switch (math) {
    case MathType::kBf16:
      return "bf16";
    case MathType::kFp8:
      return "fp8";
    case MathType::kFp4:
      return "fp4";
    case MathType::kFp32:
      return "fp32";
  }
  return "?";
}

}  // namespace v41sim

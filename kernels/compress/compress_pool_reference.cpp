#include <stdexcept>

#include "kernels/compress/compress_pool.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"

namespace v41sim::kernels {

std::vector<uint8_t> compress_ratio2_reference(const std::vector<float>& kv, const std::vector<float>& score,
                                               const std::vector<float>& ape, int64_t tokens) {
  constexpr int64_t kDim = kCompressDim;
  if (tokens % kCompressRatio != 0 || static_cast<int64_t>(kv.size()) != tokens * kDim ||
      score.size() != kv.size() || static_cast<int64_t>(ape.size()) != kCompressRatio * kDim) {
    throw std::invalid_argument("compress ratio 2: bad shape");
  }
  const int64_t entries = tokens / kCompressRatio;
  const int64_t entry_bytes = mxfp4_entry_bytes(kDim);
  std::vector<uint8_t> out(static_cast<std::size_t>(entries * entry_bytes));
  float pooled[kMxfp4GroupSize];
  for (int64_t e = 0; e < entries; ++e) {
    uint8_t* entry = out.data() + e * entry_bytes;
    for (int g = 0; g < kDim / kMxfp4GroupSize; ++g) {
      const int64_t at = ratio2_group_offset(e, g);
      const int64_t d = g * kMxfp4GroupSize;
      pool_ratio2_values(kv.data() + at, kv.data() + at + kDim, score.data() + at, score.data() + at + kDim,
                         ape.data() + d, ape.data() + kDim + d, pooled);
      quantize_mxfp4_group(pooled, entry + g * (kMxfp4GroupSize / 2), entry + kDim / 2 + g);
    }
  }
  return out;
}

}  // namespace v41sim::kernels

#include "kernels/kv_quant/mxfp4_kv_reference.h"

#include <stdexcept>

#include "kernels/kv_quant/mxfp4_kv_block.h"

namespace v41sim::kernels {

int64_t mxfp4_entry_bytes(int64_t dim) { return mxfp4_entry_bytes_device(dim); }

std::vector<uint8_t> quantize_mxfp4_kv_reference(const std::vector<float>& kv, int64_t tokens, int64_t dim) {
  if (dim % kMxfp4GroupSize != 0 || static_cast<int64_t>(kv.size()) != tokens * dim) {
    throw std::invalid_argument("quantize_mxfp4_kv_reference: bad shape");
  }
  const int64_t entry = mxfp4_entry_bytes(dim);
  std::vector<uint8_t> cache(static_cast<std::size_t>(tokens * entry));
  for (int64_t t = 0; t < tokens; ++t) {
    uint8_t* out = cache.data() + t * entry;
    for (int64_t g = 0; g < dim / kMxfp4GroupSize; ++g) {
      quantize_mxfp4_group(kv.data() + t * dim + g * kMxfp4GroupSize, out + g * (kMxfp4GroupSize / 2),
                           out + dim / 2 + g);
    }
  }
  return cache;
}

std::vector<float> dequantize_mxfp4_kv_reference(const std::vector<uint8_t>& cache, int64_t tokens,
                                                 int64_t dim) {
  const int64_t entry = mxfp4_entry_bytes(dim);
  if (dim % kMxfp4GroupSize != 0 || static_cast<int64_t>(cache.size()) != tokens * entry) {
    throw std::invalid_argument("dequantize_mxfp4_kv_reference: bad shape");
  }
  std::vector<float> kv(static_cast<std::size_t>(tokens * dim));
  for (int64_t t = 0; t < tokens; ++t) {
    const uint8_t* in = cache.data() + t * entry;
    for (int64_t g = 0; g < dim / kMxfp4GroupSize; ++g) {
      dequantize_mxfp4_group(in + g * (kMxfp4GroupSize / 2), in[dim / 2 + g],
                             kv.data() + t * dim + g * kMxfp4GroupSize);
    }
  }
  return kv;
}

}  // namespace v41sim::kernels

// CPU reference for the MXFP4 KV cache write and read: the ground truth the
// CUDA kernel is compared with. Entry layout: [dim/2 bytes of packed FP4 |
// dim/16 bytes of E4M3 scales].
#pragma once

#include <cstdint>
#include <vector>

namespace v41sim::kernels {

int64_t mxfp4_entry_bytes(int64_t dim);
// tokens x dim floats -> tokens x mxfp4_entry_bytes(dim) bytes.
std::vector<uint8_t> quantize_mxfp4_kv_reference(const std::vector<float>& kv, int64_t tokens, int64_t dim);
std::vector<float> dequantize_mxfp4_kv_reference(const std::vector<uint8_t>& cache, int64_t tokens,
                                                 int64_t dim);

}  // namespace v41sim::kernels

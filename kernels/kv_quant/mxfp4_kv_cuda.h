// Host API of the MXFP4 KV cache kernels (plain C++: callable from tests and
// the measuring harness without nvcc). Same layout as the CPU reference.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace v41sim::kernels {

// Values are BF16 bits (as the KV projection writes them and attention reads them).
std::vector<uint8_t> quantize_mxfp4_kv_cuda(const std::vector<uint16_t>& kv, int64_t tokens, int64_t dim);
std::vector<uint16_t> dequantize_mxfp4_kv_cuda(const std::vector<uint8_t>& cache, int64_t tokens,
                                               int64_t dim);

// Device-pointer launchers for the measuring harness (no copies, no sync).
// dim a multiple of 128; kv 16-byte and cache 8-byte aligned (cudaMalloc'd
// buffers, entries at whole-entry offsets); otherwise std::invalid_argument.
void launch_quantize_mxfp4_kv(const uint16_t* kv, uint8_t* cache, int64_t tokens, int64_t dim);
void launch_dequantize_mxfp4_kv(const uint8_t* cache, uint16_t* kv, int64_t tokens, int64_t dim);

}  // namespace v41sim::kernels

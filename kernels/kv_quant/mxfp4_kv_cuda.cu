// MXFP4 KV cache write (quantize) and read (dequantize) for V4.1's compressed
// main KV: one thread per 16-value scale group, so a 512-dim entry is 32
// threads (one warp) and a CTA of 256 threads covers 8 tokens. The values are
// BF16, as the KV projection writes them and attention takes them; each
// thread moves its group's as two 16-byte accesses and its packed values as
// one 8-byte access (vector_access.cuh says why). Dequantized values are
// exact in BF16 (an E2M1 value times an E4M3 scale has at most 4 significant bits).
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
#include "kernels/common/device_buffer.h"
#include "kernels/common/vector_access.cuh"
#include "kernels/kv_quant/mxfp4_kv_block.h"
#include "kernels/kv_quant/mxfp4_kv_cuda.h"
#include "kernels/kv_quant/mxfp4_kv_reference.h"

namespace v41sim::kernels {
namespace {

constexpr int kThreadsPerBlock = 256;

struct Mxfp4KvParams {
  int64_t tokens;  // rows of the KV tensor
  int64_t dim;     // values per row; a multiple of kMxfp4GroupSize
};

// The scale group this thread handles: its token (row) and group within the row.
struct GroupIndex {
  int64_t token;
  int64_t group;
  bool valid;
};

__device__ GroupIndex this_thread_group(const Mxfp4KvParams& p) {
  const int64_t groups_per_row = p.dim / kMxfp4GroupSize;
  const int64_t flat = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  return {flat / groups_per_row, flat % groups_per_row, flat < p.tokens * groups_per_row};
}

__global__ void quantize_mxfp4_kv_kernel(const uint16_t* __restrict__ kv, uint8_t* __restrict__ cache,
                                         Mxfp4KvParams p) {
  const GroupIndex at = this_thread_group(p);
  if (!at.valid) return;
  const int64_t token = at.token;
  const int64_t g = at.group;
  uint8_t* entry = cache + token * mxfp4_entry_bytes_device(p.dim);
  float values[kMxfp4GroupSize];
  load_bf16x16(kv + token * p.dim + g * kMxfp4GroupSize, values);
  uint8_t packed[kMxfp4GroupSize / 2];
  quantize_mxfp4_group(values, packed, entry + p.dim / 2 + g);
  store_bytes8(entry + g * (kMxfp4GroupSize / 2), packed);
}

__global__ void dequantize_mxfp4_kv_kernel(const uint8_t* __restrict__ cache, uint16_t* __restrict__ kv,
                                           Mxfp4KvParams p) {
  const GroupIndex at = this_thread_group(p);
  if (!at.valid) return;
  const int64_t token = at.token;
  const int64_t g = at.group;
  const uint8_t* entry = cache + token * mxfp4_entry_bytes_device(p.dim);
  uint8_t packed[kMxfp4GroupSize / 2];
  load_bytes8(entry + g * (kMxfp4GroupSize / 2), packed);
  float values[kMxfp4GroupSize];
  dequantize_mxfp4_group(packed, entry[p.dim / 2 + g], values);
  store_bf16x16(kv + token * p.dim + g * kMxfp4GroupSize, values);
}

unsigned grid_for(const Mxfp4KvParams& p) {
  const int64_t groups = p.tokens * (p.dim / kMxfp4GroupSize);
  return static_cast<unsigned>((groups + kThreadsPerBlock - 1) / kThreadsPerBlock);
}

// The wide accesses need 16-byte-aligned rows of values and 8-byte-aligned
// packed values: an entry of dim/2 + dim/16 bytes is a multiple of 8 when dim
// is a multiple of 128 (V4.1: 512 dims, 288 bytes).
Mxfp4KvParams checked(int64_t tokens, int64_t dim, const uint16_t* kv, const uint8_t* cache) {
  if (tokens <= 0 || dim <= 0 || dim % 128 != 0) {
    throw std::invalid_argument("mxfp4 kv kernel: dim must be a positive multiple of 128");
  }
  if (!aligned_to(kv, 16) || !aligned_to(cache, 8)) {
    throw std::invalid_argument("mxfp4 kv kernel: values must be 16-byte and entries 8-byte aligned");
  }
  return {tokens, dim};
}

}  // namespace

void launch_quantize_mxfp4_kv(const uint16_t* kv, uint8_t* cache, int64_t tokens, int64_t dim) {
  const Mxfp4KvParams p = checked(tokens, dim, kv, cache);
  quantize_mxfp4_kv_kernel<<<grid_for(p), kThreadsPerBlock>>>(kv, cache, p);
}

void launch_dequantize_mxfp4_kv(const uint8_t* cache, uint16_t* kv, int64_t tokens, int64_t dim) {
  const Mxfp4KvParams p = checked(tokens, dim, kv, cache);
  dequantize_mxfp4_kv_kernel<<<grid_for(p), kThreadsPerBlock>>>(cache, kv, p);
}

std::vector<uint8_t> quantize_mxfp4_kv_cuda(const std::vector<uint16_t>& kv, int64_t tokens, int64_t dim) {
  const std::size_t cache_bytes = static_cast<std::size_t>(tokens * mxfp4_entry_bytes(dim));
  const DeviceBuffer<uint16_t> d_kv(kv);
  const DeviceBuffer<uint8_t> d_cache(cache_bytes);
  launch_quantize_mxfp4_kv(d_kv.get(), d_cache.get(), tokens, dim);
  CUDA_CHECK(cudaGetLastError());
  return d_cache.download(cache_bytes);
}

std::vector<uint16_t> dequantize_mxfp4_kv_cuda(const std::vector<uint8_t>& cache, int64_t tokens,
                                               int64_t dim) {
  const std::size_t values = static_cast<std::size_t>(tokens * dim);
  const DeviceBuffer<uint8_t> d_cache(cache);
  const DeviceBuffer<uint16_t> d_kv(values);
  launch_dequantize_mxfp4_kv(d_cache.get(), d_kv.get(), tokens, dim);
  CUDA_CHECK(cudaGetLastError());
  return d_kv.download(values);
}

}  // namespace v41sim::kernels

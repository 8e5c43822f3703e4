// MXFP4 KV cache write (quantize) and read (dequantize) for V4.1's compressed
// main KV: one thread per 16-value scale group, so a 512-dim entry is 32
// threads (one warp) and a CTA of 256 threads covers 8 tokens.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/common/cuda_check.h"
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

__global__ void quantize_mxfp4_kv_kernel(const float* __restrict__ kv, uint8_t* __restrict__ cache,
                                         Mxfp4KvParams p) {
  const GroupIndex at = this_thread_group(p);
  if (!at.valid) return;
  const int64_t token = at.token;
  const int64_t g = at.group;
  uint8_t* entry = cache + token * mxfp4_entry_bytes_device(p.dim);
  quantize_mxfp4_group(kv + token * p.dim + g * kMxfp4GroupSize, entry + g * (kMxfp4GroupSize / 2),
                       entry + p.dim / 2 + g);
}

__global__ void dequantize_mxfp4_kv_kernel(const uint8_t* __restrict__ cache, float* __restrict__ kv,
                                           Mxfp4KvParams p) {
  const GroupIndex at = this_thread_group(p);
  if (!at.valid) return;
  const int64_t token = at.token;
  const int64_t g = at.group;
  const uint8_t* entry = cache + token * mxfp4_entry_bytes_device(p.dim);
  dequantize_mxfp4_group(entry + g * (kMxfp4GroupSize / 2), entry[p.dim / 2 + g],
                         kv + token * p.dim + g * kMxfp4GroupSize);
}

unsigned grid_for(const Mxfp4KvParams& p) {
  const int64_t groups = p.tokens * (p.dim / kMxfp4GroupSize);
  return static_cast<unsigned>((groups + kThreadsPerBlock - 1) / kThreadsPerBlock);
}

Mxfp4KvParams checked(int64_t tokens, int64_t dim) {
  if (tokens <= 0 || dim <= 0 || dim % kMxfp4GroupSize != 0) {
    throw std::invalid_argument("mxfp4 kv kernel: dim must be a positive multiple of 16");
  }
  return {tokens, dim};
}

// Device memory that frees itself.
template <typename T>
struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t count) { CUDA_CHECK(cudaMalloc(&ptr, count * sizeof(T))); }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* ptr = nullptr;
};

}  // namespace

void launch_quantize_mxfp4_kv(const float* kv, uint8_t* cache, int64_t tokens, int64_t dim) {
  const Mxfp4KvParams p = checked(tokens, dim);
  quantize_mxfp4_kv_kernel<<<grid_for(p), kThreadsPerBlock>>>(kv, cache, p);
}

void launch_dequantize_mxfp4_kv(const uint8_t* cache, float* kv, int64_t tokens, int64_t dim) {
  const Mxfp4KvParams p = checked(tokens, dim);
  dequantize_mxfp4_kv_kernel<<<grid_for(p), kThreadsPerBlock>>>(cache, kv, p);
}

bool cuda_device_available(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    if (why != nullptr) *why = status != cudaSuccess ? cudaGetErrorString(status) : "no CUDA device";
    return false;
  }
  return true;
}

std::vector<uint8_t> quantize_mxfp4_kv_cuda(const std::vector<float>& kv, int64_t tokens, int64_t dim) {
  const Mxfp4KvParams p = checked(tokens, dim);
  const std::size_t cache_bytes = static_cast<std::size_t>(tokens * mxfp4_entry_bytes(dim));
  DeviceBuffer<float> d_kv(kv.size());
  DeviceBuffer<uint8_t> d_cache(cache_bytes);
  CUDA_CHECK(cudaMemcpy(d_kv.ptr, kv.data(), kv.size() * sizeof(float), cudaMemcpyHostToDevice));
  quantize_mxfp4_kv_kernel<<<grid_for(p), kThreadsPerBlock>>>(d_kv.ptr, d_cache.ptr, p);
  CUDA_CHECK(cudaGetLastError());
  std::vector<uint8_t> cache(cache_bytes);
  CUDA_CHECK(cudaMemcpy(cache.data(), d_cache.ptr, cache_bytes, cudaMemcpyDeviceToHost));
  return cache;
}

std::vector<float> dequantize_mxfp4_kv_cuda(const std::vector<uint8_t>& cache, int64_t tokens, int64_t dim) {
  const Mxfp4KvParams p = checked(tokens, dim);
  const std::size_t values = static_cast<std::size_t>(tokens * dim);
  DeviceBuffer<uint8_t> d_cache(cache.size());
  DeviceBuffer<float> d_kv(values);
  CUDA_CHECK(cudaMemcpy(d_cache.ptr, cache.data(), cache.size(), cudaMemcpyHostToDevice));
  dequantize_mxfp4_kv_kernel<<<grid_for(p), kThreadsPerBlock>>>(d_cache.ptr, d_kv.ptr, p);
  CUDA_CHECK(cudaGetLastError());
  std::vector<float> kv(values);
  CUDA_CHECK(cudaMemcpy(kv.data(), d_kv.ptr, values * sizeof(float), cudaMemcpyDeviceToHost));
  return kv;
}

}  // namespace v41sim::kernels

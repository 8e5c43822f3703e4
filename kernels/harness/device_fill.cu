// Device-side generators of the harness's random inputs (device_fill.h).
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/common/mma_fragments.h"
#include "kernels/harness/device_fill.h"
#include "kernels/indexer/index_key_block.h"

namespace v41sim::kernels {
namespace {

__device__ uint64_t mix64(uint64_t x) {  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1): a sum of two such is close enough to the activations'
// spread for timing, and the quantizers' scales adapt to any range.
__device__ float uniform_value(uint64_t seed, int64_t i) {
  return static_cast<float>(mix64(seed ^ static_cast<uint64_t>(i)) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void fill_uniform_kernel(float* out, int64_t count, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = uniform_value(seed, i);
  }
}

// Any byte is a valid pair of E2M1 codes; E8M0 scales stay near 1 (2^-3..2^3).
__global__ void fill_index_keys_kernel(uint8_t* keys, int64_t count, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count * kIndexKeyBytes;
       i += stride) {
    const uint64_t r = mix64(seed ^ static_cast<uint64_t>(i));
    keys[i] =
        (i % kIndexKeyBytes) < kIndexDim / 2 ? static_cast<uint8_t>(r) : static_cast<uint8_t>(124 + r % 7);
  }
}

// FP8 E4M3 bytes of magnitude 2^-4..2^3 with either sign (never NaN).
__global__ void fill_e4m3_kernel(uint8_t* out, int64_t count, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const uint64_t r = mix64(seed ^ static_cast<uint64_t>(i));
    const unsigned exponent = 3 + static_cast<unsigned>(r % 8);  // biased: 2^-4 .. 2^3
    out[i] = static_cast<uint8_t>(((r >> 8) & 0x80u) | (exponent << 3) | ((r >> 16) & 0x7u));
  }
}

// Random bytes (any byte is a valid pair of E2M1 codes), or, with `scales`,
// E8M0 codes of weight-sized scales (device_fill.h).
__global__ void fill_fp4_kernel(uint8_t* out, int64_t count, uint64_t seed, bool scales) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const uint64_t r = mix64(seed ^ static_cast<uint64_t>(i));
    constexpr uint64_t kScaleCodes = kWeightScaleCodeMax - kWeightScaleCodeMin + 1;
    out[i] = scales ? static_cast<uint8_t>(kWeightScaleCodeMin + r % kScaleCodes) : static_cast<uint8_t>(r);
  }
}

// BF16 bits of uniform values in [-1, 1).
__global__ void fill_bf16_kernel(uint16_t* out, int64_t count, uint64_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    out[i] = mma::to_bf16(uniform_value(seed, i));
  }
}

unsigned fill_grid(int64_t count) {
  const int64_t blocks = (count + 255) / 256;
  return static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
}

}  // namespace

void fill_uniform(float* out, int64_t count, uint64_t seed) {
  fill_uniform_kernel<<<fill_grid(count), 256>>>(out, count, seed);
}
void fill_index_keys(uint8_t* keys, int64_t count, uint64_t seed) {
  fill_index_keys_kernel<<<fill_grid(count * kIndexKeyBytes), 256>>>(keys, count, seed);
}
void fill_e4m3(uint8_t* out, int64_t count, uint64_t seed) {
  fill_e4m3_kernel<<<fill_grid(count), 256>>>(out, count, seed);
}
void fill_mxfp4_weights(uint8_t* packed, uint8_t* scales, int64_t values, uint64_t seed) {
  fill_fp4_kernel<<<fill_grid(values / 2), 256>>>(packed, values / 2, seed, false);
  fill_fp4_kernel<<<fill_grid(values / 32), 256>>>(scales, values / 32, seed + 1, true);
}
void fill_bf16(uint16_t* out, int64_t count, uint64_t seed) {
  fill_bf16_kernel<<<fill_grid(count), 256>>>(out, count, seed);
}

}  // namespace v41sim::kernels

// Wide loads and stores for kernels where one thread owns a 16-value scale
// group. Sixteen scalar loads per thread, the lanes a group apart (32 bytes
// for BF16, 64 for floats), make each warp instruction touch 8 or 16 cache
// lines for 64 or 128 useful bytes, so the L1 tag lookups, not HBM, would set
// the rate; 16-byte loads (two for 16 BF16 values, four for 16 floats) move
// the same bytes in an eighth or a quarter of the instructions. Callers
// guarantee the alignment (each launcher checks it).
#pragma once

#include <cstdint>

#include "kernels/common/fp_codec.h"

namespace v41sim::kernels {

// 16 floats from a 16-byte-aligned address.
__device__ inline void load_floats16(const float* __restrict__ p, float (&v)[16]) {
  const auto* q = reinterpret_cast<const float4*>(p);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float4 f = q[j];
    v[4 * j] = f.x;
    v[4 * j + 1] = f.y;
    v[4 * j + 2] = f.z;
    v[4 * j + 3] = f.w;
  }
}

// A 16-byte vector of 8 BF16 values, widened to float (exact), and 8 values
// rounded to BF16 (nearest even) into one; the lower value in the low bits.
__device__ inline void unpack_bf16x8(uint4 v, float (&f)[8]) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = bf16_value(static_cast<uint16_t>(words[i] & 0xFFFFu));
    f[2 * i + 1] = bf16_value(static_cast<uint16_t>(words[i] >> 16));
  }
}

__device__ inline uint4 pack_bf16x8(const float (&f)[8]) {
  uint32_t words[4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
    words[i] =
        static_cast<uint32_t>(bf16_bits(f[2 * i])) | (static_cast<uint32_t>(bf16_bits(f[2 * i + 1])) << 16);
  return make_uint4(words[0], words[1], words[2], words[3]);
}

// 16 BF16 values, widened to float, from a 16-byte-aligned address: two 16-byte loads.
__device__ inline void load_bf16x16(const uint16_t* __restrict__ p, float (&v)[16]) {
  const auto* q = reinterpret_cast<const uint4*>(p);
  float half[2][8];
  unpack_bf16x8(q[0], half[0]);
  unpack_bf16x8(q[1], half[1]);
#pragma unroll
  for (int i = 0; i < 16; ++i) v[i] = half[i / 8][i % 8];
}

// 16 values as BF16 to a 16-byte-aligned address: two 16-byte stores.
__device__ inline void store_bf16x16(uint16_t* __restrict__ p, const float (&v)[16]) {
  auto* q = reinterpret_cast<uint4*>(p);
  float half[2][8];
#pragma unroll
  for (int i = 0; i < 16; ++i) half[i / 8][i % 8] = v[i];
  q[0] = pack_bf16x8(half[0]);
  q[1] = pack_bf16x8(half[1]);
}

// 8 bytes (byte i at address p + i) from an 8-byte-aligned address.
__device__ inline void load_bytes8(const uint8_t* __restrict__ p, uint8_t (&b)[8]) {
  const uint2 w = *reinterpret_cast<const uint2*>(p);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    b[i] = static_cast<uint8_t>(w.x >> (8 * i));
    b[4 + i] = static_cast<uint8_t>(w.y >> (8 * i));
  }
}

// 8 bytes to an 8-byte-aligned address, as one store.
__device__ inline void store_bytes8(uint8_t* __restrict__ p, const uint8_t (&b)[8]) {
  uint2 w{0u, 0u};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    w.x |= static_cast<uint32_t>(b[i]) << (8 * i);
    w.y |= static_cast<uint32_t>(b[4 + i]) << (8 * i);
  }
  *reinterpret_cast<uint2*>(p) = w;
}

// Whether p sits on a multiple of `bytes`.
inline bool aligned_to(const void* p, std::uintptr_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

}  // namespace v41sim::kernels

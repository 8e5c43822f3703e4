// V41_HD marks functions shared by the CPU references and the CUDA kernels,
// so both compute the same rounding from one definition.
#pragma once

#if defined(__CUDACC__)
#define V41_HD __host__ __device__ inline
#else
#define V41_HD inline
#endif

// A loop over a thread's registers unrolled on the device, so its arrays stay
// in registers (an array indexed at run time lives in local memory).
#if defined(__CUDACC__)
#define V41_UNROLL _Pragma("unroll")
#else
#define V41_UNROLL
#endif

#include <cmath>
#include <cstdint>

namespace v41sim::kernels {

// A float's bits and back, on host and device alike.
V41_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t bits = 0;
  __builtin_memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

V41_HD float bits_float(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float x = 0;
  __builtin_memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

// e^x by the special-function unit on the device (__expf, as the kernels'
// softmax takes it), by the library on the host.
V41_HD float fast_exp(float x) {
#if defined(__CUDA_ARCH__)
  return __expf(x);
#else
  return std::exp(x);
#endif
}

// A warp's lane mask (a ballot's, a match's) read on host and device alike:
// how many lanes it holds, and the lowest lane it holds (the mask not empty).
V41_HD int bit_count(uint32_t mask) {
#if defined(__CUDA_ARCH__)
  return __popc(mask);
#else
  return __builtin_popcount(mask);
#endif
}

V41_HD int lowest_bit(uint32_t mask) {
#if defined(__CUDA_ARCH__)
  return __ffs(static_cast<int>(mask)) - 1;
#else
  return __builtin_ctz(mask);
#endif
}

// Four bytes as a little-endian word (4-byte aligned on the device).
V41_HD uint32_t load_word(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(p);
#else
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
#endif
}

// Eight bytes as two little-endian words, low first (8-byte aligned on the
// device: one 8-byte access, where two 4-byte ones would conflict in shared
// memory banks across a warp reading consecutive 8-byte pieces).
struct WordPair {
  uint32_t low, high;
};
V41_HD WordPair load_word_pair(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const uint2 v = *reinterpret_cast<const uint2*>(p);
  return {v.x, v.y};
#else
  return {load_word(p), load_word(p + 4)};
#endif
}

}  // namespace v41sim::kernels

// The FP32 ceiling: independent FMA chains per thread, enough of them to hide
// the FMA latency, on every SM. The harness reports the FP32-unit kernels
// (the indexer and sparse-decode baselines) against this measured rate.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace v41sim::kernels {

inline constexpr int kFmaChains = 8;
inline constexpr int kFmaIterations = 4096;
inline constexpr int kFmaThreads = 256;

__global__ void fma_chains_kernel(float* sink, float seed) {
  float a[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) a[c] = seed + static_cast<float>(threadIdx.x + c) * 1e-6f;
  for (int it = 0; it < kFmaIterations; ++it) {
#pragma unroll
    for (int c = 0; c < kFmaChains; ++c) a[c] = fmaf(a[c], 0.999999f, 1e-7f);
  }
  float sum = 0.0f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) sum += a[c];
  if (sum == -1.0f) *sink = sum;  // never true; keeps the chains live
}

inline int fma_blocks(int sms) { return sms * 8; }

inline double fma_chain_flops(int sms) {
  return 2.0 * kFmaChains * kFmaIterations * static_cast<double>(fma_blocks(sms)) * kFmaThreads;
}

inline void launch_fma_chains(float* sink, int sms) {
  fma_chains_kernel<<<fma_blocks(sms), kFmaThreads>>>(sink, 1.0f);
}

}  // namespace v41sim::kernels

// mHC's per-site parameters and the per-token coefficient function, as
// DeepSeek-V4's released inference code computes them (model.py's hc_pre and
// hc_split_sinkhorn; Transformers' and vLLM's DeepseekV4HyperConnection agree):
//   mixes = (x . fn^T) * rsqrt(mean(x^2) + norm_eps)   x: a token's 4 streams flattened
//   pre   = sigmoid(mixes[0:4] * scale[0] + base[0:4]) + eps
//   post  = 2 sigmoid(mixes[4:8] * scale[1] + base[4:8])
//   comb  = (mixes[8:24] * scale[2] + base[8:24]) as 4 x 4 (source x destination),
//           softmax over each row, + eps, columns normalised, then 19 more
//           rounds of rows and columns (the last step normalises columns)
// The block's input is sum_s pre[s] X_s; after the block, stream d becomes
// post[d] y + sum_s comb[s][d] X_s. Shared by the CPU references and the CUDA
// kernels (V41_HD), so both compute the same rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/host_device.h"

namespace v41sim::kernels {

inline constexpr int kStreams = 4;
inline constexpr int kMixes = (2 + kStreams) * kStreams;  // pre, post, comb
inline constexpr int kCoefficients = kMixes;              // pre[4], post[4], comb[16] a token
inline constexpr int kPreOffset = 0;
inline constexpr int kPostOffset = kStreams;
inline constexpr int kCombOffset = 2 * kStreams;
inline constexpr int kSinkhornIters = 20;
inline constexpr float kMhcEps = 1e-6f;      // hc_eps
inline constexpr float kMhcNormEps = 1e-6f;  // rms_norm_eps
// What the projection leaves of a token for the coefficients: its 24 dot
// products with fn's rows, then the sum of squares of its streams.
inline constexpr int kProjectionSums = kMixes + 1;

// A site's small parameters, passed to the kernels by value.
struct MhcScales {
  float scale[3];
  float base[kMixes];
};

// A site's parameters. fn is kMixes rows of kStreams x hidden values; the
// checkpoint stores it in FP32, our kernels read it rounded to BF16 (the
// tensor cores' operand; engines run it in TF32, vLLM's tf32_hc_prenorm_gemm).
struct MhcWeights {
  std::vector<uint16_t> fn;
  MhcScales scales{};
};

V41_HD float mhc_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// The arithmetic both forms below share, one expression each, so they
// compute the same roundings: the RMS scale, a pre or post weight and a
// comb logit from its mix, and a row's or column's maximum and sum taken in
// index order.
V41_HD float mhc_inv_rms(const float* sums, float values) {
  return 1.0f / sqrtf(sums[kMixes] / values + kMhcNormEps);
}
V41_HD float mhc_pre_weight(float mix, float inv_rms, float scale, float base) {
  return mhc_sigmoid(mix * inv_rms * scale + base) + kMhcEps;
}
V41_HD float mhc_post_weight(float mix, float inv_rms, float scale, float base) {
  return 2.0f * mhc_sigmoid(mix * inv_rms * scale + base);
}
V41_HD float mhc_comb_logit(float mix, float inv_rms, float scale, float base) {
  return mix * inv_rms * scale + base;
}
V41_HD float max_in_order(const float (&v)[kStreams]) {
  float mx = v[0];
  V41_UNROLL
  for (int i = 1; i < kStreams; ++i) mx = fmaxf(mx, v[i]);
  return mx;
}
V41_HD float sum_in_order(const float (&v)[kStreams]) {
  float sum = 0.0f;
  V41_UNROLL
  for (int i = 0; i < kStreams; ++i) sum += v[i];
  return sum;
}

// The comb matrix (row-major, source x destination) made doubly stochastic in place.
V41_HD void mhc_sinkhorn(float* comb) {
  const auto row_of = [&](int s, float(&v)[kStreams]) {
    for (int d = 0; d < kStreams; ++d) v[d] = comb[s * kStreams + d];
  };
  const auto column_of = [&](int d, float(&v)[kStreams]) {
    for (int s = 0; s < kStreams; ++s) v[s] = comb[s * kStreams + d];
  };
  float v[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    row_of(s, v);
    const float mx = max_in_order(v);
    for (int d = 0; d < kStreams; ++d) v[d] = expf(v[d] - mx);
    const float sum = sum_in_order(v);
    for (int d = 0; d < kStreams; ++d) comb[s * kStreams + d] = v[d] / sum + kMhcEps;
  }
  for (int it = 0; it < kSinkhornIters; ++it) {
    if (it > 0) {  // the first round normalises columns only
      for (int s = 0; s < kStreams; ++s) {
        row_of(s, v);
        const float row = sum_in_order(v);
        for (int d = 0; d < kStreams; ++d) comb[s * kStreams + d] /= row + kMhcEps;
      }
    }
    for (int d = 0; d < kStreams; ++d) {
      column_of(d, v);
      const float col = sum_in_order(v);
      for (int s = 0; s < kStreams; ++s) comb[s * kStreams + d] /= col + kMhcEps;
    }
  }
}

// A token's coefficients from its projection sums (kProjectionSums: the dot
// products with fn's rows, then the sum of squares over its `values` stream values).
V41_HD void mhc_coefficients_of(const float* sums, float values, const MhcScales& p, float* c) {
  const float inv_rms = mhc_inv_rms(sums, values);
  for (int s = 0; s < kStreams; ++s) {
    c[kPreOffset + s] = mhc_pre_weight(sums[kPreOffset + s], inv_rms, p.scale[0], p.base[kPreOffset + s]);
    c[kPostOffset + s] = mhc_post_weight(sums[kPostOffset + s], inv_rms, p.scale[1], p.base[kPostOffset + s]);
  }
  for (int j = kCombOffset; j < kMixes; ++j) c[j] = mhc_comb_logit(sums[j], inv_rms, p.scale[2], p.base[j]);
  mhc_sinkhorn(c + kCombOffset);
}

// Stream d after the block: post[d] y + sum_s comb[s][d] x[s].
V41_HD float mhc_merged(const float* c, int d, float y, const float (&x)[kStreams]) {
  float acc = c[kPostOffset + d] * y;
  for (int s = 0; s < kStreams; ++s) acc += c[kCombOffset + s * kStreams + d] * x[s];
  return acc;
}

// The block's input: sum_s pre[s] x[s].
V41_HD float mhc_block_input(const float* c, const float (&x)[kStreams]) {
  float acc = 0.0f;
  for (int s = 0; s < kStreams; ++s) acc += c[kPreOffset + s] * x[s];
  return acc;
}

}  // namespace v41sim::kernels

// mHC residual mixing over 4 streams, in the two forms the V4.1 report
// contrasts: three kernels per block (coefficients; pre-mix; post-merge) and
// the single pass that merges block i's output and prepares block i+1's input
// in one read and one write of the streams.
//
// The coefficient function here is a stand-in with the real one's data
// movement (a reduction over every stream, then a small s x s Sinkhorn
// normalisation): stream features f_s = mean over H of X_s; pre-mix weights
// a = softmax(f); post-merge B = Sinkhorn(exp(f_s - f_t)); output weights
// b = softmax(-f). The learned projection of the released model is not
// reproduced; the bytes and passes, which are what the kernels measure, are.
//   X: tokens x 4 x H streams; y: tokens x H block output; all float.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/host_device.h"

namespace v41sim::kernels {

inline constexpr int kStreams = 4;
inline constexpr int kSinkhornIters = 20;
inline constexpr int kCoefficients = kStreams + kStreams * kStreams + kStreams;  // a, B, b

// Coefficients from the 4 stream means: a[4], B[16] (row-major), b[4].
V41_HD void mhc_coefficients(const float* features, float* c) {
  float mx = features[0], mn = features[0];
  for (int s = 1; s < kStreams; ++s) {
    mx = fmaxf(mx, features[s]);
    mn = fminf(mn, features[s]);
  }
  float sa = 0, sb = 0;
  for (int s = 0; s < kStreams; ++s) {
    c[s] = expf(features[s] - mx);
    c[kStreams + kStreams * kStreams + s] = expf(mn - features[s]);
    sa += c[s];
    sb += c[kStreams + kStreams * kStreams + s];
  }
  for (int s = 0; s < kStreams; ++s) {
    c[s] /= sa;
    c[kStreams + kStreams * kStreams + s] /= sb;
  }
  float* B = c + kStreams;
  for (int s = 0; s < kStreams; ++s) {
    for (int t = 0; t < kStreams; ++t) B[s * kStreams + t] = expf(fminf(features[s] - features[t], 20.0f));
  }
  for (int it = 0; it < kSinkhornIters; ++it) {  // rows, then columns, to 1
    for (int s = 0; s < kStreams; ++s) {
      float r = 0;
      for (int t = 0; t < kStreams; ++t) r += B[s * kStreams + t];
      for (int t = 0; t < kStreams; ++t) B[s * kStreams + t] /= r;
    }
    for (int t = 0; t < kStreams; ++t) {
      float col = 0;
      for (int s = 0; s < kStreams; ++s) col += B[s * kStreams + t];
      for (int s = 0; s < kStreams; ++s) B[s * kStreams + t] /= col;
    }
  }
}

// CPU references. Three-kernel form:
std::vector<float> mhc_coefficients_reference(const std::vector<float>& X, int64_t tokens, int64_t hidden);
std::vector<float> mhc_pre_mix_reference(const std::vector<float>& X, const std::vector<float>& coeffs,
                                         int64_t tokens, int64_t hidden);
std::vector<float> mhc_post_merge_reference(const std::vector<float>& X, const std::vector<float>& y,
                                            const std::vector<float>& coeffs, int64_t tokens, int64_t hidden);
// Single pass: post-merge with `coeffs`, then next block's coefficients and input.
struct MhcFusedResult {
  std::vector<float> streams;      // X'
  std::vector<float> next_input;   // x_in of the next block
  std::vector<float> next_coeffs;  // coefficients of the next block
};
MhcFusedResult mhc_fused_reference(const std::vector<float>& X, const std::vector<float>& y,
                                   const std::vector<float>& coeffs, int64_t tokens, int64_t hidden);

// CUDA launchers (device pointers) and host wrappers.
void launch_mhc_coefficients(const float* X, float* coeffs, int64_t tokens, int64_t hidden);
void launch_mhc_pre_mix(const float* X, const float* coeffs, float* x_in, int64_t tokens, int64_t hidden);
void launch_mhc_post_merge(const float* X, const float* y, const float* coeffs, float* X_out, int64_t tokens,
                           int64_t hidden);
void launch_mhc_fused(const float* X, const float* y, const float* coeffs, float* X_out, float* next_input,
                      float* next_coeffs, int64_t tokens, int64_t hidden);
MhcFusedResult mhc_fused_cuda(const std::vector<float>& X, const std::vector<float>& y,
                              const std::vector<float>& coeffs, int64_t tokens, int64_t hidden);

}  // namespace v41sim::kernels

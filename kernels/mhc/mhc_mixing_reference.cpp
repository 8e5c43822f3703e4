#include <cmath>
#include <stdexcept>

#include "kernels/common/fp_codec.h"
#include "kernels/common/mma_fragments.h"
#include "kernels/common/random_values.h"
#include "kernels/mhc/mhc_mixing.h"

namespace v41sim::kernels {
namespace {

void check(const std::vector<uint16_t>& X, int64_t tokens, int64_t hidden) {
  if (hidden <= 0 || hidden % 8 != 0)
    throw std::invalid_argument("mhc: hidden must be a positive multiple of 8");
  if (static_cast<int64_t>(X.size()) != tokens * kStreams * hidden)
    throw std::invalid_argument("mhc: bad shape");
}

// Token t's value i of stream s.
float stream_value(const std::vector<uint16_t>& X, int64_t t, int s, int64_t i, int64_t hidden) {
  return mma::from_bf16(X[static_cast<std::size_t>((t * kStreams + s) * hidden + i)]);
}

}  // namespace

MhcWeights random_mhc_weights(int64_t hidden, uint32_t seed) {
  const int64_t k = kStreams * hidden;
  MhcWeights w;
  w.fn = to_bf16_values(
      normal_values(static_cast<std::size_t>(kMixes * k), seed, 1.0f / std::sqrt(static_cast<float>(k))));
  const auto scales = normal_values(3, seed + 1);
  const auto bases = normal_values(kMixes, seed + 2, 0.5f);
  for (int i = 0; i < 3; ++i) w.scales.scale[i] = 0.5f + std::fabs(scales[static_cast<std::size_t>(i)]);
  for (int j = 0; j < kMixes; ++j) w.scales.base[j] = bases[static_cast<std::size_t>(j)];
  return w;
}

std::vector<float> mhc_coefficients_reference(const std::vector<uint16_t>& X, const MhcWeights& w,
                                              int64_t tokens, int64_t hidden) {
  check(X, tokens, hidden);
  const int64_t k = kStreams * hidden;
  if (static_cast<int64_t>(w.fn.size()) != kMixes * k)
    throw std::invalid_argument("mhc: fn has the wrong shape");
  std::vector<float> c(static_cast<std::size_t>(tokens * kCoefficients));
  for (int64_t t = 0; t < tokens; ++t) {
    const uint16_t* x = X.data() + t * k;
    double dots[kMixes] = {}, squares = 0;
    for (int64_t i = 0; i < k; ++i) {
      const double v = mma::from_bf16(x[i]);
      squares += v * v;
      for (int j = 0; j < kMixes; ++j)
        dots[j] += v * mma::from_bf16(w.fn[static_cast<std::size_t>(j * k + i)]);
    }
    float sums[kProjectionSums];
    for (int j = 0; j < kMixes; ++j) sums[j] = static_cast<float>(dots[j]);
    sums[kMixes] = static_cast<float>(squares);
    mhc_coefficients_of(sums, static_cast<float>(k), w.scales, c.data() + t * kCoefficients);
  }
  return c;
}

std::vector<uint16_t> mhc_pre_mix_reference(const std::vector<uint16_t>& X, const std::vector<float>& coeffs,
                                            int64_t tokens, int64_t hidden) {
  check(X, tokens, hidden);
  std::vector<uint16_t> x_in(static_cast<std::size_t>(tokens * hidden));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* c = coeffs.data() + t * kCoefficients;
    for (int64_t i = 0; i < hidden; ++i) {
      float x[kStreams];
      for (int s = 0; s < kStreams; ++s) x[s] = stream_value(X, t, s, i, hidden);
      x_in[static_cast<std::size_t>(t * hidden + i)] = bf16_bits(mhc_block_input(c, x));
    }
  }
  return x_in;
}

std::vector<uint16_t> mhc_post_merge_reference(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                               const std::vector<float>& coeffs, int64_t tokens,
                                               int64_t hidden) {
  check(X, tokens, hidden);
  std::vector<uint16_t> out(X.size());
  for (int64_t t = 0; t < tokens; ++t) {
    const float* c = coeffs.data() + t * kCoefficients;
    for (int64_t i = 0; i < hidden; ++i) {
      float x[kStreams];
      for (int s = 0; s < kStreams; ++s) x[s] = stream_value(X, t, s, i, hidden);
      const float yi = mma::from_bf16(y[static_cast<std::size_t>(t * hidden + i)]);
      for (int d = 0; d < kStreams; ++d)
        out[static_cast<std::size_t>((t * kStreams + d) * hidden + i)] = bf16_bits(mhc_merged(c, d, yi, x));
    }
  }
  return out;
}

MhcStepResult mhc_step_reference(const std::vector<uint16_t>& X, const std::vector<uint16_t>& y,
                                 const std::vector<float>& coeffs, const MhcWeights& next, int64_t tokens,
                                 int64_t hidden) {
  MhcStepResult r;
  r.streams = mhc_post_merge_reference(X, y, coeffs, tokens, hidden);
  r.next_coeffs = mhc_coefficients_reference(r.streams, next, tokens, hidden);
  r.next_input = mhc_pre_mix_reference(r.streams, r.next_coeffs, tokens, hidden);
  return r;
}

}  // namespace v41sim::kernels

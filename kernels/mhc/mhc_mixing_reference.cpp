#include <stdexcept>

#include "kernels/mhc/mhc_mixing.h"

namespace v41sim::kernels {
namespace {

void check(const std::vector<float>& X, int64_t tokens, int64_t hidden) {
  if (static_cast<int64_t>(X.size()) != tokens * kStreams * hidden)
    throw std::invalid_argument("mhc: bad shape");
}

void features_of(const float* x, int64_t hidden, float* f) {
  for (int s = 0; s < kStreams; ++s) {
    double sum = 0;
    for (int64_t i = 0; i < hidden; ++i) sum += x[s * hidden + i];
    f[s] = static_cast<float>(sum / static_cast<double>(hidden));
  }
}

}  // namespace

std::vector<float> mhc_coefficients_reference(const std::vector<float>& X, int64_t tokens, int64_t hidden) {
  check(X, tokens, hidden);
  std::vector<float> c(static_cast<std::size_t>(tokens * kCoefficients));
  float f[kStreams];
  for (int64_t t = 0; t < tokens; ++t) {
    features_of(X.data() + t * kStreams * hidden, hidden, f);
    mhc_coefficients(f, c.data() + t * kCoefficients);
  }
  return c;
}

std::vector<float> mhc_pre_mix_reference(const std::vector<float>& X, const std::vector<float>& c,
                                         int64_t tokens, int64_t hidden) {
  check(X, tokens, hidden);
  std::vector<float> x_in(static_cast<std::size_t>(tokens * hidden));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < hidden; ++i) {
      float acc = 0;
      for (int s = 0; s < kStreams; ++s) acc += c[t * kCoefficients + s] * X[(t * kStreams + s) * hidden + i];
      x_in[t * hidden + i] = acc;
    }
  }
  return x_in;
}

std::vector<float> mhc_post_merge_reference(const std::vector<float>& X, const std::vector<float>& y,
                                            const std::vector<float>& c, int64_t tokens, int64_t hidden) {
  check(X, tokens, hidden);
  std::vector<float> out(X.size());
  for (int64_t t = 0; t < tokens; ++t) {
    const float* B = c.data() + t * kCoefficients + kStreams;
    const float* b = B + kStreams * kStreams;
    for (int64_t i = 0; i < hidden; ++i) {
      for (int s = 0; s < kStreams; ++s) {
        float acc = b[s] * y[t * hidden + i];
        for (int u = 0; u < kStreams; ++u) acc += B[s * kStreams + u] * X[(t * kStreams + u) * hidden + i];
        out[(t * kStreams + s) * hidden + i] = acc;
      }
    }
  }
  return out;
}

MhcFusedResult mhc_fused_reference(const std::vector<float>& X, const std::vector<float>& y,
                                   const std::vector<float>& c, int64_t tokens, int64_t hidden) {
  MhcFusedResult r;
  r.streams = mhc_post_merge_reference(X, y, c, tokens, hidden);
  r.next_coeffs = mhc_coefficients_reference(r.streams, tokens, hidden);
  r.next_input = mhc_pre_mix_reference(r.streams, r.next_coeffs, tokens, hidden);
  return r;
}

}  // namespace v41sim::kernels

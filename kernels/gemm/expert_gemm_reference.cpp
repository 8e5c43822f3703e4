#include <cmath>
#include <stdexcept>

#include "kernels/common/fp_codec.h"
#include "kernels/common/random_values.h"
#include "kernels/gemm/expert_gemm.h"

namespace v41sim::kernels {

ExpertWeights quantize_expert_weights(const std::vector<float>& values, int64_t n, int64_t k) {
  if (k % kWeightScaleGroup != 0 || static_cast<int64_t>(values.size()) != n * k) {
    throw std::invalid_argument("expert weights: bad shape");
  }
  ExpertWeights w{n, k, std::vector<uint8_t>(static_cast<std::size_t>(n * k / 2)),
                  std::vector<uint8_t>(static_cast<std::size_t>(n * k / kWeightScaleGroup))};
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t g = 0; g < k / kWeightScaleGroup; ++g) {
      float amax = 0;
      for (int i = 0; i < kWeightScaleGroup; ++i)
        amax = std::fmax(amax, std::fabs(values[r * k + g * kWeightScaleGroup + i]));
      const uint8_t scale = encode_e8m0_ceil(amax / 6.0f);
      w.scales[static_cast<std::size_t>(r * (k / kWeightScaleGroup) + g)] = scale;
      for (int i = 0; i < kWeightScaleGroup; i += 2) {
        const int64_t c = g * kWeightScaleGroup + i;
        const float inv = 1.0f / decode_e8m0(scale);
        w.packed[static_cast<std::size_t>((r * k + c) / 2)] = static_cast<uint8_t>(
            encode_e2m1(values[r * k + c] * inv) | (encode_e2m1(values[r * k + c + 1] * inv) << 4));
      }
    }
  }
  return w;
}

float expert_weight_value(const ExpertWeights& w, int64_t row, int64_t col) {
  const uint8_t byte = w.packed[static_cast<std::size_t>((row * w.k + col) / 2)];
  const uint8_t code = (col & 1) ? (byte >> 4) : (byte & 0xF);
  return decode_e2m1(code) *
         decode_e8m0(
             w.scales[static_cast<std::size_t>(row * (w.k / kWeightScaleGroup) + col / kWeightScaleGroup)]);
}

std::vector<float> expert_gemm_reference(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                         const ExpertWeights& w) {
  if (static_cast<int64_t>(a.size()) != m * w.k)
    throw std::invalid_argument("expert gemm: bad activation shape");
  std::vector<float> wf(static_cast<std::size_t>(w.n * w.k));
  for (int64_t r = 0; r < w.n; ++r) {
    for (int64_t c = 0; c < w.k; ++c)
      wf[static_cast<std::size_t>(r * w.k + c)] = expert_weight_value(w, r, c);
  }
  std::vector<float> d(static_cast<std::size_t>(m * w.n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < w.n; ++j) {
      double acc = 0;
      for (int64_t c = 0; c < w.k; ++c) {
        acc += static_cast<double>(decode_e4m3(a[static_cast<std::size_t>(i * w.k + c)])) *
               wf[static_cast<std::size_t>(j * w.k + c)];
      }
      d[static_cast<std::size_t>(i * w.n + j)] = static_cast<float>(acc * a_scale);
    }
  }
  return d;
}

std::vector<float> experts_gemm_reference(const std::vector<uint8_t>& a, float a_scale, int64_t m,
                                          const std::vector<ExpertWeights>& experts) {
  std::vector<float> d;
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const auto rows = static_cast<std::ptrdiff_t>(m * experts[e].k);
    if (static_cast<std::ptrdiff_t>(a.size()) < rows * static_cast<std::ptrdiff_t>(e + 1))
      throw std::invalid_argument("expert gemm: bad activation shape");
    const std::vector<uint8_t> slice(a.begin() + rows * static_cast<std::ptrdiff_t>(e),
                                     a.begin() + rows * static_cast<std::ptrdiff_t>(e + 1));
    const std::vector<float> part = expert_gemm_reference(slice, a_scale, m, experts[e]);
    d.insert(d.end(), part.begin(), part.end());
  }
  return d;
}

std::vector<float> experts_gemm_w4a16_reference(const std::vector<uint16_t>& a, int64_t m,
                                                const std::vector<ExpertWeights>& experts) {
  std::vector<float> d;
  for (std::size_t e = 0; e < experts.size(); ++e) {
    const ExpertWeights& w = experts[e];
    const auto first = static_cast<int64_t>(e) * m * w.k;
    if (static_cast<int64_t>(a.size()) < first + m * w.k)
      throw std::invalid_argument("expert gemm w4a16: bad activation shape");
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < w.n; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < w.k; ++c) {
          acc += static_cast<double>(bf16_value(a[static_cast<std::size_t>(first + i * w.k + c)])) *
                 expert_weight_value(w, j, c);
        }
        d.push_back(static_cast<float>(acc));
      }
    }
  }
  return d;
}

std::vector<ExpertWeights> scaled_expert_weights(
    int64_t experts, int64_t n, int64_t k, uint32_t seed,
    const std::function<int(int64_t, int64_t, int64_t)>& exponent) {
  std::vector<ExpertWeights> out;
  for (int64_t e = 0; e < experts; ++e) {
    std::vector<float> values =
        normal_values(static_cast<std::size_t>(n * k), seed + static_cast<uint32_t>(e));
    for (int64_t i = 0; i < n * k; ++i)
      values[static_cast<std::size_t>(i)] *= std::ldexp(1.0f, exponent(i / k, i % k, e));
    out.push_back(quantize_expert_weights(values, n, k));
  }
  return out;
}

}  // namespace v41sim::kernels
